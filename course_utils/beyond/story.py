"""Every sentence notebook 06 generates in its main path: one function per paragraph after a verdict, each told from
the stored verdict (``v.status``) and the run's measurements, never deciding again what the verdict decided.

A function returns ``cu.display.prose(...)``, or None after a verdict that was not tested here (the verdict already
said why, once). The sentences of the "Going further" sections are in ``story_further``, re-exported here so that
the notebook reaches every sentence as ``cu.beyond.story.<name>``.
"""

from __future__ import annotations

from typing import Any

from course_utils import display, validate
from course_utils.beyond import jaxmulti, tfmulti
from course_utils.beyond.story_further import jax_operands, jax_sharding, reduce_scatter, traffic
from course_utils.display import Prose, Verdict
from course_utils.distributed import launcher

__all__ = ["cost_model", "elastic", "jax_operands", "jax_processes", "jax_sharding", "memory", "reduce_scatter",
           "reshard", "tf_workers", "traffic", "two_nodes"]


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def _ranks(ranks: Any) -> str:
    return ", ".join(map(str, ranks)) if ranks else "none"


def _verdict(v: Any) -> Verdict:
    return validate.instance("v", v, Verdict)


def two_nodes(v: Verdict, node_ranks: dict[int, list[int]], split: dict[str, float], warning: tuple[int, str] | None,
              backend: str) -> Prose:
    """After the two-node proof: which node ran which rank, where the wall time went, what a cluster changes."""
    _verdict(v)
    who = (f"Node 0 ran rank(s) {_ranks(node_ranks.get(0))}, node 1 rank(s) {_ranks(node_ranks.get(1))}: the "
           "rendezvous, not `--node-rank`, handed out the ranks, so never write code that assumes node 0 holds rank 0"
           + (f" (node {warning[0]}'s torchrun said so: `{warning[1]}`)." if warning else "."))
    result = ("The two launchers computed what one process computes. " if v.held else
              "The two launchers did NOT compute what one process computes: the differences above say where. ")
    time = (f"The job took {split['wall']:.1f} s, of which the three phases ran {split['phases']:.1f} s: "
            f"{display.percent(split['outside'] / split['wall'])} went to start-up, rendezvous and shut-down (each "
            f"rank took up to {split['startup']:.1f} s from its process start to joining the group).")
    cluster = ("**On a real cluster** the endpoint becomes node 0's address, the network interface is named "
               "(`NCCL_SOCKET_IFNAME`, `GLOO_SOCKET_IFNAME`; here the launcher pins both to loopback), and each GPU "
               "gets one rank: `LOCAL_RANK` picks the GPU on its machine, `RANK` names the worker in the job. "
               + (f"Here the ranks ran {backend}, on the CPU: no GPU was visible to them." if backend == "gloo" else
                  f"Here the ranks ran {backend}."))
    return display.prose(result + who, time, cluster)


def jax_processes(v: Verdict, jax_run: Any) -> Prose | None:
    """After the two-process JAX proof (``jax_run``: ``jaxmulti.run``'s result): device numbering, the merged
    all-reduce, gloo underneath."""
    if not _verdict(v).tested:
        return None
    validate.instance("jax_run", jax_run, launcher.LaunchResult)
    record, leaves, gloo_ranks = jax_run.record("jax"), len(jax_run.arrays["jax"][0]), jaxmulti.gloo_ranks(jax_run)
    operands = record["allreduce_operands"]
    loss = " (the extra one is the loss, a scalar)" if len(operands) == leaves + 1 and 1 in operands else ""
    first = ("Both processes hold the parameters one device computes, " if v.held else
             "The processes do NOT hold what one device computes: see the differences above; ")
    return display.prose(
        first + f"with device ids {record['device_ids']}: JAX numbers each process's devices in its own range, and "
        f"the mesh spans all {record['devices']}. XLA merged the {leaves} gradients into {record['allreduce_count']} "
        f"all-reduce(s) of {len(operands)} operands{loss}. On CPUs the collective runs over gloo's TCP, with "
        f"{gloo_ranks} gloo ranks (gloo's own log lines: one per device, not per process); on real hardware over "
        "NCCL or a TPU pod's interconnect. Section 6 prices the step.")


def tf_workers(v: Verdict, diff: dict[str, float] | None, tf_run: Any) -> Prose | None:
    """After the TF multi-worker proof (``tf_run``: ``tfmulti.run``'s result): the global-batch division, and
    where the job's time went."""
    if not _verdict(v).tested:
        return None
    validate.instance("diff", diff, dict)
    split = tfmulti.time_split(tf_run)
    first = (f"The two workers agreed bit for bit and differed from one worker by {diff['single']:.1e}. " if v.held
             else f"The workers differ by {diff['workers']:.1e} and from one worker by {diff['single']:.1e}. ")
    return display.prose(
        first + "The loop divides the summed loss by the **global** batch, because the strategy *sums* the "
        f"replicas' gradients. The job took {split['wall']:.1f} s; by the workers' own clocks {split['import']:.1f} s "
        f"went to importing TensorFlow, {split['joined']:.1f} s from process start to a joined strategy (import "
        f"included), {split['work']:.1f} s to training and the one-worker check, and the other "
        f"{split['outside']:.1f} s to torchrun's own start and shut-down. On a cluster each machine sets its own "
        "`TF_CONFIG`.")


def memory(v: Verdict, ratios: dict[str, float], per_rank: dict[str, list[int]], gathered: dict[str, Any] | None,
           bucket_bytes: int) -> Prose:
    """After the model-state verdict: default DDP's buckets, ZeRO-1's uneven ranks, FSDP2's shards and gathers."""
    _verdict(v)
    fsdp = per_rank["fsdp2"]
    zero = per_rank["zero1"]
    measured = ", ".join(f"{k} {r:.3f}x" for k, r in ratios.items())
    first = (f"Every kind held its formula's bytes ({measured} on the largest rank). " if v.held else
             f"Measured over formula: {measured}; the table shows which part differs. ")
    buckets = (f"The default DDP row is DDP's own report: {display.format_bytes(bucket_bytes)} of buckets beside the "
               "gradients, which `gradient_as_bucket_view=True` turns into the gradients themselves. ")
    shards = ("ZeRO-1 shards the Adam state by whole tensors, "
              + ("so its ranks differ" if len(set(zero)) > 1 else "here in equal shares")
              + f" ({', '.join(map(display.format_bytes, zero))}); "
              f"FSDP2 splits every tensor along its first dimension ({', '.join(map(display.format_bytes, fsdp))}"
              + (": every first dimension divides by the ranks). " if len(set(fsdp)) == 1 else
                 ": a first dimension does not divide evenly). "))
    if gathered:
        peak = ("Not in the table: FSDP2 gathers a layer's full weights just before using it; its own profiler labels "
                f"show at most {gathered['layers']} layer(s) held whole at once (modules "
                f"{', '.join(gathered['names'])}: "
                f"{display.format_bytes(gathered['bytes'])}, against {display.format_bytes(gathered['all'])} for all "
                "weights). Activations are not sharded at all.")
    else:
        peak = ("Not in the table: FSDP2 gathers a layer's full weights just before using it; this run's trace had no "
                "FSDP2 labels, so how many at once is not measured here. Activations are not sharded at all.")
    return display.prose(first + buckets, shards + peak)


def elastic(v: Verdict, crash: Any, diff: float) -> Prose:
    """After the crash-and-resume verdict: what was lost and where the time went."""
    _verdict(v)
    spent = crash.timeline
    first = (f"Rank 1 died at step {crash.crash_at}, torchrun restarted both ranks, they resumed at step "
             f"{crash.resumed_from} and ended with the weights of an uninterrupted run (difference {diff:.1e}). "
             if v.held else
             f"The resumed run ended {diff:.1e} away from an uninterrupted one, or lost other steps than predicted "
             f"({crash.lost_steps} lost). ")
    time = (f"The job took {crash.seconds:.1f} s; by the ranks' own clocks, joining the group took "
            f"{spent['startup 0']:.1f} s before the crash and {spent['startup 1']:.1f} s after it, training "
            f"{spent['training 0'] + spent['training 1']:.1f} s in all, and the other {spent['outside']:.1f} s went to "
            "torchrun noticing the failure and restarting the group.")
    return display.prose(first + time)


def reshard(v: Verdict, two_to_one: dict[str, Any], one_to_two: dict[str, Any], files: dict[str, int]) -> Prose:
    """After the resharding verdict: who wrote which file and who read them, hence the shared storage."""
    _verdict(v)
    shards = [name for name in files if name.endswith(".distcp")]
    first = (f"All {two_to_one['tensors']} tensors (weights, Adam moments, step counts) came back exactly, in both "
             "directions. " if v.held else
             f"The state did not come back exactly: {two_to_one['max diff']:.1e} from 2 ranks to 1, "
             f"{one_to_two['max diff']:.1e} from 1 to 2 (names equal: {two_to_one['same names']}, "
             f"{one_to_two['same names']}). ")
    return display.prose(
        first + f"Saving at 2 ranks wrote {len(shards)} shard files, one per rank, plus `.metadata`; the single rank "
        "that loaded them read both files, and the 2 ranks that loaded the 1-rank checkpoint each read their half of "
        "its one file. So **the checkpoint folder must be on storage every node reads**: a shared file system or an "
        "object store. DCP then lets the next job run on a different number of machines: a job restarted after "
        "losing a node, or moved to a bigger cluster, resumes from the same checkpoint.")


def cost_model(v: Verdict, fit: Any, scores: Any, rows: dict[str, dict[str, float]], ratios: dict[str, float],
               unexplained: dict[str, float]) -> Prose:
    """After the cost-model verdict: the fit, the worst step, and what neither compute nor collectives covers."""
    _verdict(v)
    worst = max(ratios, key=lambda k: abs(ratios[k] - 1) if ratios[k] >= 1 else abs(1 / ratios[k] - 1))
    fitted = (f"05's ring model, fitted here on section 1's sweep: β = {display.format_rate(fit.bandwidth)}, "
              f"α = {fit.latency * 1e6:.1f} µs per ring step; over the sweep it is off by {min(scores):.2f}x to "
              f"{max(scores):.2f}x. ")
    verdict = (f"Every step landed within a factor of 2 of compute + model (worst: *{worst}*, {ratios[worst]:.2f}x). "
               if v.held else
               f"Not every step landed within a factor of 2 (worst: *{worst}*, {ratios[worst]:.2f}x measured over "
               "predicted). ")
    rests = [f"*{name}* {_ms(rest)} (model's whole communication: {_ms(rows[name]['comm model'])})"
             for name, rest in unexplained.items()]
    rest = ("Neither compute alone nor the time with a collective running accounts for part of some steps: "
            + "; ".join(rests) + ". What they spent it on (Python, hooks, waiting for the other rank) is not "
            "measured here" + (": a band that holds is not an explanation." if v.held else ".") if rests else
            "No step left more time unaccounted for (beyond compute alone and its time with a collective running) "
            "than the model's whole communication.")
    return display.prose(fitted + verdict, rest + " On a cluster, fit α and β on the real network, for each "
                         "collective and library the training uses: an inter-node link is not loopback.")
