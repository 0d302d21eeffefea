# ---
# jupyter:
#   course:
#     minutes:
#       ci: 3
#       laptop: 5
#       workshop: 50
#   jupytext:
#     notebook_metadata_filter: course,kernelspec,-jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] slideshow={"slide_type": "slide"}
# # 01 · Dynamic vs static: what does a compiler see that eager execution cannot?
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/eager-to-compiled/course/blob/main/notebooks/01_dynamic_vs_static.ipynb)
#
# Eager execution runs your Python one operation at a time; a compiler first *captures* the whole function
# as a graph and then runs that graph. After this notebook you will be able to:
#
# - show the graph that PyTorch 2 (`torch.compile`), JAX (`jax.jit`) and TensorFlow (`tf.function`) capture
#   from the same function, and count its ops;
# - measure what compiling costs (the first call) and what it saves (every later call), and compute the
#   **break-even** number of calls;
# - predict and count **recompilations** when shapes change, and avoid them;
# - recognise where capture breaks (Python `if` on a tensor value, `print`) and fix it;
# - keep a **rollback path**: compile, check against eager, fall back with a reason;
# - compile a whole training step in all three frameworks and prove it equal to eager.
#
# **Time**: about 3 minutes to run at CI size on 2 CPU cores, 5 at laptop size, about 50 minutes as a workshop.
# **Accelerators**: every section runs on CPU; on a GPU runtime all three frameworks use the GPU (timings
# synchronised); on a Colab TPU runtime JAX and TensorFlow use the TPU while PyTorch stays on the CPU.

# %%
# Colab only: install the course helpers. Colab's own torch, jax and tensorflow are left as they are.
import subprocess
import sys

if "google.colab" in sys.modules:
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "course_utils @ git+https://github.com/eager-to-compiled/course@main"], check=True)

# %% slideshow={"slide_type": "skip"}
import course_utils as cu

tf = cu.env.import_tensorflow()
import jax
import jax.numpy as jnp
import numpy as np
import torch
from IPython.display import Markdown

from course_utils import graphs

cu.env.setup_notebook()

# %% slideshow={"slide_type": "skip"}
# The recurring workload: x + GELU(x + bias), the same Python function bound to each framework's tanh.
FRAMEWORKS = ("torch", "jax", "tensorflow")
chains = {fw: cu.models.chain_for(fw) for fw in FRAMEWORKS}
MIN_TIME = cu.env.pick(ci=0.05, cpu=0.2)  # seconds of timed calls per measurement
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # graphs.to_framework puts torch tensors there


def inputs(fw, n):
    """x and bias of n elements for framework fw (same numbers in every framework)."""
    x, bias = np.random.default_rng(n).standard_normal((2, n), dtype=np.float32)
    return graphs.to_framework(fw, x), graphs.to_framework(fw, bias)


# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. The same function, captured three ways
#
# Each compiler runs the Python function once with placeholder values (*tracing*) and records the
# operations. PyTorch's Dynamo hands an FX graph to a *backend*; our backend (`graphs.GraphRecorder`) just
# keeps it. JAX writes a jaxpr; TensorFlow builds a `tf.Graph`.
#
# **Prediction**: the chain `x + 0.5·h·(1 + tanh(√(2/π)·(h + 0.044715·h³)))` with `h = x + bias` is the same
# arithmetic in all three, so all three graphs should have the same number of compute ops.

# %%
captures = [graphs.capture(fw, chains[fw], *inputs(fw, 8)) for fw in FRAMEWORKS]
graphs.side_by_side(captures)

# %%
# NBVAL_CHECK_OUTPUT
for c in captures:
    print(f"{c.framework:<10} {c.count} compute ops: {dict(sorted(c.counts().items()))}")
assert len({c.count for c in captures}) == 1
print("same op count in all three graphs:", len({c.count for c in captures}) == 1)

# %%
n_ops = captures[0].count
Markdown(
    f"All three graphs hold **{n_ops} compute ops** (the cube `h*h*h` is two multiplications, each constant "
    f"factor one more). TensorFlow also lists `Placeholder`, `Const` and `Identity` nodes, which are "
    f"bookkeeping, not computation. What the compiler sees that eager execution cannot is the *whole* list at "
    f"once: it knows that all {n_ops} ops are elementwise over the same shape, so it can fuse them into one "
    f"loop over memory and skip {n_ops - 1} intermediate tensors. Eager execution sees one op at a time."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. Compiling costs once and saves on every call
#
# The first call of a compiled function traces and compiles; later calls reuse the result. We time both,
# for the eager function and the compiled one (`torch.compile(dynamic=True)`, `jax.jit`,
# `tf.function(jit_compile=True)`), on one workload size.
#
# **Prediction**: the first compiled call costs seconds in PyTorch (Inductor writes and compiles C++ or
# Triton code) and a fraction of a second in JAX and TensorFlow (XLA); steady-state calls are faster than
# eager because the ops run as one fused loop. Compiling pays off after
# `(first call − eager call) / (eager per call − compiled per call)` calls.

# %%
N = cu.env.pick(ci=2**16, cpu=2**20, gpu=2**24)
compiled = {
    "torch": torch.compile(chains["torch"], dynamic=True),
    "jax": jax.jit(chains["jax"]),
    "tensorflow": tf.function(chains["tensorflow"], jit_compile=True),
}
args = {fw: inputs(fw, N) for fw in FRAMEWORKS}
eager_m = {fw: cu.timing.benchmark(chains[fw], *args[fw], min_time=MIN_TIME, label=f"{fw} eager") for fw in FRAMEWORKS}
compiled_m = {fw: cu.timing.benchmark(compiled[fw], *args[fw], min_time=MIN_TIME, label=f"{fw} compiled")
              for fw in FRAMEWORKS}
cu.plotting.time_bars({m.label: m for fw in FRAMEWORKS for m in (eager_m[fw], compiled_m[fw])},
                      show_first_call=True, log=True, title=f"gelu chain, {N:,} elements: first call vs steady state")

# %%
graphs.crossover_plot({fw: (eager_m[fw], compiled_m[fw]) for fw in FRAMEWORKS},
                      title="Cumulative time: when has compiling paid for itself?")

# %%
# NBVAL_CHECK_OUTPUT
for fw in FRAMEWORKS:
    diff = graphs.max_abs_diff(chains[fw](*args[fw]), compiled[fw](*args[fw]))
    assert diff < 1e-5, (fw, diff)
    print(f"{fw:<10} compiled equals eager (max abs diff < 1e-5): True")

# %%
break_even = {fw: graphs.break_even(eager_m[fw], compiled_m[fw]) for fw in FRAMEWORKS}
speedup = {fw: eager_m[fw].median / compiled_m[fw].median for fw in FRAMEWORKS}
fmt = cu.timing.format_time


def pays_off(n):
    return "compiling never pays off at this size" if n == float("inf") else (
        f"compiling pays off after **{n:,.0f} call{'s' if n != 1 else ''}**")


Markdown("\n".join(
    [f"On this machine, at {N:,} elements:", ""]
    + [f"- **{fw}**: first compiled call {fmt(compiled_m[fw].first_call)}, then {fmt(compiled_m[fw].median)} per "
       f"call vs {fmt(eager_m[fw].median)} eager (**{speedup[fw]:.2f}x**); {pays_off(break_even[fw])}."
       for fw in FRAMEWORKS]
    + ["", f"The most expensive warm-up here was {max(FRAMEWORKS, key=lambda fw: compiled_m[fw].first_call)}'s. "
       "PyTorch's first call includes loading Inductor and running a C++ (or, on a GPU, Triton) compiler; XLA "
       "compiles a graph this small quickly. A training loop of thousands of steps hides any of these, a script "
       "that calls the function a few times does not."]
    + [f"A break-even of 1 call ({', '.join(fw for fw in FRAMEWORKS if break_even[fw] == 1)}) means eager's own "
       "first call was at least as slow as compiling: JAX compiles every primitive on its first eager use, so "
       "op-by-op JAX pays a warm-up too." for _ in [0] if any(break_even[fw] == 1 for fw in FRAMEWORKS)]
    + [f"A speed-up below 1x ({', '.join(fw for fw in FRAMEWORKS if speedup[fw] < 1)}) means the compiled call's "
       "fixed cost outweighs what fusion saves at this size (section 3 shows how that depends on size), or that "
       "the machine was busy while it was measured: wide whiskers in the first plot say so."
       for _ in [0] if any(speedup[fw] < 1 for fw in FRAMEWORKS)]
))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Cold and warm compile caches
# Inductor keeps what it generated on disk (`TORCHINDUCTOR_CACHE_DIR`, by default in the temp folder), so a
# second *process* compiling the same graph mostly loads it. **Prediction**: the first call in a fresh process
# with an empty cache costs many times more than with a warm one. Measured in two fresh processes sharing
# one new cache folder (imports excluded):

# %%
cache = graphs.compile_cache_times(N)
Markdown(
    f"torch.compile first call, empty cache: **{fmt(cache['cold'])}**; same graph, warm cache: "
    f"**{fmt(cache['warm'])}** ({cache['cold'] / cache['warm']:.0f}x less). In CI, on a shared cluster or in a "
    "container, keep the cache on a persistent volume (set `TORCHINDUCTOR_CACHE_DIR`), or every job pays the "
    "cold price; monitor compile time as the seed's checklist asks."
)

# %%
# NBVAL_CHECK_OUTPUT
print("a warm Inductor cache makes the first call cheaper:", cache["warm"] < cache["cold"])

# %% [markdown] slideshow={"slide_type": "notes"}
# Live-run this section: the first `torch.compile` call takes seconds in front of the audience, which makes the
# warm-up tangible. Ask for a guess of the break-even before showing the crossover plot. If the room's machine
# is shared or busy, point at the whiskers: the quartile range is part of the result.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. Eager dispatch overhead: why small tensors gain most
#
# Every eager op pays a fixed price before any arithmetic: Python, the framework's dispatcher, an output
# allocation. A compiled call pays its own fixed price once (guards, argument checks) for all the ops.
#
# **Prediction**: for tiny tensors, time per call is flat (pure overhead) and eager pays it once per op,
# so the compiled function wins by up to the op count; for large tensors both are limited by memory
# traffic, and the gap shrinks to what fusion saves in bytes moved.

# %%
SIZES = cu.env.pick(ci=[2**4, 2**8, 2**12, 2**16], cpu=[2**k for k in range(4, 23, 3)])
sweep = {f"{fw} {kind}": [] for fw in FRAMEWORKS for kind in ("eager", "compiled")}
worst_diff = 0.0
for n in SIZES:
    for fw in FRAMEWORKS:
        a = inputs(fw, n)
        worst_diff = max(worst_diff, graphs.max_abs_diff(chains[fw](*a), compiled[fw](*a)))
        sweep[f"{fw} eager"].append(cu.timing.benchmark(chains[fw], *a, min_time=MIN_TIME))
        sweep[f"{fw} compiled"].append(cu.timing.benchmark(compiled[fw], *a, min_time=MIN_TIME))
cu.plotting.sweep_plot(SIZES, sweep, title="gelu chain: time per call vs size (band: quartiles)")

# %%
# NBVAL_CHECK_OUTPUT
assert worst_diff < 1e-5
print("compiled equals eager at every size, all three frameworks (max abs diff < 1e-5): True")

# %%
small, large = SIZES[0], SIZES[-1]
Markdown("\n".join(
    [f"At {small} elements: eager time per op (call time / {n_ops}), the compiled call's own fixed cost, and "
     "the speed-up (eager time / compiled time) at the smallest and largest size:", ""]
    + [f"- **{fw}**: {fmt(sweep[f'{fw} eager'][0].median / n_ops)} per eager op; "
       f"{fmt(sweep[f'{fw} compiled'][0].median)} per compiled call; speed-up "
       f"{sweep[f'{fw} eager'][0].median / sweep[f'{fw} compiled'][0].median:.1f}x at {small} elements, "
       f"{sweep[f'{fw} eager'][-1].median / sweep[f'{fw} compiled'][-1].median:.1f}x at {large:,}." for fw in FRAMEWORKS]
    + ["", f"With {small} elements the arithmetic takes nanoseconds, so those microseconds are dispatch "
       "overhead, paid once per op in eager mode and once per call when compiled: the compiled call wins "
       "only where its fixed cost is below the eager ops' sum. As tensors grow, arithmetic and memory traffic "
       "dominate, the flat part of each line ends, and the remaining gap is what fusion saves in bytes moved "
       "(notebook 02 measures that against the roofline)."]
))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Recompilation: new shapes, new traces
#
# A compiled function is specialised to the shapes (and dtypes) it was traced with. Calling it with a new
# shape means tracing and compiling again. We call each function with 4 different lengths and count the
# compilations: `GraphRecorder` graphs in PyTorch, traces under `jax.jit`,
# `experimental_get_tracing_count()` in TensorFlow (`graphs.count_compiles` wraps all three).
#
# **Prediction**: 4 shapes, 4 compilations, unless we say which dimension may vary: `mark_dynamic` or
# `dynamic=True` in PyTorch, `input_signature` with a `None` dimension in TensorFlow. JAX always
# specialises; the remedy there is padding to a few bucket sizes.

# %%
LENGTHS = (100, 200, 300, 400)


def torch_chain(x):
    return cu.models.gelu_chain(x, 0.1, torch.tanh)


def jax_chain(x):
    return cu.models.gelu_chain(x, 0.1, jnp.tanh)


def tf_chain(x):
    return cu.models.gelu_chain(x, 0.1, tf.tanh)


def bucket(x, size=256):
    """Pad x with zeros up to a multiple of size (the result is sliced back after the call)."""
    return jnp.pad(x, (0, -len(x) % size))


xs = {fw: [inputs(fw, n)[0] for n in LENGTHS] for fw in FRAMEWORKS}
marked = [torch.clone(x) for x in xs["torch"]]
for x in marked:
    torch._dynamo.mark_dynamic(x, 0)
counts = {
    "torch": {
        "dynamic=False": graphs.count_compiles("torch", torch_chain, [(x,) for x in xs["torch"]], dynamic=False),
        "default (automatic dynamic)": graphs.count_compiles("torch", torch_chain, [(x,) for x in xs["torch"]]),
        "mark_dynamic(x, 0)": graphs.count_compiles("torch", torch_chain, [(x,) for x in marked]),
    },
    "jax": {
        "jax.jit": graphs.count_compiles("jax", jax_chain, [(x,) for x in xs["jax"]]),
        "padded to multiples of 256": graphs.count_compiles("jax", jax_chain, [(bucket(x),) for x in xs["jax"]]),
    },
    "tensorflow": {
        "tf.function": graphs.count_compiles("tf", tf_chain, [(x,) for x in xs["tensorflow"]]),
        "reduce_retracing=True": graphs.count_compiles("tf", tf_chain, [(x,) for x in xs["tensorflow"]],
                                                       reduce_retracing=True),
        "input_signature [None]": graphs.count_compiles(
            "tf", tf_chain, [(x,) for x in xs["tensorflow"]], input_signature=[tf.TensorSpec([None], tf.float32)]),
    },
}
graphs.compile_count_bars(counts, calls=len(LENGTHS), title=f"Compilations for {len(LENGTHS)} different lengths")

# %%
# NBVAL_CHECK_OUTPUT
for fw, strategies in counts.items():
    for strategy, n in strategies.items():
        print(f"{fw:<10} {strategy:<28} {n} compilation(s) for {len(LENGTHS)} shapes")
padded = jax.jit(jax_chain)(bucket(xs["jax"][0]))[: LENGTHS[0]]
assert graphs.max_abs_diff(jax_chain(xs["jax"][0]), padded) < 1e-6
print("padded-then-sliced result equals eager (max abs diff < 1e-6): True")

# %%
Markdown(
    f"PyTorch compiled {counts['torch']['dynamic=False']} times with static shapes, but only "
    f"{counts['torch']['default (automatic dynamic)']} by default: after the second shape Dynamo marks the "
    f"changed dimension dynamic and compiles one shape-generic graph (`mark_dynamic` does this up front: "
    f"{counts['torch']['mark_dynamic(x, 0)']}). JAX traced {counts['jax']['jax.jit']} times; padding to "
    f"buckets of 256 cut that to {counts['jax']['padded to multiples of 256']}, at the price of computing on "
    f"zeros (mask or slice them away). TensorFlow retraced {counts['tensorflow']['tf.function']} times (and "
    f"logs a retracing warning), {counts['tensorflow']['reduce_retracing=True']} with `reduce_retracing=True` "
    f"and {counts['tensorflow']['input_signature [None]']} with an `input_signature` whose length is `None`. "
    f"In a training loop, the usual culprit is the last, smaller batch of an epoch: drop it or pad it."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. Python `if` on a tensor value
#
# A tracer stands in for the values, so a Python `if` that depends on a *value* cannot be decided while
# tracing. The function below scales `x` down only when its largest magnitude exceeds 1 (a tiny version
# of gradient clipping).
#
# **Prediction**: PyTorch splits the function into two graphs around the `if` (a *graph break*) and runs
# the `if` in Python; JAX refuses (`TracerBoolConversionError`, a `ConcretizationTypeError`); TensorFlow's
# AutoGraph rewrites the `if` into a graph conditional. All three accept an explicit conditional.

# %%
def clip_torch(x):
    m = x.abs().max()
    if m > 1:
        return x / m
    return x


def clip_jax(x):
    m = jnp.abs(x).max()
    if m > 1:
        return x / m
    return x


def clip_tf(x):
    m = tf.reduce_max(tf.abs(x))
    if m > 1:
        return x / m
    return x


big, tiny = (np.random.default_rng(1).standard_normal(64, dtype=np.float32) * s for s in (3.0, 0.1))
breaks = graphs.torch_graph_breaks(clip_torch, graphs.to_framework("torch", big))
breaks

# %%
# NBVAL_CHECK_OUTPUT
print(f"torch: {breaks.graph_count} graphs, {breaks.break_count} graph break")
try:
    jax.jit(clip_jax)(jnp.asarray(big))
    print("jax: traced without error")
except jax.errors.ConcretizationTypeError as err:  # TracerBoolConversionError is a subclass
    print(f"jax: {type(err).__name__} (a ConcretizationTypeError: {isinstance(err, jax.errors.ConcretizationTypeError)})")
tf_graph = graphs.capture_tf(clip_tf, tf.constant(big))
print("tensorflow: AutoGraph turned the if into", [op for op in tf_graph.ops if "If" in op])

# %% slideshow={"slide_type": "subslide"}
# What AutoGraph wrote instead of our `if` (the first lines of the converted function):
print("\n".join(line for line in tf.autograph.to_code(clip_tf).splitlines() if "if_stmt" in line or "def " in line))

# %% [markdown] slideshow={"slide_type": "subslide"}
# The fixes compute both branches (`where`) or let the graph choose (`cond`), so the whole function is one
# graph. `torch.compile(..., fullgraph=True)` proves there is no break: it raises if there is one.

# %%
def clip_torch_where(x):
    m = x.abs().max()
    return torch.where(m > 1, x / m, x)


def clip_torch_cond(x):
    m = x.abs().max()
    return torch.cond(m > 1, lambda x, m: x / m, lambda x, m: x.clone(), (x, m))


def clip_jax_where(x):
    m = jnp.abs(x).max()
    return jnp.where(m > 1, x / m, x)


def clip_jax_cond(x):
    m = jnp.abs(x).max()
    return jax.lax.cond(m > 1, lambda x: x / m, lambda x: x, x)


def clip_tf_cond(x):
    m = tf.reduce_max(tf.abs(x))
    return tf.cond(m > 1, lambda: x / m, lambda: x)


fixes = {
    ("torch", "torch.where"): (clip_torch, torch.compile(clip_torch_where, fullgraph=True)),
    ("torch", "torch.cond"): (clip_torch, torch.compile(clip_torch_cond, fullgraph=True)),
    ("jax", "jnp.where"): (clip_jax, jax.jit(clip_jax_where)),
    ("jax", "jax.lax.cond"): (clip_jax, jax.jit(clip_jax_cond)),
    ("tensorflow", "AutoGraph if"): (clip_tf, tf.function(clip_tf, jit_compile=True)),
    ("tensorflow", "tf.cond"): (clip_tf, tf.function(clip_tf_cond, jit_compile=True)),
}

# %%
# NBVAL_CHECK_OUTPUT
for (fw, how), (eager_fn, fixed_fn) in fixes.items():
    diffs = [graphs.max_abs_diff(eager_fn(x), fixed_fn(x)) for x in (graphs.to_framework(fw, big),
                                                                     graphs.to_framework(fw, tiny))]
    assert max(diffs) < 1e-6, (fw, how, diffs)
    print(f"{fw:<10} {how:<13} compiled, equal to eager on both branches (max abs diff < 1e-6): True")

# %%
Markdown(
    f"PyTorch did not fail: it produced {breaks.graph_count} graphs with {breaks.break_count} break "
    f"(reason: `{breaks.reasons[0] if breaks.reasons else 'none'}`) and ran the `if` in Python between them, "
    "which is correct but gives the compiler two smaller pieces and costs a trip through Python on every "
    "call. JAX stopped with an error, TensorFlow quietly rewrote the `if`. The seed articles list "
    "data-dependent control flow as a migration pitfall and advise refactoring it first; the explicit "
    "`where`/`cond` forms above are that refactoring, and each one was checked against eager on inputs that "
    "take both branches."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Debugging compiled code: where did my `print` go?
#
# A Python `print` inside a traced function runs when Python runs, i.e. while tracing.
#
# **Prediction**: under `jax.jit` and `tf.function` the Python `print` runs once (at the first call, showing
# a tracer or a symbolic tensor, not numbers), while `jax.debug.print` and `tf.print` are ops in the graph
# and print on every call. Dynamo cannot put a `print` of a tensor into a graph: it breaks the graph
# and runs the `print` in Python on every call.

# %%
def noisy_torch(x):
    print("  torch: python print, sum =", x.sum())
    return x * 2


def noisy_jax(x):
    print("  jax: python print, x =", x)
    jax.debug.print("  jax: jax.debug.print, sum = {s}", s=x.sum())
    return x * 2


def noisy_tf(x):
    print("  tensorflow: python print, x =", x)
    tf.print("  tensorflow: tf.print, sum =", tf.reduce_sum(x), output_stream=sys.stdout)
    return x * 2


noisy = {"torch": torch.compile(noisy_torch, backend="eager"), "jax": jax.jit(noisy_jax),
         "tensorflow": tf.function(noisy_tf)}
for fw, fn in noisy.items():
    print(f"{fw}, 3 calls:")
    for i in range(3):
        cu.timing.sync(fn(graphs.to_framework(fw, np.full(3, i, np.float32))))
    jax.effects_barrier()

# %% [markdown] slideshow={"slide_type": "subslide"}
# Counting the same thing (each compiled function called 3 more times; its tracing is already done):

# %%
# NBVAL_CHECK_OUTPUT
import contextlib
import io

for fw, fn in noisy.items():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for i in range(3):
            cu.timing.sync(fn(graphs.to_framework(fw, np.full(3, i, np.float32))))
        jax.effects_barrier()
    text = out.getvalue()
    graph_print = {"torch": None, "jax": "jax.debug.print", "tensorflow": "tf.print"}[fw]
    print(f"{fw:<10} python print ran {text.count('python print')} of 3 calls"
          + (f"; {graph_print} ran {text.count(graph_print)} of 3" if graph_print else ""))
with contextlib.redirect_stdout(io.StringIO()):  # explain runs the function, which prints
    print_breaks = graphs.torch_graph_breaks(noisy_torch, torch.ones(3))
print(f"torch: print of a tensor caused {print_breaks.break_count} graph break")

# %%
Markdown(
    "So: in JAX use `jax.debug.print` (or `jax.debug.breakpoint`), in TensorFlow `tf.print`; a Python "
    "`print` there shows *what is traced* (shapes and dtypes), once, which is itself useful for catching "
    "retracing. In PyTorch a `print` of a tensor keeps working, with real values on every call, because "
    "Dynamo leaves it out of the graph: it costs a graph break. `torch.compile(fullgraph=True)` turns such "
    "surprises into errors, and `TORCH_LOGS=graph_breaks` lists every break with its reason."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. The rollback plan: compile, check, or fall back
#
# The seed articles' checklist asks for a rollback path: keep the eager code working. `graphs.compile_or_fallback`
# tries to compile, runs the result on a sample, compares it with eager, and returns the compiled function
# only if both steps succeed; otherwise the eager function, with a one-line reason.
#
# **Prediction**: the gelu chain compiles everywhere; the clipping function with a Python `if` falls back in
# PyTorch (with `fullgraph=True` a graph break is a failure) and in JAX, but compiles in TensorFlow
# (AutoGraph); a function that keeps Python state compiles but *disagrees* with eager, and is caught.

# %%
history = []


def running_sum_jax(x):  # keeps Python state: the traced version bakes in what it saw while tracing
    history.append(x)
    return sum(history)


sample = {fw: inputs(fw, 64) for fw in FRAMEWORKS}
decisions = {
    ("torch", "gelu chain"): graphs.compile_or_fallback(chains["torch"], sample["torch"], framework="torch"),
    ("torch", "clip with Python if"): graphs.compile_or_fallback(clip_torch, sample["torch"][:1], framework="torch"),
    ("jax", "gelu chain"): graphs.compile_or_fallback(chains["jax"], sample["jax"], framework="jax"),
    ("jax", "clip with Python if"): graphs.compile_or_fallback(clip_jax, sample["jax"][:1], framework="jax"),
    ("jax", "running sum in a Python list"): graphs.compile_or_fallback(running_sum_jax, sample["jax"][:1],
                                                                        framework="jax"),
    ("tensorflow", "gelu chain"): graphs.compile_or_fallback(chains["tensorflow"], sample["tensorflow"],
                                                             framework="tensorflow", jit_compile=True),
    ("tensorflow", "clip with Python if"): graphs.compile_or_fallback(clip_tf, sample["tensorflow"][:1],
                                                                      framework="tensorflow"),
}
for (fw, name), d in decisions.items():
    print(f"{fw:<10} {name:<30} {'compiled' if d.compiled else 'EAGER'}: {d.reason}")

# %%
# NBVAL_CHECK_OUTPUT
for (fw, name), d in decisions.items():
    print(f"{fw:<10} {name:<30} compiled: {d.compiled}")
x_check = inputs("torch", 64)
assert graphs.max_abs_diff(decisions["torch", "gelu chain"](*x_check), chains["torch"](*x_check)) < 1e-5
assert graphs.max_abs_diff(decisions["torch", "clip with Python if"](x_check[0]), clip_torch(x_check[0])) == 0
print("every decision's function equals eager on a fresh input: True")

# %%
fallbacks = [f"{fw} {name}" for (fw, name), d in decisions.items() if not d.compiled]
Markdown(
    f"{len(decisions) - len(fallbacks)} of {len(decisions)} functions were kept compiled; "
    f"{len(fallbacks)} fell back to eager ({', '.join(fallbacks)}), each with a reason a log line can carry. "
    "The running-sum case is the dangerous one: it compiles without complaint and returns a wrong number, "
    "because the list was read once at trace time. Only the comparison with eager catches it; this is why "
    "every compiled result in this course is checked against eager."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8. A whole training step, compiled in all three frameworks
#
# Forward, loss, backward and the SGD update of the course's tiny MLP (32-64-64-10, identical initial
# weights in all three) on one fixed batch, 20 steps, eager and compiled:
# - PyTorch: eager is the usual `nn.Module` + `torch.optim.SGD` loop; compiled is the same step written as a
#   pure function with `torch.func.grad_and_value` and `torch.compile`, which captures it as one graph
#   (`loss.backward()` and `optimizer.step()` inside `torch.compile` would break it into several);
# - JAX: a pure step with `jax.value_and_grad` and a hand-written SGD update, then `jax.jit`;
# - TensorFlow: a Keras model's step with `tf.GradientTape` and `keras.optimizers.SGD`, then
#   `tf.function(jit_compile=True)`.
#
# **Prediction**: same losses as eager to float32 rounding (about 1e-6); with a model this small every
# step is dominated by per-op overhead, so compiling should pay off clearly.

# %%
import keras

BATCH = cu.env.pick(ci=256, cpu=1024)
LR, STEPS = 0.1, 20
x_np, y_np = cu.data.classification(BATCH)
# float32 rounding on CPU; GPUs (TF32) and TPUs (bf16 passes) run float32 matmuls at lower precision by default
TOL = cu.env.pick(ci=1e-4, cpu=1e-4, gpu=1e-2, tpu=1e-2)


def make_torch_eager_step(model):
    opt = torch.optim.SGD(model.parameters(), lr=LR)

    def step(x, y):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.detach()
    return step


def make_torch_pure_step(model):
    state = {k: v.detach() for k, v in model.named_parameters()}

    def loss_fn(params, x, y):
        return torch.nn.functional.cross_entropy(torch.func.functional_call(model, params, (x,)), y)

    @torch.compile
    def update(params, x, y):
        grads, loss = torch.func.grad_and_value(loss_fn)(params, x, y)
        return {k: p - LR * grads[k] for k, p in params.items()}, loss

    def step(x, y):
        new, loss = update(state, x, y)
        state.update(new)
        return loss
    return step


def jax_loss(params, x, y):
    logp = jax.nn.log_softmax(cu.models.jax_mlp_apply(params, x))
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))


def jax_step(params, x, y):
    loss, grads = jax.value_and_grad(jax_loss)(params, x, y)
    return jax.tree.map(lambda p, g: p - LR * g, params, grads), loss


def make_jax_step(jit):
    state = {"params": cu.models.jax_mlp_params()}
    update = jax.jit(jax_step) if jit else jax_step

    def step(x, y):
        state["params"], loss = update(state["params"], x, y)
        return loss
    return step


def make_tf_step(jit):
    model, opt = cu.models.keras_mlp(), keras.optimizers.SGD(LR)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    return tf.function(step, jit_compile=True) if jit else step


steps = {
    "torch eager": make_torch_eager_step(cu.models.torch_mlp().to(DEVICE)),
    "torch compiled": make_torch_pure_step(cu.models.torch_mlp().to(DEVICE)),
    "jax eager": make_jax_step(jit=False),
    "jax jit": make_jax_step(jit=True),
    "tensorflow eager": make_tf_step(jit=False),
    "tensorflow jit_compile": make_tf_step(jit=True),
}
batch = {fw: (graphs.to_framework(fw, x_np), graphs.to_framework(fw, y_np)) for fw in FRAMEWORKS}
losses = {name: [float(fn(*batch[name.split()[0]])) for _ in range(STEPS)] for name, fn in steps.items()}

# %%
fig, (ax,) = cu.plotting.figure(width=6.4, height=3.4)
for i, (name, curve) in enumerate(losses.items()):
    ax.plot(range(1, STEPS + 1), curve, color=cu.plotting.color_for(name, i),
            linestyle="--" if "eager" in name else "-", marker="o" if "eager" in name else None, markersize=3,
            label=name)
ax.set_xlabel("step")
ax.set_ylabel("training loss")
ax.set_title("20 SGD steps, eager (dashed, dots) and compiled (solid): the curves overlap")
ax.legend(fontsize=8, ncols=2)
fig

# %%
# NBVAL_CHECK_OUTPUT
for fw, compiled_name in (("torch", "torch compiled"), ("jax", "jax jit"), ("tensorflow", "tensorflow jit_compile")):
    diff = np.max(np.abs(np.array(losses[f"{fw} eager"]) - np.array(losses[compiled_name])))
    assert diff < TOL, (fw, diff)
    print(f"{fw:<10} {STEPS} losses of the compiled step equal eager (max abs diff < {TOL:g}): True")
first = [losses[f"{fw} eager"][0] for fw in FRAMEWORKS]
print(f"same initial loss in all three frameworks (within {TOL:g}):", bool(np.ptp(first) < TOL))
print("loss went down in every run:", all(c[-1] < c[0] for c in losses.values()))

# %% slideshow={"slide_type": "subslide"}
step_m = {name: cu.timing.benchmark(fn, *batch[name.split()[0]], min_time=4 * MIN_TIME, label=name)
          for name, fn in steps.items()}
step_table = cu.timing.compare(step_m, baseline="torch eager")
step_table

# %%
cu.plotting.time_bars(step_m, log=True, title="One training step: median, whiskers = quartiles")

# %%
step_speedup = {fw: step_m[f"{fw} eager"].median / step_m[c].median
                for fw, c in (("torch", "torch compiled"), ("jax", "jax jit"), ("tensorflow", "tensorflow jit_compile"))}
Markdown("\n".join(
    [f"One step on a batch of {BATCH} (medians of this run):", ""]
    + [f"- **{fw}**: {fmt(step_m[f'{fw} eager'].median)} eager, compiled step **{s:.2f}x** as fast"
       for fw, s in step_speedup.items()]
    + ["", f"The MLP has {sum(w.size + b.size for w, b in cu.models.mlp_weights()):,} parameters, so a step is a "
       "few dozen small ops and eager time is mostly dispatch: removing it is what a compiler does best. "
       "JAX's eager mode is especially slow because each primitive runs as its own small compiled program; "
       "`jax.jit` is how JAX is meant to be used."]
    + [f"Where the compiled step is not faster ({', '.join(fw for fw, s in step_speedup.items() if s <= 1)}), "
       "look at the spread in the plot: on a busy or very small CPU, thread-pool hand-offs inside the "
       "generated code can cost more than the ops themselves." for _ in [0] if min(step_speedup.values()) <= 1]
))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# **1. Break-even for your job.** A training job calls the compiled gelu chain 50,000 times. Using this
# run's measurements (`eager_m`, `compiled_m`), how many seconds does compiling save in each framework?
#
# <details><summary>Hint</summary>Total time is <code>first_call + (calls - 1) * per_call</code>:
# <code>graphs.cumulative_time</code> computes it; compare eager and compiled.</details>

# %% jupyter={"source_hidden": true}
CALLS = 50_000
for fw in FRAMEWORKS:
    e, c = eager_m[fw], compiled_m[fw]
    saved = graphs.cumulative_time(e.first_call, e.median, [CALLS])[0] - graphs.cumulative_time(
        c.first_call, c.median, [CALLS])[0]
    print(f"{fw:<10} over {CALLS:,} calls compiling {'saves' if saved >= 0 else 'costs'} {abs(saved):.2f} s")

# %% [markdown] slideshow={"slide_type": "subslide"}
# **2. A Python flag is fine, if it is static.** `def f(x, scale_down): return x / 2 if scale_down else x`
# fails under `jax.jit` when `scale_down` is traced. Make it work with `static_argnums` and count how many
# traces `True`, `False`, `True` cause.
#
# <details><summary>Hint</summary><code>jax.jit(f, static_argnums=1)</code> traces once per distinct value
# of the static argument; <code>graphs.count_compiles("jax", f, [(x, True), ...], static_argnums=1)</code>
# counts them.</details>

# %% jupyter={"source_hidden": true}
def f(x, scale_down):
    return x / 2 if scale_down else x


x1 = jnp.ones(4)
print("traces:", graphs.count_compiles("jax", f, [(x1, True), (x1, False), (x1, True)], static_argnums=1))

# %% [markdown] slideshow={"slide_type": "subslide"}
# **3. Python numbers retrace `tf.function`.** Call `tf.function(lambda x, s: x * s)` with `s` = 0.5, 1.5,
# 2.5 as Python floats, then as `tf.constant`s. How many traces each time, and why?
#
# <details><summary>Hint</summary>A Python value is part of the trace's signature (it becomes a constant in
# the graph); a tensor is an input. <code>graphs.count_compiles("tf", ...)</code> counts.</details>

# %% jupyter={"source_hidden": true}
x3 = tf.ones(4)
as_python = graphs.count_compiles("tf", lambda x, s: x * s, [(x3, s) for s in (0.5, 1.5, 2.5)])
as_tensor = graphs.count_compiles("tf", lambda x, s: x * s, [(x3, tf.constant(s)) for s in (0.5, 1.5, 2.5)])
print(f"Python floats: {as_python} traces; tf.constant: {as_tensor} trace")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary

# %%
rows = []
for fw in FRAMEWORKS:
    rows += [
        (f"{fw}: warm-up (first compiled call)", compiled_m[fw].first_call, "s", f"gelu chain, {N:,} elements"),
        (f"{fw}: steady-state speed-up", speedup[fw], "x", "compiled vs eager, same size"),
        (f"{fw}: break-even", break_even[fw], "calls", "cumulative compiled time below eager"),
        (f"{fw}: training-step speed-up", step_speedup[fw], "x", f"tiny MLP, batch {BATCH}"),
    ]
rows.append(("seed claim: compute saved by a compiled framework", 0.30, "fraction",
             "~30%, i.e. a 1.43x speed-up; not measured by the seed"))
cu.summary.table("01_dynamic_vs_static", rows)

# %%
def saving(s):
    return f"saved {100 * (1 - 1 / s):.0f}% of the eager time" if s >= 1 else f"took {s ** -1:.1f}x the eager time"


Markdown(
    "The seed articles claim that moving to a compiled framework saves about 30% of compute (a 1.43x speed-up). "
    "On this machine the compiled training step of the tiny MLP "
    + ", ".join(f"{saving(s)} ({fw})" for fw, s in step_speedup.items())
    + ", and the gelu chain ran "
    + ", ".join(f"{speedup[fw]:.2f}x ({fw})" for fw in FRAMEWORKS)
    + f" as fast as eager at {N:,} elements. Neither is the seed's number, and neither should be: the saving depends "
    "on how much of a step is overhead and unfused memory traffic (large for tiny models and elementwise "
    "chains, small for big matrix multiplications, which are already one efficient kernel), and it only "
    "counts after the warm-up has been paid back. Measure on your own model before budgeting a migration."
)

# %% [markdown]
# **What to remember**
# - A compiler sees the whole function as a graph: it can fuse ops and drop per-op dispatch; eager sees one op
#   at a time. The gain is largest for small tensors and many small ops.
# - Compiling costs a warm-up (seconds in PyTorch, less in JAX/TensorFlow) and again for every new shape;
#   count recompilations and make the varying dimension dynamic, padded or part of the signature.
# - Capture breaks on Python control flow over tensor values and on Python side effects; use
#   `where`/`cond`, `jax.debug.print`/`tf.print`, and always check compiled results against eager, with an
#   eager fallback ready.
#
# **Next**: notebook 02 opens the fused kernel itself: how many bytes the chain moves, the roofline of this
# machine, and how close each compiler gets to it.

# %%
print(cu.summary.last_verified())
