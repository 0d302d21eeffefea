"""Notebook 00's workloads in each framework present: a matmul (the async-dispatch trap), the gelu chain
eager and compiled (first call and steady state), and ``x + 1`` over sizes (overhead, then bandwidth)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from course_utils import display, env, interop, models, timing, validate
from course_utils.measuring.allocator import outputs_worth, tensor_bytes
from course_utils.measuring.speedups import variant_name


def _frameworks(frameworks: Sequence[str]) -> list[str]:
    validate.non_empty("frameworks", frameworks)
    return [validate.framework(f, "frameworks") for f in frameworks]


def torch_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def matmul_workload(framework: str, n: int) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """(fn, args) multiplying an n x n fp32 matrix by itself: torch.mm, jax.jit(a @ a), tf.linalg.matmul."""
    framework = validate.framework(framework)
    n = validate.number("n", n, low=2, high=32768, integer=True)
    if framework == "torch":
        import torch

        x = torch.randn(n, n, device=torch_device())
        return torch.mm, (x, x)
    if framework == "jax":
        import jax

        return jax.jit(lambda a: a @ a), (jax.random.normal(jax.random.key(0), (n, n)),)
    tf = env.import_tensorflow()
    return tf.linalg.matmul, (tf.random.normal((n, n), seed=0),) * 2


Timings = dict[str, timing.Measurement]


def dispatch_trap(frameworks: Sequence[str], n: int) -> tuple[Timings, Timings]:
    """(naive, synchronised) timings of an n x n matmul per framework: the clock read when the call returns,
    and ``timing.benchmark``'s, which waits for the result."""
    naive, honest = {}, {}
    for framework in _frameworks(frameworks):
        fn, args = matmul_workload(framework, n)
        naive[framework] = timing.dispatch_only(fn, *args, label=f"{framework} naive")
        honest[framework] = timing.benchmark(fn, *args, label=f"{framework} synchronised")
    return naive, honest


def host_copy_runs(frameworks: Sequence[str], n: int, *, min_time: float = 0.4,
                   ) -> dict[str, tuple[timing.Measurement, timing.Measurement, bool]]:
    """Per framework: (the n x n matmul timed with ``np.asarray`` of its result and no other wait, the same
    matmul synchronised, whether the host copy copied bytes), the two timed in alternating rounds
    (``interleaved``) so that they see the same moments. It copies nothing where two conversions of one result
    share memory: NumPy then views the framework's own buffer (CPU tensors), and the time is the wait alone."""
    found = {}
    for framework in _frameworks(frameworks):
        fn, args = matmul_workload(framework, n)
        result = timing.sync(fn(*args))
        copied = not np.shares_memory(interop.to_numpy(result), interop.to_numpy(result))
        runs = timing.interleaved({"host copy": lambda f=fn, a=args: interop.to_numpy(f(*a)),
                            "synchronised": lambda f=fn, a=args: f(*a)},
                           min_time=min_time, sync={"host copy": False})
        found[framework] = (runs["host copy"], runs["synchronised"], copied)
    return found


def chain_inputs(frameworks: Sequence[str], size: int, seed: int = 0) -> tuple[np.ndarray, Any, dict[str, tuple]]:
    """(x, bias, {framework: (x, bias) in that framework}) for ``models.gelu_chain`` over ``size`` floats."""
    size = validate.number("size", size, low=1, integer=True)
    rng = np.random.default_rng(validate.non_negative("seed", seed, integer=True))
    x_np = rng.standard_normal(size, dtype=np.float32)
    bias = np.float32(0.1)
    inputs: dict[str, tuple] = {}
    for framework in _frameworks(frameworks):
        if framework == "torch":
            import torch

            device = torch_device()
            inputs[framework] = (torch.from_numpy(x_np).to(device), torch.tensor(bias, device=device))
        elif framework == "jax":
            import jax.numpy as jnp

            inputs[framework] = (jnp.asarray(x_np), jnp.asarray(bias))
        else:
            tf = env.import_tensorflow()
            inputs[framework] = (tf.constant(x_np), tf.constant(bias))
    return x_np, bias, inputs


def chain_runs(inputs: dict[str, tuple]) -> tuple[Timings, Timings, dict]:
    """(eager, compiled, compiled functions) for the gelu chain in each framework of ``inputs``."""
    validate.non_empty("inputs", inputs)
    eager, compiled, functions = {}, {}, {}
    for framework, args in inputs.items():
        framework = validate.framework(framework, "inputs")
        chain = models.chain_for(framework)
        functions[framework] = interop.compile_default(framework, chain)
        eager[framework] = timing.benchmark(chain, *args, label=f"{framework} eager")
        compiled[framework] = timing.benchmark(functions[framework], *args, label=f"{framework} compiled")
    return eager, compiled, functions


def chain_faults(inputs: dict[str, tuple], compiled: dict[str, Callable[..., Any]]) -> dict[str, tuple[float, float]]:
    """Page faults per call of the eager and the compiled chain in each framework of ``inputs``, in outputs'
    worth (one output's worth: the chain's output in 4 KiB pages): what fresh memory its outputs got."""
    validate.non_empty("inputs", inputs)
    found = {}
    for framework, args in inputs.items():
        size = tensor_bytes(args[0])
        found[framework] = (outputs_worth(models.chain_for(framework), *args, output_bytes=size),
                            outputs_worth(compiled[framework], *args, output_bytes=size))
    return found


def _add_one(framework: str, compiled: bool) -> Callable[[int], tuple[Callable[..., Any], tuple]]:
    if framework == "torch":
        import torch

        fn = torch.compile(lambda a: a + 1) if compiled else (lambda a: torch.add(a, 1))
        return lambda s: (fn, (torch.ones(s, device=torch_device()),))
    if framework == "jax":
        import jax
        import jax.numpy as jnp

        fn = jax.jit(lambda a: a + 1) if compiled else (lambda a: jnp.add(a, 1))
        return lambda s: (fn, (jnp.ones(s),))
    tf = env.import_tensorflow()
    spec = [tf.TensorSpec([None], tf.float32)]  # one trace for every size (XLA still compiles per shape)
    if compiled:
        fn = tf.function(lambda a: a + 1, jit_compile=True, input_signature=spec)
    else:
        fn = lambda a: tf.add(a, 1.0)  # noqa: E731
    return lambda s: (fn, (tf.ones([s]),))


def overhead_sweep(frameworks: Sequence[str], sizes: Sequence[int], *,
                   min_time: float = 0.03) -> dict[str, list[timing.Measurement]]:
    """Time ``x + 1`` at each size, eager and compiled, in each framework: {variant name: measurements}."""
    validate.non_empty("sizes", sizes)
    sizes = [validate.number(f"sizes[{i}]", s, low=1, integer=True) for i, s in enumerate(sizes)]
    min_time = validate.number("min_time", min_time, low=0, high=10, low_open=True)
    series: dict[str, list[timing.Measurement]] = {}
    for compiled in (False, True):
        for framework in _frameworks(frameworks):
            make = _add_one(framework, compiled)
            name = variant_name(framework, compiled)
            series[name] = [_timed(make, s, name, min_time, faults=s in sizes[-2:]) for s in sizes]
    return series


def _timed(make: Callable[[int], tuple[Callable[..., Any], tuple]], size: int, name: str, min_time: float, *,
           faults: bool) -> timing.Measurement:
    """One point of the sweep; at the top sizes (``faults``) its page faults per call, in outputs' worth, ride
    along in ``metadata["faults"]``."""
    fn, args = make(size)
    found = timing.benchmark(fn, *args, min_time=min_time, label=f"{name} {size}")
    if faults:
        found.metadata["faults"] = outputs_worth(fn, *args, output_bytes=4 * size)
    return found


def _call(make: Callable[[int], tuple[Callable[..., Any], tuple]], size: int) -> tuple:
    fn, args = make(size)
    return (fn, *args)


def torch_eager_threads(sizes: Sequence[int], *, rounds: int = 4,
                        min_time: float = 0.2) -> dict[tuple[int, int], timing.Measurement]:
    """torch eager ``x + 1`` at each of ``sizes`` on one thread and on torch's thread count, all timed in
    ``rounds`` alternating rounds (``interleaved``) so that they see the same moments: {(size, threads):
    Measurement}. Each call sets its thread count where it differs (paid by the first call, reported apart);
    the thread count is restored after."""
    import torch

    validate.non_empty("sizes", sizes)
    sizes = [validate.number(f"sizes[{i}]", s, low=1, integer=True) for i, s in enumerate(sizes)]
    threads = torch.get_num_threads()
    calls: dict[str, Callable[[], Any]] = {}
    keys: dict[str, tuple[int, int]] = {}
    for size in sizes:
        fn, *args = _call(_add_one("torch", False), size)
        for count in sorted({1, threads}):
            name = f"{size:,} elements, {count} thread{'s' if count > 1 else ''}"
            calls[name] = lambda f=fn, a=args, c=count: _on_threads(c, f, a)
            keys[name] = (int(size), count)
    try:
        found = timing.interleaved(calls, rounds=rounds, min_time=min_time)
    finally:
        torch.set_num_threads(threads)
    return {keys[name]: m for name, m in found.items()}


def _on_threads(count: int, fn: Callable[..., Any], args: Sequence[Any]) -> Any:
    import torch

    if torch.get_num_threads() != count:
        torch.set_num_threads(count)
    return fn(*args)


def host_copy_text(host: dict[str, tuple[timing.Measurement, timing.Measurement, bool]], result_bytes: int) -> str:
    """What ``host_copy_runs`` found, per framework: the host copy against the synchronised call with both
    quartile ranges, whether the two lie apart (``timing.apart``), and what that difference can be."""
    validate.non_empty("host", host)
    fmt, parts = display.format_time, []
    for framework, (copy, synced, copied) in host.items():
        apart = timing.apart(copy, synced)
        text = (f"{framework} {fmt(copy.median)} against {fmt(synced.median)} synchronised "
                f"({copy.median / synced.median - 1:+.0%}; quartiles {timing.quartiles(copy, fmt)} against "
                f"{timing.quartiles(synced, fmt)}: {'beyond' if apart else 'within'} the noise); ")
        if copied:
            text += (f"it copied the {display.format_bytes(result_bytes)} result"
                     + (", which is the difference" if apart else ", too little to tell from the noise"))
        else:
            text += ("it copied nothing (NumPy viewed the framework's own buffer)"
                     + (", yet the difference is beyond the noise: what it is, is not established by this run"
                        if apart else ""))
        parts.append(text)
    return "; ".join(parts) + ". "
