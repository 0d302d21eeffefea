"""The figures of notebook 03."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import numpy as np
from matplotlib.figure import Figure

from course_utils import declare, plotting
from course_utils.declare import NonEmpty, PositiveFloat, Range, SameLength, Text
from course_utils.precision.formats import FORMATS, SHORT, Format, _as_float64, float_format, relative_rounding_error
from course_utils.precision.fp8 import KINDS, AmaxHistory

Names = Annotated[Sequence[Format], NonEmpty]

_COMPONENT_COLORS = {"fp32 weights": "#0072B2", "fp32 master weights": "#003E6B", "16-bit weights": "#56B4E9",
                     "fp32 gradients": "#D55E00", "16-bit gradients": "#E69F00", "Adam moments (fp32)": "#009E73",
                     "Adam moments (bf16)": "#8FD1B8"}


@declare.checked
def bit_layout_plot(names: Names = FORMATS) -> Figure:
    """One bar per format split into sign, exponent and mantissa bits."""
    formats = [float_format(n) for n in names]
    fig, (ax,) = plotting.figure(width=7.5, height=0.5 + 0.45 * len(formats))
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
    ax.set(xlabel="bits (exponent bits set the range, mantissa bits the precision)", title="Bit layout")
    ax.legend(ncol=3, loc="lower right", fontsize=8)
    ax.grid(False)
    return fig


@declare.checked
def rounding_error_plot(names: Names = FORMATS, *, low: PositiveFloat = 1e-46, high: PositiveFloat = 1e40) -> Figure:
    """Largest relative rounding error against magnitude, one line per format (log-log)."""
    if high <= low:
        raise ValueError(f"high must be above low ({low:g}); got {high:g}")
    magnitudes = np.logspace(math.log10(low), math.log10(high), 700)
    fig, (ax,) = plotting.figure(width=7.5, height=4.0)
    for i, name in enumerate(names):
        err = relative_rounding_error(magnitudes, name)
        shown = np.where(np.isfinite(err), np.maximum(err, 1e-12), np.nan)
        line, = ax.plot(magnitudes, shown, color=plotting.PALETTE[i % len(plotting.PALETTE)], label=SHORT[name])
        over = np.flatnonzero(~np.isfinite(err))
        if over.size:
            ax.axvline(magnitudes[over[0]], color=line.get_color(), linestyle=":", linewidth=1)
    ax.set(xscale="log", yscale="log", ylim=(1e-9, 2), xlabel="magnitude of the value",
           ylabel="largest relative error",
           title="Rounding error across magnitudes (1 = flushed to zero; dotted = overflow)")
    ax.legend(ncol=3, fontsize=8, loc="center left")
    return fig


@declare.checked
def gradient_histogram_plot(values: Any, *, scale: PositiveFloat = 1.0, name: Format = "float16") -> Figure:
    """Histogram of log2|g| of fp32 gradients, the band that format ``name`` flushes to zero, and the scaled copy."""
    g = _as_float64("values", values).ravel()
    g = g[np.isfinite(g) & (g != 0)]
    if g.size == 0:
        raise ValueError("values must hold at least one finite nonzero gradient")
    g = np.log2(np.abs(g))
    f = float_format(name)
    fig, (ax,) = plotting.figure(width=7.5, height=3.8)
    bins = np.arange(math.floor(g.min()) - 1, math.ceil(g.max() + math.log2(scale)) + 2, 0.5)
    ax.hist(g, bins=bins, color="#0072B2", alpha=0.75, label="fp32 gradients")
    if scale != 1.0:
        ax.hist(g + math.log2(scale), bins=bins, color="#009E73", alpha=0.55,
                label=f"same gradients x 2^{math.log2(scale):g} (loss scaling)")
    flush = math.log2(f.min_subnormal) - 1
    ax.axvspan(bins[0], flush, color="#D55E00", alpha=0.15, label=f"flushed to 0 in {f.short}")
    ax.axvspan(flush, math.log2(f.min_normal), color="#E69F00", alpha=0.15, label=f"{f.short} subnormal (few bits)")
    ax.axvline(math.log2(f.max), color="#D55E00", linestyle="--", linewidth=1, label=f"{f.short} max")
    ax.set(yscale="log", xlabel="log2 |gradient|", ylabel="count", title=f"Which gradients survive in {f.short}")
    ax.legend(fontsize=8, loc="upper left")
    return fig


@declare.checked
def scale_trace_plot(scales: Annotated[Sequence[PositiveFloat], NonEmpty],
                     skipped: Annotated[Sequence[bool], SameLength("scales")],
                     ceiling: Annotated[Any, SameLength("scales")] | None = None) -> Figure:
    """The dynamic loss scale per step (log2), skipped steps marked, and optionally each step's computed ceiling."""
    steps = np.arange(len(scales))
    fig, (ax,) = plotting.figure(width=7.5, height=3.4)
    if ceiling is not None:
        ax.plot(steps, ceiling, color="#888888", linewidth=1, linestyle="--",
                label="computed ceiling: log2(65504 / max |weight grad|)")
    ax.step(steps, np.log2(scales), where="post", color="#0072B2", label="loss scale used at step")
    bad = np.flatnonzero(np.asarray(skipped, dtype=bool))
    ax.scatter(bad, np.log2(np.asarray(scales)[bad]), marker="x", color="#D55E00", zorder=3, s=40,
               label="inf/nan in gradients: step skipped, scale halved")
    ax.set(xlabel="step", ylabel="log2(scale)", title="torch.amp.GradScaler: growth and back-off")
    ax.legend(fontsize=8)
    return fig


@declare.checked
def accumulation_plot(lengths: Annotated[Sequence[int], NonEmpty],
                      errors: Annotated[Mapping[str, Annotated[Sequence[float], SameLength("lengths")]], NonEmpty],
                      ) -> Figure:
    """Relative error of long sums against their length, one line per accumulation scheme."""
    fig = lines_plot(lengths, {k: np.maximum(np.asarray(v), 1e-10) for k, v in errors.items()}, logx=True, logy=True,
                     xlabel="number of terms summed", ylabel="relative error of the sum", title="Summing bf16 numbers")
    ax = fig.axes[0]
    ax.axhline(float_format("bfloat16").unit_roundoff, color="#888888", linestyle=":", label="bf16 unit roundoff")
    ax.legend(fontsize=8)
    return fig


@declare.checked
def throughput_plot(measured: Annotated[Mapping[Text, PositiveFloat], NonEmpty],
                    published: Mapping[Text, PositiveFloat] | None = None, published_label: Text = "published",
                    ) -> Figure:
    """Bars of FLOP/s (log scale) measured here, and optionally a second panel of published figures."""
    panels = [("measured", measured, "measured on this machine")]
    panels += [("published", published, published_label)] if published else []
    height = 0.9 + 0.45 * max(len(v) for _, v, _ in panels)
    fig, axes = plotting.figure(ncols=len(panels), width=5.2 * len(panels), height=height)
    for ax, (_, values, title) in zip(axes, panels):
        names = list(values)
        rates = [values[n] / 1e9 for n in names]
        ax.barh(names, rates, color=[plotting.color_for(n, i) for i, n in enumerate(names)])
        for y, r in enumerate(rates):
            ax.text(r, y, f" {r:,.0f}", va="center", fontsize=8)
        ax.set(xscale="log", xlim=(min(rates) / 2, max(rates) * 8), xlabel="GFLOP/s (log scale)", title=title)
        ax.invert_yaxis()
    return fig


@declare.checked
def memory_stack_plot(breakdowns: Annotated[Mapping[str, Mapping[str, declare.NonNegativeFloat]], declare.NonEmpty],
                      *, unit: declare.Text = "bytes per parameter") -> Figure:
    """Stacked bars: one per scheme, one segment per component (weights, gradients, Adam moments, ...)."""
    fig, (ax,) = plotting.figure(width=6.4, height=4.2)
    components = list(dict.fromkeys(c for parts in breakdowns.values() for c in parts))
    spare = iter([c for c in plotting.PALETTE if c not in _COMPONENT_COLORS.values()] * len(components))
    colors = {c: _COMPONENT_COLORS.get(c) or next(spare) for c in components}  # no two components share a colour
    bottoms = np.zeros(len(breakdowns))
    for comp in components:
        vals = np.array([parts.get(comp, 0) for parts in breakdowns.values()], dtype=float)
        ax.bar(range(len(breakdowns)), vals, bottom=bottoms, label=comp, color=colors[comp], edgecolor="white")
        bottoms += vals
    for x, total in enumerate(bottoms):
        ax.text(x, total, f"{total:g}", ha="center", va="bottom")
    ax.set_xticks(range(len(breakdowns)), [plotting.wrap_label(name, 18) for name in breakdowns])
    ax.set(ylim=(0, bottoms.max() * 1.2 or 1), ylabel=unit,
           title="Training state per parameter, computed (activations not included)")
    fig.legend(fontsize=8, loc="outside lower center", ncols=3)
    return fig


@declare.checked
def lines_plot(x: Annotated[Sequence[float], declare.NonEmpty],
               series: Annotated[Mapping[str, Annotated[Sequence[float], declare.SameLength("x")]], declare.NonEmpty],
               *, xlabel: str, ylabel: str, title: str, logx: bool = False, logy: bool = False) -> Figure:
    """Several labelled lines over the same x (loss curves, memory against batch size, ...)."""
    fig, (ax,) = plotting.figure(width=6.8, height=3.6)
    for i, (label, ys) in enumerate(series.items()):
        ax.plot(x, ys, label=label, color=plotting.PALETTE[i % len(plotting.PALETTE)], marker="o" if len(x) < 20
                else None, markersize=3)
    ax.set(xscale="log" if logx else "linear", yscale="log" if logy else "linear", xlabel=xlabel, ylabel=ylabel,
           title=title)
    ax.legend(fontsize=8)
    return fig


@declare.checked
def loss_curves_plot(runs: Annotated[Mapping[str, Annotated[Sequence[Any], NonEmpty]], NonEmpty], *,
                     window: Annotated[int, Range(1, 100_000)] = 20, title: Text = "Training loss") -> Figure:
    """Per label: the mean over seeds of the ``window``-step moving average of the loss, and the seeds' range."""
    fig, (ax,) = plotting.figure(width=7.0, height=3.8)
    kernel = np.ones(window) / window
    for i, (label, seeds) in enumerate(runs.items()):
        curves = np.array([np.convolve(np.asarray(r.loss, dtype=float), kernel, mode="valid")
                           for r in seeds])
        color = plotting.PALETTE[i % len(plotting.PALETTE)]
        steps = np.arange(curves.shape[1]) + window
        ax.plot(steps, curves.mean(axis=0), color=color, label=f"{label} ({len(curves)} seeds)")
        if len(curves) > 1:
            ax.fill_between(steps, curves.min(axis=0), curves.max(axis=0), color=color, alpha=0.2, linewidth=0)
    ax.set(yscale="log", xlabel="step", ylabel=f"training loss ({window}-step mean)",
           title=title + (" (band: range over seeds)" if max(len(seeds) for seeds in runs.values()) > 1 else ""))
    ax.legend(fontsize=8)
    return fig


@declare.checked
def amax_plot(history: AmaxHistory, *, layer: Annotated[int, Range(0, 10_000)] = 1) -> Figure:
    """The amax of one layer's output and of its gradient per step (log scale): what a per-tensor scale follows."""
    fig, (ax,) = plotting.figure(width=7.0, height=3.4)
    for i, kind in enumerate(KINDS):
        series = history.series(kind)
        if layer >= series.shape[1]:
            raise ValueError(f"layer must be below the {series.shape[1]} layers recorded; got {layer}")
        ax.plot(series[:, layer], color=plotting.PALETTE[i], label=f"{kind} of Linear {layer}")
    ax.set_yscale("log", base=2)
    ax.set(xlabel="training step", ylabel="amax (largest |value|)",
           title="The amax a per-tensor fp8 scale follows, one layer, fp32 training")
    ax.legend(fontsize=8)
    return fig
