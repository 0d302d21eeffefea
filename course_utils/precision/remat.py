"""Training memory: bytes per parameter of weights, gradients and Adam state (computed, ZeRO's accounting);
activation checkpointing measured on the learner's residual MLP blocks in torch, JAX and TensorFlow."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np

from course_utils import calls, declare, display, env, intervals, timing
from course_utils.declare import NonEmpty, PositiveInt, Range
from course_utils.measuring.workloads import MinTime, Rounds
from course_utils.memory import compiled_stats, jax_compiled_stats, saved_activation_bytes, torch_peak_bytes
from course_utils.precision.formats import Tensor

# Bytes per parameter of each piece of training state, the standard accounting (ZeRO, Rajbhandari et al. 2020).
TRAINING_SCHEMES: dict[str, dict[str, int]] = {
    "fp32 + Adam": {"fp32 weights": 4, "fp32 gradients": 4, "Adam moments (fp32)": 8},
    "mixed + Adam, fp32 master": {"16-bit weights": 2, "16-bit gradients": 2, "fp32 master weights": 4,
                                  "Adam moments (fp32)": 8},
    "pure bf16 + Adam": {"16-bit weights": 2, "16-bit gradients": 2, "Adam moments (bf16)": 4},
}
MAX_WEIGHT_BYTES = 2**30  # the blocks' weights a lesson may ask for: 1 GiB


@declare.checked
def training_memory(n_params: Annotated[int, Range(0, 10**15)],
                    scheme: Literal["fp32 + Adam", "mixed + Adam, fp32 master", "pure bf16 + Adam"]) -> dict[str, int]:
    """Bytes of weights, gradients and Adam state for ``n_params`` parameters under ``scheme`` (computed)."""
    return {k: v * n_params for k, v in TRAINING_SCHEMES[scheme].items()}


@declare.checked
def block_weights(width: Annotated[int, Range(1, 65536)], blocks: Annotated[int, Range(1, 1024)], *,
                  seed: Annotated[int, Range(0, 2**32 - 1)] = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """(W1: width x 4width, W2: 4width x width) per block, float32, scaled so that activations stay O(1)."""
    if 8 * width * width * 4 * blocks > MAX_WEIGHT_BYTES:
        raise ValueError(f"width and blocks ask for {8 * width * width * 4 * blocks / 2**30:.1f} GiB of weights "
                         f"(8 x width^2 x 4 bytes per block); at most {MAX_WEIGHT_BYTES / 2**30:g} GiB")
    rng = np.random.default_rng(seed)
    return [((rng.standard_normal((width, 4 * width)) / np.sqrt(width)).astype(np.float32),
             (rng.standard_normal((4 * width, width)) / np.sqrt(4 * width) / blocks).astype(np.float32))
            for _ in range(blocks)]


@dataclass(frozen=True, repr=False)
class Remat(display.Tabled):
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
        """A step's time with checkpointing over without, with its interval over paired rounds."""
        return intervals.speedup(self.time[1], self.time[0])

    @property
    def time_ratio(self) -> float:
        """The printed medians' ratio, with over without: what the table's last row divides."""
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
            rows.append(("step time, with over without (ratio of the medians)", "1x", f"{self.time_ratio:.2f}x"))
        return display.table(["", "without checkpointing", "with checkpointing"], rows, title=self.framework)


@declare.checked
def torch_remat(loss: Callable[[bool], Any], params: Annotated[Sequence[Tensor], NonEmpty], *, rounds: Rounds = 4,
                min_time: MinTime = 0.1, timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> Remat:
    """Saved bytes, peaks and time of the learner's ``loss(remat).backward()`` without and with checkpointing."""
    import torch

    flat = list(params)
    device = flat[0].device

    def limited(remat: bool) -> Any:  # each call of the learner's loss under the time limit
        return calls.call(loss, remat, timeout=timeout, name="loss")

    def step(remat: bool) -> list[Any]:
        for p in flat:
            p.grad = None
        limited(remat).backward()
        return [p.grad for p in flat]

    saved = tuple(saved_activation_bytes(lambda r=r: limited(r), exclude=flat) for r in (False, True))
    peak = tuple(torch_peak_bytes(lambda r=r: step(r), device) for r in (False, True))
    cuda = device.type == "cuda"  # there the allocator's peak already counts live tensors only
    live = peak if cuda else tuple(torch_live_peak(lambda r=r: step(r)) for r in (False, True))
    timed = timing.interleaved({"without": lambda: step(False), "with": lambda: step(True)}, rounds=rounds,
                               min_time=min_time, timeout=timeout)
    same = all(torch.allclose(a, b, rtol=1e-4, atol=1e-6) for a, b in zip(step(False), step(True)))
    return Remat("torch", saved, peak, time=(timed["without"], timed["with"]),  # type: ignore[arg-type]
                 same_gradients=bool(same), live_peak=live)  # type: ignore[arg-type]


@declare.checked
def torch_live_peak(fn: Callable[[], Any]) -> int | None:
    """Peak bytes of the tensors ``fn()`` has alive at once (CPU), from the profiler's memory timeline, as
    CUDA's ``max_memory_allocated`` counts (the RSS also holds what malloc keeps mapped)."""
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


@declare.checked
def jax_remat(loss: Callable[[Any, Any, bool], Any], params: Any, x: Any, *, rounds: Rounds = 4,
              min_time: MinTime = 0.1, timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> Remat:
    """The learner's ``loss(params, x, remat)`` without and with ``jax.checkpoint``: vjp residuals and the
    compiled step's FLOPs, temp bytes, dots and time."""
    import jax

    weight_bytes = sum(a.nbytes for a in jax.tree.leaves(params))  # vjp residuals include the weights
    saved, stats, steps, grads = [], [], {}, []
    for remat in (False, True):
        with calls.time_limit(timeout, f"tracing and compiling loss={calls.describe(loss)} with remat={remat}"):
            residuals = jax_compiled_stats(lambda p, h, r=remat: jax.vjp(lambda a, b: loss(a, b, r), p, h)[1],
                                           params, x)
            saved.append(int(residuals["output"] - weight_bytes))
            step = jax.jit(jax.grad(lambda p, h, r=remat: loss(p, h, r))).lower(params, x).compile()
            stats.append(compiled_stats(step))
            steps["with" if remat else "without"] = lambda step=step: step(params, x)
            grads.append(jax.tree.leaves(step(params, x)))
    timed = timing.interleaved(steps, rounds=rounds, min_time=min_time, timeout=timeout)
    same = all(np.allclose(a, b, rtol=1e-4, atol=1e-6) for a, b in zip(*grads))
    return Remat("jax", tuple(saved), flops=tuple(s["flops"] for s in stats),  # type: ignore[arg-type]
                 temp=tuple(s.get("temp") for s in stats), time=(timed["without"], timed["with"]),  # type: ignore
                 same_gradients=bool(same), dots=tuple(int(s["dots"]) for s in stats))  # type: ignore[arg-type]


@dataclass(frozen=True)
class _Pairs:
    """Declared: (W1, W2) pairs of 2-d arrays, as ``block_weights`` returns."""

    def check(self, name: str, value: Any, arguments: Mapping[str, Any]) -> None:
        for i, pair in enumerate(value):
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2
                    and all(isinstance(w, np.ndarray) and w.ndim == 2 for w in pair)):
                raise TypeError(f"{name}[{i}] must be a (W1, W2) pair of 2-d arrays, as block_weights returns; got "
                                f"{type(pair).__name__}")


Weights = Annotated[Sequence[Any], NonEmpty, _Pairs()]


@declare.checked
def tf_recompute_same(weights: Weights, batch: Annotated[int, Range(1, 2**20)] = 64) -> bool:
    """True when ``tf.recompute_grad`` of one block gives the plain block's input gradient (exact GELU)."""
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


@declare.checked
def predicted_peak_with_remat(result: Remat, blocks: PositiveInt, *, live: bool = False) -> int:
    """Computed: peak_without - saved_without + saved_with + saved_without / blocks (one block recomputed)."""
    start = result.live_peak[0] if live else result.peak[0]
    if start is None:
        raise ValueError("result has no measured peak (peak memory is not readable on this platform)")
    return int(start - result.saved[0] + result.saved[1] + result.saved[0] / blocks)


@declare.checked
def torch_grouped_saved(weights: Weights, batch: Annotated[int, Range(1, 2**24)], group: PositiveInt, *,
                        device: Any = "cpu") -> int:
    """Bytes torch saves for backward when every ``group`` consecutive blocks are checkpointed as one."""
    import torch
    import torch.nn.functional as F
    from torch.utils.checkpoint import checkpoint

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
