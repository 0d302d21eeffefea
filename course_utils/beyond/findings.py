"""Notebook 06's predictions, each declared once: one text per outcome its checks reach, the numbers as facts (a
difference or a count below 0 only restates the checks); each prediction is worded in the Markdown above it."""

from course_utils.findings import Template

_MISSED = "{failed}: not as predicted."
_UNDECIDED = "Not decided: {undecided} lies on its bound, or its interval straddles it."
_NODES = ("Node 0 ran rank(s) {node0}, node 1 rank(s) {node1}: the rendezvous, not `--node-rank`, handed out the "
          "ranks, so never write code that assumes node 0 holds rank 0.\n\nThe job took {wall} s, of which the "
          "three phases ran {phases} s: {outside} s went to start-up, rendezvous and shut-down (each rank took "
          "up to {startup} s from its process start to joining the group). Here the ranks ran {backend}.")
NODES = Template("beyond.nodes", ("equal", "below"), held="The two launchers computed what one process computes. "
                 + _NODES, above="The two launchers did NOT compute what one process computes ({failed}). " + _NODES,
                 below=_MISSED, undecided=_UNDECIDED)
FAILURE = Template("beyond.failure", ("equal", "true"), held="The launcher named rank 1, kept its exception line and "
                   "left no process of either node behind.", above=_MISSED, below=_MISSED, failed=_MISSED)
_JAX = ("JAX numbers each process's devices in its own range (ids {device_ids}), and the mesh spans all {devices}. "
        "XLA merged the {leaves} gradients into {allreduces} all-reduce(s) of {operands} operands. On CPUs the "
        "collective runs over gloo's TCP, with {gloo_ranks} gloo ranks (gloo's own log lines: one per device, not per "
        "process); on real hardware over NCCL or a TPU pod's interconnect. Section 6 prices the step.")
JAX = Template("beyond.jax", ("equal", "below", "true"), held="Both processes hold the parameters one device "
               "computes. " + _JAX, above="The processes do NOT hold what one device computes ({failed}). " + _JAX,
               below=_MISSED, failed="{failed}: false. " + _JAX, undecided=_UNDECIDED, untested="Not run: {why}.")
_TF = ("The loop divides the summed loss by the **global** batch, because the strategy *sums* the replicas' "
       "gradients. The job took {wall} s; by the workers' own clocks {import} s went to importing TensorFlow, "
       "{joined} s from process start to a joined strategy (import included), {work} s to training and the "
       "one-worker check, and the other {outside} s to torchrun's own start and shut-down. On a cluster each "
       "machine sets its own `TF_CONFIG`.")
TF = Template("beyond.tf", ("equal", "below"), held="The two workers agreed bit for bit, and with one worker "
              "within float rounding. " + _TF, above="The workers disagree, or differ from one worker ({failed}). "
              + _TF, below=_MISSED, undecided=_UNDECIDED, untested="Not run: {why}.")
_MEMORY = ("The default DDP row is DDP's own report: {buckets} of buckets beside the gradients, which "
           "`gradient_as_bucket_view=True` turns into the gradients themselves. ZeRO-1 shards the Adam state by whole "
           "tensors (ranks: {zero1}); FSDP2 splits every tensor along its first dimension (ranks: {fsdp2}).\n\nNot in "
           "the table: FSDP2 gathers a layer's full weights just before using it; {peak}. Activations are not "
           "sharded at all.")
MEMORY = Template("beyond.memory", ("within", "below"), held="Every kind kept its formula's bytes on its largest "
                  "rank, and the weights agree. " + _MEMORY, above="{failed} came out above the prediction's bound; "
                  "the table shows which part differs. " + _MEMORY, below="{failed} came out below the formula; the "
                  "table shows which part differs. " + _MEMORY, undecided=_UNDECIDED)
ELASTIC = Template("beyond.elastic", ("below", "equal"), held="Rank 1 died at step {crash_at}, torchrun restarted both "
                   "ranks, they resumed at step {resumed} and ended with the weights of an uninterrupted run. The job "
                   "took {seconds} s; by the ranks' own clocks, joining the group took {startup0} s before "
                   "the crash and {startup1} s after it, training {training} s in all, and the other "
                   "{outside} s went to torchrun noticing the failure and restarting the group.",
                   above="The resumed run ended away from an uninterrupted one, or lost more steps than predicted: "
                   "{failed}.", below="{failed}: fewer steps computed twice than predicted.", undecided=_UNDECIDED)
_DCP = ("Saving at 2 ranks wrote {shards} shard files, one per rank, plus `.metadata`; the single rank that loaded "
        "them read both, and the 2 ranks that loaded the 1-rank checkpoint each read their half of its one file. So "
        "**the checkpoint folder must be on storage every node reads**: a shared file system or an object store. DCP "
        "then lets a job restarted after losing a node, or moved to a bigger cluster, resume from the same checkpoint.")
RESHARD = Template("beyond.reshard", ("equal", "above"), held="All {tensors} tensors (weights, Adam moments, step "
                   "counts) came back exactly, in both directions, and the weights had moved in between. " + _DCP,
                   above="The state did not come back exactly: {failed}. " + _DCP, below=_MISSED,
                   undecided="Not decided: the weights did not move between the checkpoints, so the second load "
                   "tested no new values.")
_FIT = ("Where the ring model's α and β come from: {source}. β = {beta}, α = {alpha} µs per ring step; on section "
        "1's sweep, measured over modelled ranges from {low}x to {high}x. ")
_REST = ("\n\nTime beyond a step's compute alone and its time with a collective running, where it exceeds the "
         "model's whole communication: {rests}; what it went to (Python, hooks, waiting for the other rank) is not "
         "measured here. On a cluster, fit α and β on the real network, for each collective and library the training "
         "uses: an inter-node link is not loopback.")
COST = Template("beyond.cost", ("within",), held=_FIT + "Every step landed within a factor of 2 of compute + model."
                + _REST, above=_FIT + "More than twice the prediction: {failed}." + _REST, below=_FIT
                + "Less than half the prediction: {failed}." + _REST, undecided=_FIT + _UNDECIDED + _REST)
_TRAFFIC = ("FSDP2 issued {gathers} all-gathers and {scatters} reduce-scatters per step, DDP {allreduces} "
            "all-reduce(s). Priced as gloo runs them (an all-reduce inside each reduce-scatter where rank 0's trace "
            "shows one), FSDP2 moves {gloo}x DDP's bytes.\n\nWith a collective running, DDP spent {ddp_ms} ms "
            "and FSDP2 {fsdp_ms} ms of a step (profiled share x plain step); the fitted ring model prices FSDP2's "
            "{calls} collectives at {model}x DDP's, latency included ({as_gloo}x as gloo runs them; "
            "computed). FSDP2's step speed over DDP's: {speed}. Sharding is for memory: use it when the state does "
            "not fit.")
_OFF = "{failed} is off the formula: the counts above differ from one all-gather per layer and pass. " + _TRAFFIC
TRAFFIC = Template("beyond.traffic", ("equal",), held="The counted calls, priced with the ring factors, give the "
                   "formula's ratio. " + _TRAFFIC, above=_OFF, below=_OFF)
_RS = ("Rank 0's profiler during one reduce-scatter: {trace}; an all-reduce in that list means gloo runs one inside "
       "its reduce-scatter, which then cannot cost half of one. A library's collective is not the textbook algorithm: "
       "time the ones your training runs, on its library and network.")
REDUCE_SCATTER = Template("beyond.reduce_scatter", ("within",), held="A reduce-scatter ran at the ring model's 2x of "
                          "an all-reduce of the same buffer, within 25%. " + _RS, above="A reduce-scatter ran more "
                          "than 2.5x as fast as an all-reduce of the same buffer. " + _RS, below="A reduce-scatter "
                          "ran less than 1.6x as fast as an all-reduce of the same buffer, short of the ring model's "
                          "2x. " + _RS, undecided=_UNDECIDED + " " + _RS)
_SHARD = ("The sharded step's temporaries are {temps}x the replicated ones: the gathered weights live there for "
          "the step. Gradients are reduced with {scatters} reduce-scatter(s) and {allreduces} all-reduce(s) (XLA's "
          "CPU backend may form no reduce-scatter).")
JAX_SHARD = Template("beyond.jax_shard", ("below", "true"), held="The arguments shrank to about 1/N and XLA inserted "
                     "all-gathers. " + _SHARD, above="{failed}: the arguments did not shrink to about 1/N. " + _SHARD,
                     failed="{failed}: false, no all-gather appeared. " + _SHARD, undecided=_UNDECIDED + " " + _SHARD,
                     untested="Not run: {why}.")
