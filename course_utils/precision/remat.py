"""Activation checkpointing (rematerialisation) measured in each framework on the same residual MLP blocks,
h + W2 · gelu(W1 · h) with a 4x-wide inside (a transformer's feed-forward shape), exact GELU everywhere.

torch: bytes saved for backward, the step's peak memory (CUDA allocator or process RSS) and its time.
JAX: the residuals of ``jax.vjp`` sized by XLA, and the compiled step's FLOPs (``cost_analysis``) and temp bytes
(``memory_analysis``) with ``jax.checkpoint`` (``prevent_cse=True``, its default) and without.
TensorFlow: ``tf.recompute_grad`` gives the same gradients.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from course_utils import display, env, timing, validate
from course_utils.memory import compiled_stats, jax_compiled_stats, saved_activation_bytes, torch_peak_bytes


def block_weights(width: int, blocks: int, *, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """(W1: width x 4width, W2: 4width x width) per block, float32, scaled so that activations stay O(1)."""
    width = validate.number("width", width, low=1, high=65536, integer=True)
    blocks = validate.number("blocks", blocks, low=1, high=1024, integer=True)
    validate.non_negative("seed", seed, integer=True)
    rng = np.random.default_rng(seed)
    return [((rng.standard_normal((width, 4 * width)) / np.sqrt(width)).astype(np.float32),
             (rng.standard_normal((4 * width, width)) / np.sqrt(4 * width) / blocks).astype(np.float32))
            for _ in range(blocks)]


@dataclass(frozen=True)
class Remat:
    """One framework's numbers without (index 0) and with (index 1) checkpointing."""

    framework: str
    saved: tuple[int, int]
    peak: tuple[int | None, int | None] = (None, None)
    flops: tuple[float, float] = (float("nan"), float("nan"))
    temp: tuple[int | None, int | None] = (None, None)
    time: tuple[Any, Any] = (None, None)
    same_gradients: bool = False
    dots: tuple[int | None, int | None] = (None, None)
    live_peak: tuple[int | None, int | None] = (None, None)

    @property
    def saved_ratio(self) -> float:
        return self.saved[1] / self.saved[0]

    @property
    def time_ratio(self) -> float:
        return self.time[1].median / self.time[0].median

    def table(self) -> display.Table:
        fmt = lambda v: "-" if v is None else display.format_bytes(v)  # noqa: E731
        rows = [("saved for backward", fmt(self.saved[0]), fmt(self.saved[1]))]
        if self.live_peak[0] is not None and self.live_peak != self.peak:
            rows.append(("peak of live tensors in a step", fmt(self.live_peak[0]), fmt(self.live_peak[1])))
        if self.peak[0] is not None:
            rows.append(("peak memory of a step" + (" (process RSS)" if self.live_peak != self.peak else ""),
                         fmt(self.peak[0]), fmt(self.peak[1])))
        if np.isfinite(self.flops[0]):
            rows.append(("FLOPs of the compiled step", f"{self.flops[0] / 1e9:.2f} G", f"{self.flops[1] / 1e9:.2f} G"))
        if self.dots[0] is not None:
            rows.append(("dot ops in the compiled step", str(self.dots[0]), str(self.dots[1])))
        if self.temp[0] is not None:
            rows.append(("temp buffers of the compiled step", fmt(self.temp[0]), fmt(self.temp[1])))
        if self.time[0] is not None:
            rows.append(("step time (median)", display.format_time(self.time[0].median),
                         display.format_time(self.time[1].median)))
        return display.table(["", "without checkpointing", "with checkpointing"], rows, title=self.framework)

    def __repr__(self) -> str:
        return repr(self.table())

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


def _timed(fn: Callable[..., Any], *args: Any, min_time: float, label: str) -> Any:
    return timing.benchmark(fn, *args, warmup=1, min_time=min_time, min_repeats=3, max_repeats=10, label=label)


def torch_remat(weights: list[tuple[np.ndarray, np.ndarray]], batch: int, *, device: Any = "cpu",
                min_time: float = 0.1) -> Remat:
    """Saved bytes, peak and time of a torch training step over the blocks, with and without checkpointing."""
    import torch
    import torch.nn.functional as F
    from torch.utils.checkpoint import checkpoint

    validate.non_empty("weights", weights)
    batch = validate.number("batch", batch, low=1, high=2**24, integer=True)
    validate.positive("min_time", min_time)
    tw = [(torch.tensor(a, device=device, requires_grad=True), torch.tensor(b, device=device, requires_grad=True))
          for a, b in weights]
    flat = [p for pair in tw for p in pair]
    x = torch.ones(batch, weights[0][0].shape[0], device=device)

    def block(h: Any, w1: Any, w2: Any) -> Any:
        return h + F.gelu(h @ w1) @ w2

    def loss(remat: bool) -> Any:
        h = x
        for w1, w2 in tw:
            h = checkpoint(block, h, w1, w2, use_reentrant=False) if remat else block(h, w1, w2)
        return (h**2).mean()

    def step(remat: bool) -> list[Any]:
        for p in flat:
            p.grad = None
        loss(remat).backward()
        return [p.grad for p in flat]

    saved = tuple(saved_activation_bytes(lambda r=r: loss(r), exclude=flat) for r in (False, True))
    peak = tuple(torch_peak_bytes(lambda r=r: step(r), device) for r in (False, True))
    cuda = torch.device(device).type == "cuda"  # there the allocator's peak already counts live tensors only
    live = peak if cuda else tuple(torch_live_peak(lambda r=r: step(r)) for r in (False, True))
    times = tuple(_timed(step, r, min_time=min_time, label=f"torch remat={r}") for r in (False, True))
    same = all(torch.allclose(a, b, rtol=1e-4, atol=1e-6) for a, b in zip(step(False), step(True)))
    return Remat("torch", saved, peak, time=times, same_gradients=bool(same),  # type: ignore[arg-type]
                 live_peak=live)  # type: ignore[arg-type]


def torch_live_peak(fn: Callable[[], Any]) -> int | None:
    """Peak bytes of the tensors ``fn()`` allocates that are alive at once (CPU), from the PyTorch profiler's
    memory timeline: what CUDA's ``max_memory_allocated`` reports on a GPU. The process RSS is larger by what the
    allocator (glibc malloc) keeps mapped after a tensor is freed. None where the profiler cannot tell."""
    validate.function("fn", fn)
    try:
        from torch.profiler import ProfilerActivity, profile
        from torch.profiler._memory_profiler import Action
    except ImportError:  # a torch without the memory profiler
        return None
    fn()  # warm: first-call allocations (caches, lazy init) are not the step's
    with env.silenced_stderr(), profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
                                        with_stack=True) as prof:
        fn()
    live = peak = 0
    for _, action, _, size in prof._memory_profile().timeline:
        live += size if action == Action.CREATE else -size if action == Action.DESTROY else 0
        peak = max(peak, live)
    return int(peak) if peak > 0 else None


def jax_remat(weights: list[tuple[np.ndarray, np.ndarray]], batch: int, *, min_time: float = 0.1,
              prevent_cse: bool = True) -> Remat:
    """vjp residuals, compiled FLOPs and temp bytes, and time of a JAX gradient step, with and without remat."""
    import jax
    import jax.numpy as jnp

    validate.non_empty("weights", weights)
    batch = validate.number("batch", batch, low=1, high=2**24, integer=True)
    validate.positive("min_time", min_time)
    validate.instance("prevent_cse", prevent_cse, bool)
    params = [(jnp.asarray(a), jnp.asarray(b)) for a, b in weights]
    x = jnp.ones((batch, weights[0][0].shape[0]))
    weight_bytes = sum(a.nbytes for a in jax.tree.leaves(params))  # vjp residuals include the weights

    def block(p: Any, h: Any) -> Any:
        return h + jax.nn.gelu(h @ p[0], approximate=False) @ p[1]

    def loss(ps: Any, h: Any, remat: bool) -> Any:
        fn = jax.checkpoint(block, prevent_cse=prevent_cse) if remat else block
        for p in ps:
            h = fn(p, h)
        return jnp.mean(h**2)

    saved, flops, temp, dots, times, grads = [], [], [], [], [], []
    for remat in (False, True):
        residuals = jax_compiled_stats(lambda p, h, r=remat: jax.vjp(lambda a, b: loss(a, b, r), p, h)[1], params, x)
        saved.append(int(residuals["output"] - weight_bytes))
        step = jax.jit(jax.grad(lambda p, h, r=remat: loss(p, h, r))).lower(params, x).compile()
        stats = compiled_stats(step)
        flops.append(stats["flops"])
        temp.append(stats.get("temp"))
        dots.append(int(stats["dots"]))
        times.append(_timed(step, params, x, min_time=min_time, label=f"jax remat={remat}"))
        grads.append(jax.tree.leaves(step(params, x)))
    same = all(np.allclose(a, b, rtol=1e-4, atol=1e-6) for a, b in zip(*grads))
    return Remat("jax", tuple(saved), flops=tuple(flops), temp=tuple(temp), time=tuple(times),  # type: ignore[arg-type]
                 same_gradients=bool(same), dots=tuple(dots))  # type: ignore[arg-type]


def tf_recompute_same(weights: list[tuple[np.ndarray, np.ndarray]], batch: int = 64) -> bool:
    """True when ``tf.recompute_grad`` of one block gives the plain block's input gradient (exact GELU)."""
    validate.non_empty("weights", weights)
    batch = validate.number("batch", batch, low=1, high=2**20, integer=True)
    tf = env.import_tensorflow()
    w1, w2 = tf.constant(weights[0][0]), tf.constant(weights[0][1])
    x = tf.ones((batch, weights[0][0].shape[0]))

    def block(h: Any) -> Any:
        return h + tf.nn.gelu(h @ w1, approximate=False) @ w2

    grads = []
    for fn in (block, tf.recompute_grad(block)):
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = tf.reduce_mean(fn(x) ** 2)
        grads.append(tape.gradient(out, x).numpy())
    return bool(np.allclose(*grads, rtol=1e-5, atol=1e-7))


def predicted_peak_with_remat(result: Remat, blocks: int, *, live: bool = False) -> int:
    """Computed: peak without, minus the activations no longer kept, plus one block recomputed during backward.

    peak_with ~= peak_without - saved_without + saved_with + saved_without / blocks
    ``live=True`` starts from the peak of live tensors (``result.live_peak``), else from the measured peak.
    """
    validate.instance("result", result, Remat)
    blocks = validate.positive("blocks", blocks, integer=True)
    validate.instance("live", live, bool)
    start = result.live_peak[0] if live else result.peak[0]
    if start is None:
        raise ValueError("result has no measured peak (peak memory is not readable on this platform)")
    return int(start - result.saved[0] + result.saved[1] + result.saved[0] / blocks)


def torch_grouped_saved(weights: list[tuple[np.ndarray, np.ndarray]], batch: int, group: int, *,
                        device: Any = "cpu") -> int:
    """Bytes torch saves for backward when every ``group`` consecutive blocks are checkpointed as one."""
    import torch
    import torch.nn.functional as F
    from torch.utils.checkpoint import checkpoint

    validate.non_empty("weights", weights)
    batch = validate.number("batch", batch, low=1, high=2**24, integer=True)
    group = validate.number("group", group, low=1, high=len(weights), integer=True)
    tw = [(torch.tensor(a, device=device, requires_grad=True), torch.tensor(b, device=device, requires_grad=True))
          for a, b in weights]
    x = torch.ones(batch, weights[0][0].shape[0], device=device)

    def run(h: Any, *flat: Any) -> Any:
        for w1, w2 in zip(flat[::2], flat[1::2]):
            h = h + F.gelu(h @ w1) @ w2
        return h

    def loss() -> Any:
        h = x
        for i in range(0, len(tw), group):
            h = checkpoint(run, h, *[p for pair in tw[i:i + group] for p in pair], use_reentrant=False)
        return (h**2).mean()

    return saved_activation_bytes(loss, exclude=[p for pair in tw for p in pair])


def temp_change_text(temp: tuple[int | None, int | None], batch: int, width: int) -> str:
    """How the compiled step's temp buffers changed with checkpointing, sized against one block's 4x-wide fp32
    activation (batch x 4·width x 4 bytes, computed); a growth is stated, its cause left open."""
    if len(temp) != 2 or temp[0] is None or temp[1] is None:
        return "XLA did not report the temp buffers on this backend. "
    before, after = (validate.positive("temp", t, integer=True) for t in temp)
    batch = validate.positive("batch", batch, integer=True)
    width = validate.positive("width", width, integer=True)
    unit = batch * 4 * width * 4
    change = (f"The compiled step's temp buffers went from {display.format_bytes(before)} to "
              f"{display.format_bytes(after)} ({after / before - 1:+.0%})")
    if after > before:
        return change + (f": they grew with checkpointing instead of shrinking. For scale (computed), one block's "
                         f"4x-wide fp32 activation is {display.format_bytes(unit)}, so the growth equals "
                         f"{(after - before) / unit:.1f} of them; which buffers XLA added, and why, is not established "
                         "by this run. ")
    if after < 0.5 * before:
        return change + ": below half, as the `jax.vjp` residuals suggest. "
    return change + (f": a saving of {(before - after) / unit:.1f} 4x-wide block activations (computed), less than "
                     "half; which buffers XLA kept is not established by this run. ")
