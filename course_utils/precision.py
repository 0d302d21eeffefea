"""Low-precision numbers, measured: formats from ``finfo``, rounding and underflow, a JAX mixed-precision policy,
where training memory goes, and how to measure peak memory in each framework.

Every number here is computed from NumPy's / ml_dtypes' ``finfo`` or from real tensors; nothing is typed in.
TF32 has no NumPy type: it is fp32's exponent with fp16's mantissa, rounded here by bit masking.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure

FORMATS = ("float32", "tf32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")
SHORT = {"float32": "fp32", "tf32": "tf32", "float16": "fp16", "bfloat16": "bf16",
         "float8_e4m3fn": "fp8 e4m3", "float8_e5m2": "fp8 e5m2"}
# Bytes per parameter of each piece of training state (Adam keeps two moments per parameter).
TRAINING_SCHEMES: dict[str, dict[str, int]] = {
    "fp32": {"weights": 4, "gradients": 4, "Adam moments": 8},
    "mixed (fp32 master)": {"weights": 4, "bf16 weight copy": 2, "gradients": 4, "Adam moments": 8},
    "pure bf16": {"weights": 2, "gradients": 2, "Adam moments": 4},
}
_COMPONENT_COLORS = {"weights": "#0072B2", "bf16 weight copy": "#56B4E9", "gradients": "#D55E00",
                     "Adam moments": "#009E73"}


def _check_format(name: str) -> None:
    if name not in FORMATS:
        raise ValueError(f"name must be one of {FORMATS}; got {name!r}")


def numpy_dtype(name: str) -> np.dtype:
    """The NumPy dtype storing format ``name`` (tf32 is stored in float32: it has no type of its own)."""
    _check_format(name)
    if name in ("float32", "tf32"):
        return np.dtype(np.float32)
    if name == "float16":
        return np.dtype(np.float16)
    import ml_dtypes

    return np.dtype(getattr(ml_dtypes, name))


@dataclass(frozen=True)
class FloatFormat:
    """Layout and limits of one floating-point format, read from ``finfo``."""

    name: str
    bits: int
    exponent_bits: int
    mantissa_bits: int
    eps: float
    min_normal: float
    min_subnormal: float
    max: float

    @property
    def short(self) -> str:
        return SHORT[self.name]

    @property
    def unit_roundoff(self) -> float:
        """Largest relative error of round-to-nearest in the normal range: eps / 2."""
        return self.eps / 2

    @property
    def decimal_digits(self) -> float:
        """Significant decimal digits, -log10(eps / 2)."""
        return -math.log10(self.unit_roundoff)


def float_format(name: str) -> FloatFormat:
    """Bits, epsilon and range from ``np.finfo`` / ``ml_dtypes.finfo`` (tf32: fp32's range, fp16's mantissa)."""
    _check_format(name)
    import ml_dtypes

    if name == "tf32":
        f32, f16 = np.finfo(np.float32), np.finfo(np.float16)
        mant = int(f16.nmant)
        return FloatFormat("tf32", 1 + int(f32.nexp) + mant, int(f32.nexp), mant, 2.0**-mant,
                           float(f32.smallest_normal), float(f32.smallest_normal) * 2.0**-mant,
                           float((2 - 2.0**-mant) * 2.0**f32.maxexp / 2))
    info = ml_dtypes.finfo(numpy_dtype(name))
    return FloatFormat(name, int(info.bits), int(info.nexp), int(info.nmant), float(info.eps),
                       float(info.smallest_normal), float(info.smallest_subnormal), float(info.max))


@dataclass(frozen=True)
class FormatTable:
    """Several formats side by side; a table in Jupyter, text elsewhere."""

    formats: tuple[FloatFormat, ...]

    def __getitem__(self, name: str) -> FloatFormat:
        for f in self.formats:
            if name in (f.name, f.short):
                return f
        raise KeyError(f"no format {name!r}; have {[f.name for f in self.formats]}")

    def _rows(self) -> list[list[str]]:
        head = ["format", "bits (s/e/m)", "eps", "digits", "min subnormal", "min normal", "max"]
        rows = [head]
        for f in self.formats:
            rows.append([f.short, f"{f.bits} (1/{f.exponent_bits}/{f.mantissa_bits})", f"{f.eps:.3g}",
                         f"{f.decimal_digits:.1f}", f"{f.min_subnormal:.3g}", f"{f.min_normal:.3g}", f"{f.max:.3g}"])
        return rows

    def __repr__(self) -> str:
        rows = self._rows()
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)

    def _repr_html_(self) -> str:
        head, *body = self._rows()
        th = "".join(f"<th>{escape(c)}</th>" for c in head)
        trs = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in body)
        return f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"


def format_table(names: Sequence[str] = FORMATS) -> FormatTable:
    """A ``FormatTable`` of ``names`` (default: fp32, tf32, fp16, bf16, fp8 e4m3, fp8 e5m2)."""
    return FormatTable(tuple(float_format(n) for n in names))


# ---------------------------------------------------------------------------------------------------------
# Rounding


def round_to(x: Any, name: str) -> np.ndarray:
    """``x`` rounded to format ``name`` (nearest, ties to even) and returned as float64; overflow gives inf or nan."""
    _check_format(name)
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        if name == "tf32":
            u = x.astype(np.float32).view(np.uint32)
            lsb = (u >> np.uint32(13)) & np.uint32(1)
            rounded = ((u + np.uint32(0x0FFF) + lsb) & np.uint32(0xFFFFE000)).view(np.float32)
            return np.where(np.isfinite(x.astype(np.float32)), rounded, x.astype(np.float32)).astype(np.float64)
        return x.astype(numpy_dtype(name)).astype(np.float64)


def relative_rounding_error(magnitudes: Any, name: str, *, samples: int = 256, seed: int = 0) -> np.ndarray:
    """Largest relative error of storing values in [m, 2m) in format ``name``, for each magnitude m.

    1.0 means the value was flushed to zero; inf means it overflowed (inf or nan).
    """
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise ValueError(f"samples must be a positive int; got {samples!r}")
    m = np.asarray(magnitudes, dtype=np.float64).reshape(-1, 1)
    if np.any(m <= 0):
        raise ValueError("magnitudes must be positive")
    x = m * (1.0 + np.random.default_rng(seed).random((1, samples)))
    r = round_to(x, name)
    with np.errstate(invalid="ignore"):
        err = np.where(np.isfinite(r), np.abs(r - x) / x, np.inf)
    return err.max(axis=1)


# ---------------------------------------------------------------------------------------------------------
# Underflow and accumulation


@dataclass(frozen=True)
class UnderflowStats:
    """How many nonzero reference values a low-precision version lost (flushed to 0) or overflowed (inf/nan)."""

    nonzero: int
    flushed: int
    overflowed: int

    @property
    def flushed_fraction(self) -> float:
        return self.flushed / self.nonzero if self.nonzero else 0.0

    @property
    def overflowed_fraction(self) -> float:
        return self.overflowed / self.nonzero if self.nonzero else 0.0


def underflow_stats(reference: Any, low: Any) -> UnderflowStats:
    """Compare gradients computed in high precision (``reference``) with the same computed in low precision."""
    ref, lo = _as_numpy(reference).ravel(), _as_numpy(low).ravel()
    if ref.shape != lo.shape:
        raise ValueError(f"reference and low must have the same size; got {ref.size} and {lo.size}")
    nonzero = ref != 0
    return UnderflowStats(int(nonzero.sum()), int((nonzero & (lo == 0)).sum()), int((~np.isfinite(lo)).sum()))


def simulate_cast(values: Any, name: str = "float16", scale: float = 1.0) -> UnderflowStats:
    """What casting ``values * scale`` to format ``name`` does to them (flushed / overflowed counts)."""
    ref = _as_numpy(values).astype(np.float64).ravel()
    return underflow_stats(ref, round_to(ref * scale, name))


def _as_numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):  # torch
        return x.detach().float().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


def torch_activation_grads(model: Any, x: Any, y: Any, *, dtype: Any = None, scale: float = 1.0) -> Any:
    """Gradients of the loss with respect to every ``nn.Linear`` output of ``model``, flattened, unscaled, fp32.

    ``dtype`` (e.g. ``torch.float16``) runs forward and backward under ``torch.autocast`` in that dtype; the loss
    is multiplied by ``scale`` before ``backward`` and the gradients divided by it afterwards (static loss
    scaling), so values that underflowed in ``dtype`` come back as exact zeros.
    """
    import torch

    outputs: list[torch.Tensor] = []

    def keep(module: Any, inputs: Any, output: torch.Tensor) -> None:
        output.retain_grad()
        outputs.append(output)

    hooks = [m.register_forward_hook(keep) for m in model.modules() if isinstance(m, torch.nn.Linear)]
    if not hooks:
        raise ValueError("model must contain at least one torch.nn.Linear")
    device_type = next(model.parameters()).device.type
    try:
        with torch.autocast(device_type, dtype=dtype or torch.float32, enabled=dtype is not None):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        (loss.float() * scale).backward()
    finally:
        for h in hooks:
            h.remove()
    model.zero_grad(set_to_none=True)
    return torch.cat([o.grad.float().flatten() / scale for o in outputs])


def accumulation_error(lengths: Sequence[int], *, seed: int = 0) -> dict[str, np.ndarray]:
    """Relative error of summing n bf16 values from U(0, 1), for each n in ``lengths``, three ways.

    "bf16 accumulator": every partial sum rounded to bf16 (a naive loop); "fp32 accumulator": bf16 inputs,
    fp32 running sum (what matmul units do); "fp32 accumulator, bf16 result": the same, rounded once at the end.
    The reference is the float64 sum of the same bf16 inputs.
    """
    import ml_dtypes

    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or lengths.size == 0 or np.any(lengths < 1):
        raise ValueError("lengths must be a non-empty sequence of positive ints")
    x = np.random.default_rng(seed).random(int(lengths.max())).astype(ml_dtypes.bfloat16)
    exact = np.cumsum(x.astype(np.float64))[lengths - 1]
    acc32 = np.cumsum(x.astype(np.float32), dtype=np.float32)[lengths - 1].astype(np.float64)
    sums = {
        "bf16 accumulator": np.cumsum(x, dtype=ml_dtypes.bfloat16)[lengths - 1].astype(np.float64),
        "fp32 accumulator": acc32,
        "fp32 accumulator, bf16 result": round_to(acc32, "bfloat16"),
    }
    return {k: np.abs(v - exact) / exact for k, v in sums.items()}


# ---------------------------------------------------------------------------------------------------------
# A small, explicit JAX mixed-precision policy


def _cast_floating(tree: Any, dtype: str) -> Any:
    import jax
    import jax.numpy as jnp

    def cast(leaf: Any) -> Any:
        if hasattr(leaf, "dtype") and jnp.issubdtype(leaf.dtype, jnp.floating):
            return leaf.astype(dtype)
        return leaf

    return jax.tree.map(cast, tree)


@dataclass(frozen=True)
class Policy:
    """Which dtype parameters are stored in, computed in, and returned in (floating leaves only)."""

    param_dtype: str = "float32"
    compute_dtype: str = "bfloat16"
    output_dtype: str = "float32"

    def __post_init__(self) -> None:
        allowed = ("float32", "bfloat16", "float16")
        for field_name in ("param_dtype", "compute_dtype", "output_dtype"):
            value = getattr(self, field_name)
            if value not in allowed:
                raise ValueError(f"{field_name} must be one of {allowed}; got {value!r}")

    def cast_to_param(self, tree: Any) -> Any:
        return _cast_floating(tree, self.param_dtype)

    def cast_to_compute(self, tree: Any) -> Any:
        return _cast_floating(tree, self.compute_dtype)

    def cast_to_output(self, tree: Any) -> Any:
        return _cast_floating(tree, self.output_dtype)

    def wrap(self, apply: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        """``apply(params, x)`` run in the compute dtype, its output cast to the output dtype.

        The gradient with respect to fp32 parameters comes back in fp32: the transpose of a cast is a cast.
        """

        def wrapped(params: Any, x: Any) -> Any:
            return self.cast_to_output(apply(self.cast_to_compute(params), self.cast_to_compute(x)))

        wrapped.__name__ = f"{getattr(apply, '__name__', 'apply')}_{self.compute_dtype}"
        return wrapped


# ---------------------------------------------------------------------------------------------------------
# Memory


def training_memory(n_params: int, scheme: str) -> dict[str, int]:
    """Bytes of weights, gradients and Adam state for ``n_params`` parameters under ``scheme``."""
    if scheme not in TRAINING_SCHEMES:
        raise ValueError(f"scheme must be one of {tuple(TRAINING_SCHEMES)}; got {scheme!r}")
    if isinstance(n_params, bool) or not isinstance(n_params, int) or n_params < 0:
        raise ValueError(f"n_params must be a non-negative int; got {n_params!r}")
    return {k: v * n_params for k, v in TRAINING_SCHEMES[scheme].items()}


def torch_state_bytes(model: Any, optimizer: Any = None) -> dict[str, int]:
    """Bytes actually held by a torch model's weights, their gradients and the optimizer's state tensors."""
    import torch

    params = list(model.parameters())
    state = 0
    if optimizer is not None:
        for s in optimizer.state.values():
            state += sum(t.numel() * t.element_size() for t in s.values()
                         if isinstance(t, torch.Tensor) and t.dim() > 0)
    return {
        "weights": sum(p.numel() * p.element_size() for p in params),
        "gradients": sum(p.grad.numel() * p.grad.element_size() for p in params if p.grad is not None),
        "Adam moments": state,
    }


def saved_activation_bytes(fn: Callable[[], Any], exclude: Iterable[Any] = ()) -> int:
    """Bytes of the tensors autograd saves for backward while ``fn()`` runs its forward pass (torch).

    Storages shared by several saved tensors count once; tensors whose storage is one of ``exclude``
    (usually ``model.parameters()``, which exist anyway) do not count.
    """
    import torch

    skip = {t.untyped_storage().data_ptr() for t in exclude}
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in skip:
            seen[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    del out
    return sum(seen.values())


def _status_bytes(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


def rss_peak_supported() -> bool:
    """True where the process's peak RSS can be reset and read (Linux /proc/self/clear_refs)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        _status_bytes("VmHWM")
        return True
    except (OSError, KeyError):
        return False


def peak_rss_delta(fn: Callable[[], Any], *, repeats: int = 2) -> int | None:
    """Peak resident memory ``fn()`` adds to this process, in bytes (smallest of ``repeats`` runs); None if unsupported.

    Freed heap memory is first returned to the OS (glibc ``malloc_trim``), then the kernel's peak-RSS mark is
    reset, so the peak seen is the one ``fn`` causes. The first run also pays one-time costs: keep repeats >= 2.
    """
    if not rss_peak_supported():
        return None
    trim = _malloc_trim()
    peaks = []
    for _ in range(repeats):
        trim()
        Path("/proc/self/clear_refs").write_text("5")
        base = _status_bytes("VmRSS")
        fn()
        peaks.append(_status_bytes("VmHWM") - base)
    return max(0, min(peaks))


def _malloc_trim() -> Callable[[], None]:
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6")
        return lambda: libc.malloc_trim(0)
    return lambda: None


def torch_peak_bytes(fn: Callable[[], Any], device: Any = "cpu") -> int | None:
    """Peak memory ``fn()`` adds on ``device``: CUDA's ``max_memory_allocated``, else the process peak RSS."""
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        fn()
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_allocated(device) - base
    return peak_rss_delta(fn)


def jax_memory(fn: Callable[..., Any], *args: Any) -> dict[str, int]:
    """What XLA plans for ``jax.jit(fn)(*args)``: argument, output, temp (and peak, where reported) bytes."""
    import jax

    stats = jax.jit(fn).lower(*args).compile().memory_analysis()
    if stats is None:
        raise RuntimeError("this JAX backend gives no memory_analysis()")
    keys = ("argument_size_in_bytes", "output_size_in_bytes", "temp_size_in_bytes", "peak_memory_in_bytes")
    return {k.removesuffix("_size_in_bytes").removesuffix("_memory_in_bytes"): int(getattr(stats, k))
            for k in keys if getattr(stats, k, None) is not None}


# ---------------------------------------------------------------------------------------------------------
# Plots


def _figure(**kwargs: Any) -> tuple[Figure, list[Any]]:
    from course_utils import plotting

    return plotting.figure(**kwargs)


def bit_layout_plot(names: Sequence[str] = FORMATS) -> Figure:
    """One bar per format split into sign, exponent and mantissa bits."""
    formats = [float_format(n) for n in names]
    fig, (ax,) = _figure(width=7.5, height=0.5 + 0.45 * len(formats))
    parts = (("sign", "#000000"), ("exponent", "#0072B2"), ("mantissa", "#E69F00"))
    for y, f in enumerate(formats):
        left = 0
        for (part, color), width in zip(parts, (1, f.exponent_bits, f.mantissa_bits)):
            ax.barh(y, width, left=left, color=color, edgecolor="white", label=part if y == 0 else None)
            if width >= 2 or part == "sign":
                ax.text(left + width / 2, y, str(width), ha="center", va="center", color="white", fontsize=8)
            left += width
    ax.set_yticks(range(len(formats)), [f.short for f in formats])
    ax.invert_yaxis()
    ax.set_xlabel("bits (exponent bits set the range, mantissa bits the precision)")
    ax.set_title("Bit layout")
    ax.legend(ncol=3, loc="lower right", fontsize=8)
    ax.grid(False)
    return fig


def rounding_error_plot(names: Sequence[str] = FORMATS, *, low: float = 1e-46, high: float = 1e40) -> Figure:
    """Largest relative rounding error against magnitude, one line per format (log-log)."""
    from course_utils import plotting

    magnitudes = np.logspace(math.log10(low), math.log10(high), 700)
    fig, (ax,) = _figure(width=7.5, height=4.0)
    for i, name in enumerate(names):
        err = relative_rounding_error(magnitudes, name)
        shown = np.where(np.isfinite(err), np.maximum(err, 1e-12), np.nan)
        line, = ax.plot(magnitudes, shown, color=plotting.PALETTE[i % len(plotting.PALETTE)], label=SHORT[name])
        over = np.flatnonzero(~np.isfinite(err))
        if over.size:
            ax.axvline(magnitudes[over[0]], color=line.get_color(), linestyle=":", linewidth=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(1e-9, 2)
    ax.set_xlabel("magnitude of the value")
    ax.set_ylabel("largest relative error")
    ax.set_title("Rounding error across magnitudes (1 = flushed to zero; dotted = overflow)")
    ax.legend(ncol=3, fontsize=8, loc="center left")
    return fig


def gradient_histogram_plot(values: Any, *, scale: float = 1.0, name: str = "float16") -> Figure:
    """Histogram of log2|g| of fp32 gradients, the band that format ``name`` flushes to zero, and the scaled copy."""
    g = _as_numpy(values).astype(np.float64).ravel()
    g = np.log2(np.abs(g[g != 0]))
    f = float_format(name)
    fig, (ax,) = _figure(width=7.5, height=3.8)
    bins = np.arange(math.floor(g.min()) - 1, math.ceil(g.max() + math.log2(scale)) + 2, 0.5)
    ax.hist(g, bins=bins, color="#0072B2", alpha=0.75, label="fp32 gradients")
    if scale != 1.0:
        ax.hist(g + math.log2(scale), bins=bins, color="#009E73", alpha=0.55,
                label=f"same gradients x 2^{math.log2(scale):g} (loss scaling)")
    flush = math.log2(f.min_subnormal) - 1
    ax.axvspan(bins[0], flush, color="#D55E00", alpha=0.15, label=f"flushed to 0 in {f.short}")
    ax.axvspan(flush, math.log2(f.min_normal), color="#E69F00", alpha=0.15, label=f"{f.short} subnormal (few bits)")
    ax.axvline(math.log2(f.max), color="#D55E00", linestyle="--", linewidth=1, label=f"{f.short} max")
    ax.set_yscale("log")
    ax.set_xlabel("log2 |gradient|")
    ax.set_ylabel("count")
    ax.set_title(f"Which gradients survive in {f.short}")
    ax.legend(fontsize=8, loc="upper left")
    return fig


def scale_trace_plot(scales: Sequence[float], skipped: Sequence[bool]) -> Figure:
    """The dynamic loss scale per step (log2), with the skipped (overflowing) steps marked."""
    steps = np.arange(len(scales))
    fig, (ax,) = _figure(width=7.5, height=3.4)
    ax.step(steps, np.log2(scales), where="post", color="#0072B2", label="loss scale used at step")
    bad = np.flatnonzero(np.asarray(skipped, dtype=bool))
    ax.scatter(bad, np.log2(np.asarray(scales)[bad]), marker="x", color="#D55E00", zorder=3, s=40,
               label="inf/nan in gradients: step skipped, scale halved")
    ax.set_xlabel("step")
    ax.set_ylabel("log2(scale)")
    ax.set_title("torch.amp.GradScaler: growth and back-off")
    ax.legend(fontsize=8)
    return fig


def accumulation_plot(lengths: Sequence[int], errors: Mapping[str, Sequence[float]]) -> Figure:
    """Relative error of long sums against their length, one line per accumulation scheme."""
    from course_utils import plotting

    fig, (ax,) = _figure(width=7.0, height=3.6)
    for i, (label, err) in enumerate(errors.items()):
        ax.plot(lengths, np.maximum(np.asarray(err), 1e-10), marker="o", markersize=3, label=label,
                color=plotting.PALETTE[i])
    ax.axhline(float_format("bfloat16").unit_roundoff, color="#888888", linestyle=":", label="bf16 unit roundoff")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("number of terms summed")
    ax.set_ylabel("relative error of the sum")
    ax.set_title("Summing bf16 numbers")
    ax.legend(fontsize=8)
    return fig


def throughput_plot(measured: Mapping[str, float], published: Mapping[str, float] | None = None,
                    published_label: str = "published") -> Figure:
    """Bars of FLOP/s (log scale) measured here, and optionally a second panel of published figures."""
    from course_utils import plotting

    panels = [(measured, "measured on this machine")] + ([(published, published_label)] if published else [])
    fig, axes = _figure(ncols=len(panels), width=5.2 * len(panels), height=0.9 + 0.45 * max(len(v) for v, _ in panels))
    for ax, (values, title) in zip(axes, panels):
        names = list(values)
        rates = [values[n] / 1e9 for n in names]
        ax.barh(names, rates, color=[plotting.color_for(n, i) for i, n in enumerate(names)])
        for y, r in enumerate(rates):
            ax.text(r, y, f" {r:,.0f}", va="center", fontsize=8)
        ax.set_xscale("log")
        ax.set_xlim(min(rates) / 2, max(rates) * 8)
        ax.invert_yaxis()
        ax.set_xlabel("GFLOP/s (log scale)")
        ax.set_title(title)
    return fig


def memory_stack_plot(breakdowns: Mapping[str, Mapping[str, float]], *, unit: str = "bytes per parameter") -> Figure:
    """Stacked bars: one per scheme, one segment per component (weights, gradients, Adam moments, ...)."""
    from course_utils import plotting

    fig, (ax,) = _figure(width=6.4, height=3.6)
    components = list(dict.fromkeys(c for parts in breakdowns.values() for c in parts))
    bottoms = np.zeros(len(breakdowns))
    for i, comp in enumerate(components):
        vals = np.array([parts.get(comp, 0) for parts in breakdowns.values()], dtype=float)
        ax.bar(list(breakdowns), vals, bottom=bottoms, label=comp,
               color=_COMPONENT_COLORS.get(comp, plotting.PALETTE[i % len(plotting.PALETTE)]))
        bottoms += vals
    for x, total in enumerate(bottoms):
        ax.text(x, total, f"{total:g}", ha="center", va="bottom")
    ax.set_ylim(0, bottoms.max() * 1.2)
    ax.set_ylabel(unit)
    ax.set_title("Training state per parameter (activations not included)")
    ax.legend(fontsize=8, loc="upper right")
    return fig


def lines_plot(x: Sequence[float], series: Mapping[str, Sequence[float]], *, xlabel: str, ylabel: str,
               title: str, logx: bool = False, logy: bool = False) -> Figure:
    """Several labelled lines over the same x (loss curves, memory against batch size, ...)."""
    from course_utils import plotting

    fig, (ax,) = _figure(width=6.8, height=3.6)
    for i, (label, ys) in enumerate(series.items()):
        ax.plot(x, ys, label=label, color=plotting.PALETTE[i % len(plotting.PALETTE)], marker="o" if len(x) < 20
                else None, markersize=3)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    return fig


def before_after_plot(rows: Mapping[str, tuple[float, float]], *, ylabel: str, title: str) -> Figure:
    """Pairs of bars (without, with) per row, the ratio written above: e.g. memory without/with checkpointing."""
    fig, (ax,) = _figure(width=6.8, height=3.6)
    x = np.arange(len(rows))
    before = np.array([v[0] for v in rows.values()], dtype=float)
    after = np.array([v[1] for v in rows.values()], dtype=float)
    ax.bar(x - 0.2, before, 0.4, label="without checkpointing", color="#0072B2")
    ax.bar(x + 0.2, after, 0.4, label="with checkpointing", color="#009E73")
    for xi, b, a in zip(x, before, after):
        ax.text(xi + 0.2, a, f"{a / b:.2f}x" if b else "", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, list(rows), fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, max(before.max(), after.max()) * 1.2)
    ax.set_title(title)
    ax.legend(fontsize=8)
    return fig

