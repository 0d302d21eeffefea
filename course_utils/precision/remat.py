"""Activation checkpointing (rematerialisation) measured in each framework on the same residual MLP blocks,
h + W2 · gelu(W1 · h) with a 4x-wide inside (a transformer's feed-forward shape), exact GELU everywhere.

torch: bytes saved for backward, the step's peak memory (CUDA allocator or process RSS) and its time.
JAX: the residuals of ``jax.vjp`` sized by XLA, and the compiled step's FLOPs (``cost_analysis``) and temp bytes
(``memory_analysis``) with ``jax.checkpoint`` (``prevent_cse=True``, its default) and without.
TensorFlow: ``tf.recompute_grad`` gives the same gradients.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from course_utils import calls, display, env, intervals, timing, validate
from course_utils.memory import compiled_stats, jax_compiled_stats, saved_activation_bytes, torch_peak_bytes

MAX_WEIGHT_BYTES = 2**30  # the blocks' weights a lesson may ask for: 1 GiB


def block_weights(width: int, blocks: int, *, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """(W1: width x 4width, W2: 4width x width) per block, float32, scaled so that activations stay O(1)."""
    width = validate.number("width", width, low=1, high=65536, integer=True)
    blocks = validate.number("blocks", blocks, low=1, high=1024, integer=True)
    if 8 * width * width * 4 * blocks > MAX_WEIGHT_BYTES:
        raise ValueError(f"width and blocks ask for {8 * width * width * 4 * blocks / 2**30:.1f} GiB of weights "
                         f"(8 x width^2 x 4 bytes per block); at most {MAX_WEIGHT_BYTES / 2**30:g} GiB")
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
    def cost(self) -> intervals.Speedup:
        """How many times as long a step takes with checkpointing, with its interval (the step without it is the
        candidate, the step with it the baseline: a ratio above 1 means checkpointing costs time)."""
        return intervals.speedup(self.time[1], self.time[0])

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


def torch_remat(loss: Callable[[bool], Any], params: Sequence[Any], *, rounds: int = 4, min_time: float = 0.1,
                timeout: float = 300.0) -> Remat:
    """Saved bytes, peak memory and time of the learner's training step ``loss(remat).backward()`` without
    (``remat=False``) and with (``remat=True``) its checkpointing, ``params`` being what it differentiates; the
    two steps are timed in ``rounds`` interleaved rounds, and their gradients compared."""
    import torch

    validate.function("loss", loss)
    timeout = validate.seconds("timeout", timeout)
    if isinstance(params, (str, bytes)):
        raise TypeError("params must be a list of tensors, not a string")
    flat = list(validate.non_empty("params", params))
    for i, p in enumerate(flat):
        validate.instance(f"params[{i}]", p, torch.Tensor)
    rounds = validate.number("rounds", rounds, low=2, high=100, integer=True)
    validate.number("min_time", min_time, low=0, high=60, low_open=True)
    device = flat[0].device

    def step(remat: bool) -> list[Any]:
        for p in flat:
            p.grad = None
        loss(remat).backward()
        return [p.grad for p in flat]

    with calls.time_limit(timeout, "checkpointing measurements of " + calls.describe(loss)):
        saved = tuple(saved_activation_bytes(lambda r=r: loss(r), exclude=flat) for r in (False, True))
        peak = tuple(torch_peak_bytes(lambda r=r: step(r), device) for r in (False, True))
        cuda = device.type == "cuda"  # there the allocator's peak already counts live tensors only
        live = peak if cuda else tuple(torch_live_peak(lambda r=r: step(r)) for r in (False, True))
        timed = timing.interleaved({"without": lambda: step(False), "with": lambda: step(True)}, rounds=rounds,
                                   min_time=min_time)
        same = all(torch.allclose(a, b, rtol=1e-4, atol=1e-6) for a, b in zip(step(False), step(True)))
    return Remat("torch", saved, peak, time=(timed["without"], timed["with"]),  # type: ignore[arg-type]
                 same_gradients=bool(same), live_peak=live)  # type: ignore[arg-type]


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


def jax_remat(loss: Callable[[Any, Any, bool], Any], params: Any, x: Any, *, rounds: int = 4,
              min_time: float = 0.1, timeout: float = 300.0) -> Remat:
    """The learner's ``loss(params, x, remat)`` (``remat=True`` wraps its blocks in ``jax.checkpoint``): the
    ``jax.vjp`` residuals sized by XLA, and the compiled gradient step's FLOPs (``cost_analysis``), temp bytes
    (``memory_analysis``), dot count and time, without and with checkpointing; the two steps' times interleaved."""

    validate.function("loss", loss)
    rounds = validate.number("rounds", rounds, low=2, high=100, integer=True)
    validate.number("min_time", min_time, low=0, high=60, low_open=True)
    timeout = validate.seconds("timeout", timeout)
    with calls.time_limit(timeout, "checkpointing measurements of " + calls.describe(loss)):
        return _jax_remat(loss, params, x, rounds, min_time)


def _jax_remat(loss: Callable[[Any, Any, bool], Any], params: Any, x: Any, rounds: int, min_time: float) -> Remat:
    import jax

    weight_bytes = sum(a.nbytes for a in jax.tree.leaves(params))  # vjp residuals include the weights
    saved, flops, temp, dots, steps, grads = [], [], [], [], {}, []
    for remat in (False, True):
        residuals = jax_compiled_stats(lambda p, h, r=remat: jax.vjp(lambda a, b: loss(a, b, r), p, h)[1], params, x)
        saved.append(int(residuals["output"] - weight_bytes))
        step = jax.jit(jax.grad(lambda p, h, r=remat: loss(p, h, r))).lower(params, x).compile()
        stats = compiled_stats(step)
        flops.append(stats["flops"])
        temp.append(stats.get("temp"))
        dots.append(int(stats["dots"]))
        steps["with" if remat else "without"] = lambda step=step: step(params, x)
        grads.append(jax.tree.leaves(step(params, x)))
    timed = timing.interleaved(steps, rounds=rounds, min_time=min_time)
    same = all(np.allclose(a, b, rtol=1e-4, atol=1e-6) for a, b in zip(*grads))
    return Remat("jax", tuple(saved), flops=tuple(flops), temp=tuple(temp),  # type: ignore[arg-type]
                 time=(timed["without"], timed["with"]), same_gradients=bool(same),  # type: ignore[arg-type]
                 dots=tuple(dots))  # type: ignore[arg-type]


def _weights(weights: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """``weights`` if it is a non-empty list of (W1, W2) array pairs, as ``block_weights`` returns."""
    validate.non_empty("weights", weights)
    for i, pair in enumerate(weights):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and all(isinstance(w, np.ndarray) and w.ndim == 2
                                                                           for w in pair)):
            raise TypeError(f"weights[{i}] must be a (W1, W2) pair of 2-d arrays, as block_weights returns; got "
                            f"{type(pair).__name__}")
    return list(weights)


def tf_recompute_same(weights: list[tuple[np.ndarray, np.ndarray]], batch: int = 64) -> bool:
    """True when ``tf.recompute_grad`` of one block gives the plain block's input gradient (exact GELU)."""
    weights = _weights(weights)
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

    weights = _weights(weights)
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
