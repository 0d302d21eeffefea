"""Notebook 01's predictions, each declared once: one sentence per outcome its checks can reach (``cu.findings``).

A notebook cell scores one (``cu.graphs.findings.CACHE.score(cu.findings.below(...), **cache.facts())``) and its
hidden cell shows ``v.prose(...)``, with the fixed paragraphs below where the section has more to say.
"""

from __future__ import annotations

from course_utils.findings import Template

NOT_DECIDED = "{undecided}: its interval straddles the bound, so this run does not decide it; more rounds narrow it."

SAME_OPS = Template(
    "graphs.same_ops", ("equal",),
    held="All graphs here hold **{n_ops} compute ops** (the cube `h*h*h` is two multiplications, each constant factor "
         "one more). What the compiler sees that eager execution cannot is the *whole* list at once: all {n_ops} ops "
         "are elementwise over one shape, so it can fuse them into one loop and skip the intermediate tensors.",
    above="{failed} holds more ops than PyTorch's {n_ops}: the frameworks lower the same Python differently (a "
          "constant kept in one and folded in another); the table above names each op, so compare them one by one.",
    below="{failed} holds fewer ops than PyTorch's {n_ops}: the frameworks lower the same Python differently (a "
          "constant folded in one and kept in another); the table above names each op, so compare them one by one.")

COMPILE = Template(
    "graphs.compile", ("above",),
    held="In every framework the first compiled call cost more than 100 steady calls, and the compiled call then ran "
         "faster than eager: the compile is paid once and saves on every later call. Each panel below marks the "
         "break-even the interval gives: a range of calls, from its high end to its low end.",
    below="{failed}: below the prediction. A first call under 100 steady calls is a cheaper compile than predicted; a "
          "compiled call slower than eager never pays its compile back at this size, and its panel below draws no "
          "break-even.",
    undecided="{undecided}: within the noise of eager, so this run does not decide the prediction, and the interval "
              "gives no break-even there (the panels below say so); more rounds would narrow it.")

CACHE_MECHANISM = (
    "On a warm hit of Inductor's FX-graph cache (and of AOTAutograd's before it), lowering and code generation are "
    "skipped. What still runs: Dynamo tracing the bytecode, building the guards, computing the cache keys, and "
    "loading the cached artifact (on a CPU, one compiled library per kernel, if the folder has it). PyTorch's caching "
    "recipe lists Triton's kernels among the artifacts: on a GPU, this cell shows whether they spare the compile.")
CACHE_ADVICE = ("For a job: keep `TORCHINDUCTOR_CACHE_DIR` on a persistent volume, and monitor compile time; notebook "
                "07's cost model takes these seconds from `cu.graphs.compile_cache_times`.")
_CACHE_RUNS = ("The local process reused the cold run's folder and built {local_built} compiled libraries in its first "
               "call; the portable one loaded the artifacts ({load}) into an empty folder and built {portable_built} "
               "(the cold one {cold_built}; {before} were there before it). The artifacts carry the generated code, "
               "not the libraries the C++ compiler makes from it: a library counted here was compiled in that call.")
CACHE = Template(
    "graphs.cache", ("below",),
    held="Both warm processes paid less than a third of the cold first call ({cold}). " + _CACHE_RUNS,
    above="{failed}: more than a third of the cold first call ({cold}). " + _CACHE_RUNS + " One process each: "
          "repeat them before a budget rests on them.",
    undecided=NOT_DECIDED)

_REGIONAL = ("Compiling the whole {depth}-block model in this process took {whole}; the cold fresh process of section "
             "3 took {cold} for the same stack. A candidate this run does not time apart: the fresh process also pays "
             "what this one paid in section 2 (Inductor's lazy imports, starting its compile workers, probing the "
             "CPU's instruction sets). `block.compile()`'s step, its speed over the whole model's: {block_step}. "
             "What it pays that the whole model does not: each block is its own compiled call with Python between "
             "them, {depth} fixed costs where the whole model pays one.\n\n")
REGIONAL = Template(
    "graphs.regional", ("below", "above"),
    held=_REGIONAL + "Compile the repeated block where compile time dominates (a large model, many short jobs or "
                     "restarts), and check the step time, as here.",
    above=_REGIONAL + "{failed}: no compile time saved here. Weigh the compile time against the step time, measured "
                      "on your model.",
    below=_REGIONAL + "{failed}: the nested region's step fell below 0.8x the whole model's speed beyond the noise. "
                      "Weigh the compile time saved against the step time, measured on your model.",
    undecided=_REGIONAL + NOT_DECIDED)

_INPUTS = " The model's inputs must be the costs of the calls actually made."
_OVERHEAD = ("The compiled call is the run's figure: {how} The table sets the compiled chain's own call beside it, "
             "and the chain's average eager op beside the op mix (both computed): where the model missed, the "
             "further-off input is the one to measure again.")
OVERHEAD = Template(
    "graphs.overhead", ("within",),
    held="Within 2x everywhere: at this size a compiled chain costs about one call, an eager chain n_ops dispatches. "
         + _OVERHEAD,
    above="{failed}: the chain won by more than twice the computed speed-up. " + _OVERHEAD + _INPUTS + " The "
          "profiler trace in Going further counts them.",
    below="{failed}: the chain won by less than half the computed speed-up. " + _OVERHEAD + _INPUTS + " The "
          "profiler trace in Going further counts them.",
    undecided=NOT_DECIDED)

CUDA_GRAPHS = Template(
    "graphs.cuda_graphs", ("above",),
    held="Replayed as a CUDA graph, the chain ran faster than under the default compile: one graph launch replaces "
         "the launches of its kernels. The graph is recorded on the first calls and replays fixed shapes and "
         "addresses: a new shape records another graph.",
    below="The CUDA-graph replay ran slower than the default compile. A candidate: the chain is one fused kernel, so "
          "there is one launch to save; this run does not time launches apart.",
    undecided="The CUDA-graph replay was within the noise of the default compile, so this run does not decide it. A "
              "candidate: the chain is one fused kernel, so there is one launch to save.",
    untested='On a CUDA GPU, this cell compiles the chain with `mode="reduce-overhead"` and times its CUDA-graph '
             "replay against the default compile, in alternating rounds.")

_CULPRIT = " In training, the usual culprit is an epoch's last, smaller batch: drop it or pad it."
RECOMPILES = Template(
    "graphs.recompiles", ("equal",),
    held="Every count came out as predicted. Static shapes compile once per length; PyTorch's default fails the size "
         "guard once (the recompile log above), then compiles one shape-generic graph, which `mark_dynamic` does up "
         "front; padding cuts compilations to one per bucket at the price of computing on zeros (slice or mask them "
         "away); TensorFlow's `None` length traces once." + _CULPRIT,
    above="{failed}: more compilations than predicted. The recompile log above names the guard that failed; the "
          "table lists every strategy's count." + _CULPRIT,
    below="{failed}: fewer compilations than predicted: this version shares a graph across lengths where the rule "
          "expected a new one (the table lists every count)." + _CULPRIT)

CONTROL_ADVICE = ("The seed articles list data-dependent control flow as a migration pitfall and advise refactoring "
                  "it first; the `where`/`cond` forms above are that refactoring, each checked against eager on "
                  "inputs that take both branches.")
_TORCH_IF = ("PyTorch produced {graphs} graph(s) with {breaks} break(s) (reason: `{reason}`) and ran the `if` in "
             "Python between them, equal to eager on both branches (max abs diff {clip_diff}), but giving the "
             "compiler smaller pieces and a trip through Python on every call.")
CONTROL = Template(
    "graphs.control_flow", ("true",),
    held=_TORCH_IF + " A traced value has no truth to branch on: JAX refuses to guess it, TensorFlow's AutoGraph "
                     "rewrites the `if` into a graph conditional without a word.",
    failed="{failed}: false, against the prediction. " + _TORCH_IF)

SWITCHES = Template(
    "graphs.switches", ("true", "equal"),
    held="Each switch turned compilation off and on without editing the model: that is the rollback path.",
    failed="{failed}: false, against the prediction; the printed facts above show what happened instead.",
    above="{failed}: more graph breaks than predicted around the disabled helper.",
    below="{failed}: fewer graph breaks than predicted around the disabled helper.")

FALLBACK = Template(
    "graphs.fallback", ("true",),
    held="{kept} of {total} functions were kept compiled, each decision with a reason a log line can carry. The "
         "running-sum case (JAX only) is the dangerous one: it compiles without complaint and returns a wrong number, "
         "because the list was read once at trace time. Only the comparison with eager catches it: check every "
         "compiled result against eager.",
    failed="{failed}: false, against the prediction; {kept} of {total} functions were kept compiled. Where one was "
           "kept against the prediction, it matched eager on this sample, so the comparison did not catch it: check "
           "on more than one input; where one fell back, the table gives its reason.")

STEP = Template(
    "graphs.step", ("above", "below"),
    held="Every compiled step beat its own eager step, with equal losses: on a model this small, per-op overhead "
         "dominates the step. The first compiled step (the table's last column) is the compile.",
    below="{failed}: not faster than its own eager step beyond the noise. Going further times PyTorch's step part "
          "by part and profiles it.",
    above="{failed}: the compiled losses drifted from eager beyond the tolerance.",
    undecided=NOT_DECIDED)

SEED_CAVEAT = ("Each framework's speed-up over its own eager mode is a different number; a saving counts only after "
               "the compile is paid back. Measure on your own model before budgeting a migration (notebook 07).")
_IN_PROCESS = " Section 8's figure, in this process: {in_process}."
SEED = Template(
    "graphs.seed", ("above",),
    held="On this model torch.compile saved at least 30% of the step: across the fresh processes its whole interval "
         "lies above the 1.43x a 30% saving needs." + _IN_PROCESS,
    below="Across the fresh processes the interval lies below the 1.43x that a 30% saving needs: the seed's figure is "
          "not shown on this model (section 8's verdict says whether the step was faster at all)." + _IN_PROCESS,
    undecided="Across the fresh processes the interval straddles the 1.43x that a 30% saving needs: this run does "
              "not decide the seed's figure." + _IN_PROCESS)

_REUSED = ("\n\nSection 2's function, first called at {first_size} elements and reused here, compiled "
           "{reused_graphs} new graph(s) for this length; its speed over the static graph: {reused}. After a length "
           "changes, the default compiles a shape-generic graph, so a reused compiled function is no static baseline.")
DYNAMIC = Template(
    "graphs.dynamic", ("below",),
    held="Both shape-generic forms cost time on every call (sizes passed in and checked; a candidate this run does "
         "not time apart): use them where shapes really vary (section 5), not by default." + _REUSED,
    above="{failed} ran faster than the static graph beyond the noise, against the prediction: on this call the "
          "symbolic size cost no time this run can see, and why it ran faster is not established here." + _REUSED,
    undecided="{undecided}: within the noise of the static graph, so this run does not decide it; more rounds would "
              "narrow the interval." + _REUSED)

OP_COUNT = Template(
    "graphs.op_count", ("below",),
    held="No compiled chain won by more than the op count here ({costs}). The overhead model, not the bound, is the "
         "general rule: the small-size speed-up is about the op count times the ratio of the two fixed costs, so "
         "where an eager op costs more than a compiled call, the chain wins by more than the op count.",
    above="{failed} won by more than the op count ({costs}): the small-size speed-up is about the op count times the "
          "ratio of the two fixed costs, so both set it, and the op count alone bounds nothing.",
    undecided=NOT_DECIDED)

TRACE_LIMIT = ("What a trace cannot show is the compiled call's own fixed cost: that is the run's call-cost figure. "
               "The eager timeline shows one short bar per op, separated by gaps in which Python and the dispatcher "
               "work; the compiled trace shows one region per call.")
TRACED = Template(
    "graphs.traced", ("equal",),
    held="The traces count exactly the graph's ops and one compiled call: section 4's model charged the dispatches "
         "that happened.",
    above="{failed}: the trace counts more dispatches than the model charged (see the table)." + _INPUTS,
    below="{failed}: the trace counts fewer dispatches than the model charged (see the table)." + _INPUTS)

_RATIOS = " Compare ratios from one run, never times from two."
HARNESS = Template(
    "graphs.harness", ("within",),
    held="The two harnesses measure the same speed-up within 1.5x." + _RATIOS,
    above="{failed}: notebook 00's harness gave the larger speed-up, beyond 1.5x; the factors table says which "
          "change does it." + _RATIOS,
    below="{failed}: this sweep's harness gave the larger speed-up, beyond 1.5x; the factors table says which change "
          "does it." + _RATIOS,
    undecided="{undecided}: the interval crosses an edge of the 1.5x margin, so this run does not decide whether the "
              "harnesses agree; the factors table shows each change apart.")

PRINT_TOOLS = ("`torch.compile(fullgraph=True)` turns a graph break into an error, and `TORCH_LOGS=graph_breaks` lists "
               "every break with its reason. Under tracing, use `jax.debug.print` (or `jax.debug.breakpoint`) in JAX "
               "and `tf.print` in TensorFlow: a Python `print` there shows *what is traced* (shapes and dtypes), once "
               "per trace, which is itself useful for catching retracing.")
PRINTS = Template(
    "graphs.prints", ("equal", "true"),
    held="Every print ran as predicted: in PyTorch a `print` of a tensor keeps working, with real values on every "
         "call, because Dynamo leaves it out of the graph, at the price of {breaks} graph break(s) here.",
    above="{failed}: more prints than predicted (see the counts).",
    below="{failed}: fewer prints than predicted (see the counts).",
    failed="{failed}: false, against the prediction; {breaks} graph break(s) here.")

TLPARSE_HOW = ("On a real job, run the training script with `TORCH_TRACE=/tmp/trace python train.py`, then "
               "`tlparse /tmp/trace/*.log -o report --no-browser`: the recompile and graph-break reasons are the first "
               "things to read when a compiled model is slower than expected.")
TLPARSE = Template(
    "graphs.tlparse", ("equal", "above"),
    held="The report counts what the job does. Its index page is the `index.html` the table names (open it in any "
         "browser, offline); the job it ran is `job.py`, in the folder above `report/`.",
    above="{failed}: more than predicted; the report's `index.html` (named in the table) gives each reason.",
    below="{failed}: fewer than predicted; the report's `index.html` (named in the table) gives each reason.",
    undecided=NOT_DECIDED,
    untested="tlparse turns the job's `TORCH_TRACE` logs into that report where it is installed.")
