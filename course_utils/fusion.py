"""Operator fusion, counted: bytes an elementwise chain moves unfused vs fused, and the kernels compilers emit.

- ``trace_traffic(fn, *inputs)`` runs a PyTorch function on shape-only ("meta") tensors and records every
  op it would launch eagerly, with the bytes each reads and writes; ``Traffic`` turns that into the bytes
  of the unfused run (every op reads its inputs from memory and writes its output) and of a fused run
  (each input read once, the output written once).
- ``compare_to_prediction`` puts measured times beside the times the roofline predicts from those bytes.
- ``inductor_code`` / ``capture_inductor_code`` read the code Inductor generated (C++ on CPU, Triton on
  GPU) and count its kernels; ``hlo_summary`` counts the ``fusion`` instructions in XLA's optimized HLO
  (``jax_hlo``, ``tf_hlo``); ``torch_graph_breaks`` counts what stops Dynamo.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from course_utils import plotting, roofline

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from course_utils.timing import Measurement


# ---------------------------------------------------------------------------------------------------------
# Bytes moved


@dataclass(frozen=True)
class OpTraffic:
    """One eager op: its name, the bytes it reads (distinct input tensors) and writes, its output elements."""

    name: str
    read_bytes: int
    write_bytes: int
    elements: int

    @property
    def bytes(self) -> int:
        return self.read_bytes + self.write_bytes


@dataclass(frozen=True)
class Traffic:
    """What a function moves through memory when run op by op (unfused) and as one fused kernel."""

    ops: tuple[OpTraffic, ...]
    input_bytes: int
    output_bytes: int

    @property
    def n_ops(self) -> int:
        """Ops that touch memory (views excluded): the kernels an eager run launches."""
        return len(self.ops)

    @property
    def unfused_bytes(self) -> int:
        """Every op reads its inputs from memory and writes its output back."""
        return sum(op.bytes for op in self.ops)

    @property
    def fused_bytes(self) -> int:
        """One kernel: each input read once, each output written once; intermediates stay in registers."""
        return self.input_bytes + self.output_bytes

    @property
    def ratio(self) -> float:
        """unfused / fused bytes: the speed-up fusion can give where the chain is memory-bound."""
        return self.unfused_bytes / self.fused_bytes

    @property
    def flops(self) -> int:
        """One FLOP per output element per op (a tanh counts as one, although it costs many)."""
        return sum(op.elements for op in self.ops)

    def predicted_seconds(self, machine: roofline.Machine, *, fused: bool) -> float:
        """Roofline time of the fused or unfused run on ``machine``."""
        return machine.roofline_time(self.flops, self.fused_bytes if fused else self.unfused_bytes)

    def rows(self) -> list[tuple[str, int, int]]:
        return [(op.name, op.read_bytes, op.write_bytes) for op in self.ops]

    def __repr__(self) -> str:
        return (f"<Traffic {self.n_ops} ops: unfused {_mb(self.unfused_bytes)}, fused {_mb(self.fused_bytes)}, "
                f"ratio {self.ratio:.1f}x>")

    def _repr_html_(self) -> str:
        body = "".join(f"<tr><td style='text-align:left'>{escape(n)}</td><td>{_mb(r)}</td><td>{_mb(w)}</td></tr>"
                       for n, r, w in self.rows())
        foot = (f"<tr><th style='text-align:left'>unfused total</th><th colspan=2>{_mb(self.unfused_bytes)}</th></tr>"
                f"<tr><th style='text-align:left'>fused (inputs + output)</th><th colspan=2>{_mb(self.fused_bytes)}"
                f"</th></tr>")
        return ("<table><thead><tr><th>eager op</th><th>reads</th><th>writes</th></tr></thead>"
                f"<tbody>{body}{foot}</tbody></table>")


def _mb(nbytes: float) -> str:
    return f"{nbytes / 1e6:.1f} MB"


def _meta_tensor(spec: Any) -> Any:
    import torch

    if isinstance(spec, torch.Tensor):
        return torch.empty(spec.shape, dtype=spec.dtype, device="meta")
    if isinstance(spec, tuple) and len(spec) == 2:
        shape, dtype = spec
        if isinstance(dtype, str):
            dtype = getattr(torch, dtype, None)
        elif not isinstance(dtype, torch.dtype):
            dtype = getattr(torch, getattr(dtype, "__name__", str(dtype)), None)  # numpy dtypes: float32 ...
        if not isinstance(dtype, torch.dtype):
            raise ValueError(f"dtype must name a torch dtype such as 'float32'; got {spec[1]!r}")
        return torch.empty(tuple(shape), dtype=dtype, device="meta")
    raise TypeError(f"each input must be a torch.Tensor or a (shape, dtype) pair; got {spec!r}")


def trace_traffic(fn: Callable[..., Any], *inputs: Any) -> Traffic:
    """Run ``fn`` (PyTorch code) on shape-only tensors and record the bytes of each op it would launch.

    ``inputs`` are tensors or ``(shape, dtype)`` pairs; nothing is computed, so any size is free. A tensor
    read twice by one op (``h * h``) counts once; view ops (reshape, expand) move nothing and are skipped.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable; got {type(fn).__name__}")
    if not inputs:
        raise ValueError("inputs must hold at least one tensor or (shape, dtype) pair")
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    ops: list[OpTraffic] = []

    def tensors(tree: Any) -> list[Any]:
        unique: dict[int, Any] = {}
        for leaf in tree_leaves(tree):
            if isinstance(leaf, torch.Tensor):
                unique.setdefault(id(leaf), leaf)
        return list(unique.values())

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            if not getattr(func, "is_view", False):
                reads = sum(t.nbytes for t in tensors((args, kwargs)))
                outs = tensors(out)
                ops.append(OpTraffic(str(func.overloadpacket.__name__), reads, sum(t.nbytes for t in outs),
                                     sum(t.numel() for t in outs)))
            return out

    metas = [_meta_tensor(spec) for spec in inputs]
    with Recorder():
        result = fn(*metas)
    return Traffic(tuple(ops), sum(t.nbytes for t in metas), sum(t.nbytes for t in tensors(result)))


# ---------------------------------------------------------------------------------------------------------
# Predicted vs measured


@dataclass(frozen=True)
class VariantResult:
    """One way of running the chain: the bytes it must move, the time predicted from them, the time measured."""

    name: str
    fused: bool
    bytes: float
    flops: float
    seconds: float
    predicted: float
    bandwidth: float

    @property
    def achieved_bandwidth(self) -> float:
        """Model bytes / measured time (bytes/s)."""
        return self.bytes / self.seconds

    @property
    def fraction_of_bandwidth(self) -> float:
        return self.achieved_bandwidth / self.bandwidth

    @property
    def slowdown(self) -> float:
        """Measured / predicted time: 1.0 means on the roof."""
        return self.seconds / self.predicted

    def point(self) -> roofline.Point:
        return roofline.Point(self.name, self.flops, self.bytes, self.seconds)


@dataclass(frozen=True)
class PredictionTable:
    """Predicted and measured time, achieved GB/s and % of the measured bandwidth, one row per variant."""

    rows: tuple[VariantResult, ...]

    def __getitem__(self, name: str) -> VariantResult:
        for row in self.rows:
            if row.name == name:
                return row
        raise KeyError(f"no variant named {name!r}; variants are {[r.name for r in self.rows]}")

    def points(self) -> list[roofline.Point]:
        return [row.point() for row in self.rows]

    def _table(self) -> list[list[str]]:
        from course_utils.timing import format_time

        lines = [["variant", "bytes moved", "predicted", "measured", "achieved", "% of bandwidth"]]
        for r in self.rows:
            lines.append([r.name, _mb(r.bytes), format_time(r.predicted), format_time(r.seconds),
                          f"{r.achieved_bandwidth / 1e9:.1f} GB/s", f"{100 * r.fraction_of_bandwidth:.0f}%"])
        return lines

    def __repr__(self) -> str:
        table = self._table()
        widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in table)

    def _repr_html_(self) -> str:
        head, *body = self._table()
        rows = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in line) + "</tr>" for line in body)
        return f"<table><thead><tr>{''.join(f'<th>{escape(c)}</th>' for c in head)}</tr></thead>{rows}</table>"


def compare_to_prediction(
    traffic: Traffic,
    machine: roofline.Machine,
    *,
    unfused: Mapping[str, Measurement | float] | None = None,
    fused: Mapping[str, Measurement | float] | None = None,
) -> PredictionTable:
    """Rows for each measured variant (a Measurement's median, or seconds), with the roofline prediction.

    Unfused variants are charged ``traffic.unfused_bytes``, fused ones ``traffic.fused_bytes``.
    """
    rows = []
    for is_fused, group in ((False, unfused or {}), (True, fused or {})):
        for name, measured in group.items():
            seconds = getattr(measured, "median", measured)
            if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0:
                raise ValueError(f"measurement of {name!r} must be a Measurement or seconds > 0; got {measured!r}")
            nbytes = traffic.fused_bytes if is_fused else traffic.unfused_bytes
            rows.append(VariantResult(name, is_fused, nbytes, traffic.flops, float(seconds),
                                      machine.roofline_time(traffic.flops, nbytes), machine.bandwidth))
    if not rows:
        raise ValueError("pass at least one measurement in unfused= or fused=")
    return PredictionTable(tuple(rows))


def prediction_plot(table: PredictionTable, *, title: str | None = None) -> Figure:
    """Measured time per variant (bars) with the roofline prediction for its bytes (black ticks)."""
    rows = list(table.rows)
    scale, unit = plotting._time_unit(min(min(r.seconds, r.predicted) for r in rows))
    fig, (ax,) = plotting.figure(height=0.8 + 0.42 * len(rows))
    names = [r.name for r in rows]
    ax.barh(names, [r.seconds / scale for r in rows], color=[plotting.color_for(n, i) for i, n in enumerate(names)],
            label="measured (median)")
    ax.scatter([r.predicted / scale for r in rows], names, marker="|", s=400, color="#111111", zorder=3,
               label="predicted from bytes / bandwidth")
    for y, r in enumerate(rows):
        ax.text(r.seconds / scale, y, f" {100 * r.fraction_of_bandwidth:.0f}% of roof", va="center", fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel(f"time per call ({unit}, log scale)")
    ax.set_title(title or "Predicted from bytes moved vs measured")
    ax.legend(loc="lower right", fontsize=8)
    return fig


# ---------------------------------------------------------------------------------------------------------
# Inductor's generated code

_KERNEL_DEF = re.compile(r"^(\w+) = async_compile\.(\w+)\(", re.MULTILINE)
_EXTERN = re.compile(r"extern_kernels\.(\w+)\(")
_FALLBACK = re.compile(r"torch\.ops\.(\w+)\.(\w+)\.\w+\(")


@dataclass(frozen=True)
class InductorCode:
    """One graph's generated module: its kernels (C++ ``cpp_fused_*`` or Triton), library calls, fallbacks."""

    source: str

    @property
    def kernels(self) -> list[str]:
        """Names of the kernels Inductor generated (each one fused loop nest)."""
        return [m.group(1) for m in _KERNEL_DEF.finditer(self.source)]

    @property
    def language(self) -> str:
        kinds = {m.group(2) for m in _KERNEL_DEF.finditer(self.source)}
        return "triton" if "triton" in kinds else "c++" if kinds else "none"

    @property
    def extern_calls(self) -> list[str]:
        """Library kernels called as they are (matmul goes to oneDNN/MKL/cuBLAS: ``mm``, ``addmm``)."""
        return _EXTERN.findall(self.call_body())

    @property
    def fallback_ops(self) -> list[str]:
        """Ops Inductor could not generate code for and calls as opaque ops (a custom op, an aten fallback)."""
        return [f"{ns}.{op}" for ns, op in _FALLBACK.findall(self.call_body())]

    def call_body(self) -> str:
        """The ``call`` function: the launch sequence, one line per kernel (comments dropped)."""
        match = re.search(r"\n    def call\(self, args\):\n(.*?)\n\n", self.source, re.DOTALL)
        if match is None:
            match = re.search(r"\ndef call\(args\):\n(.*?)\n\n", self.source, re.DOTALL)
        body = match.group(1) if match else ""
        return "\n".join(line for line in body.splitlines() if line.strip() and not line.strip().startswith("#"))

    def kernel_source(self, name: str | None = None) -> str:
        """Source of one generated kernel (the first one by default)."""
        names = self.kernels
        if not names:
            raise ValueError("this module has no generated kernel")
        name = names[0] if name is None else name
        if name not in names:
            raise ValueError(f"name must be one of {names}; got {name!r}")
        start = self.source.index(f"{name} = async_compile.")
        end = self.source.find("''')", start)
        return self.source[start:end + 4] if end >= 0 else self.source[start:]

    def excerpt(self, max_lines: int = 14) -> str:
        """The arithmetic of the first kernel (its ``tmp`` lines, C++ or Triton), at most ``max_lines``."""
        lines = [line.strip() for line in self.kernel_source().splitlines()]
        body = [line for line in lines if re.match(r"(auto\s+)?tmp\d+ = ", line) or ".store(" in line
                or "tl.store(" in line]
        return "\n".join(body[:max_lines] + ([f"... ({len(body) - max_lines} more lines)"]
                                             if len(body) > max_lines else []))


@contextlib.contextmanager
def capture_inductor_code() -> Iterator[list[InductorCode]]:
    """Collect the modules Inductor writes (also on a cache hit) while the block runs a function's first call.

    Uses the hook that ``torch._inductor.utils.run_and_get_code`` uses, without its ``dynamo.reset()``, so
    compiled functions elsewhere keep their caches.
    """
    from torch._inductor.graph import GraphLowering

    found: list[InductorCode] = []
    previous = GraphLowering.save_output_code
    GraphLowering.save_output_code = lambda code: found.append(InductorCode(code))  # type: ignore[assignment]
    try:
        yield found
    finally:
        GraphLowering.save_output_code = previous  # type: ignore[assignment]


# ---------------------------------------------------------------------------------------------------------
# XLA's optimized HLO (JAX and TensorFlow)

_HLO_FUSION = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=.*?\bfusion\(.*?kind=(k\w+)", re.MULTILINE)
_HLO_ATTRS = ("metadata", "backend_config", "frontend_attributes", "statistics", "origin")


@dataclass(frozen=True)
class HloSummary:
    """The ``fusion`` instructions (name, kind) and host custom-calls found in an optimized HLO module."""

    text: str

    @property
    def fusions(self) -> list[tuple[str, str]]:
        return _HLO_FUSION.findall(self.text)

    @property
    def n_fusions(self) -> int:
        return len(self.fusions)

    @property
    def custom_calls(self) -> list[str]:
        """Targets of custom-calls: host callbacks (``pure_callback``) and library calls (oneDNN matmul)."""
        return re.findall(r'custom-call\(.*?custom_call_target="([^"]+)"', self.text)

    @property
    def dots(self) -> int:
        return len(re.findall(r"\bdot\(", self.entry()))

    def entry(self) -> str:
        """The ENTRY computation: what runs, one instruction per line."""
        match = re.search(r"^ENTRY .*?^}", self.text, re.MULTILINE | re.DOTALL)
        return match.group(0) if match else ""

    def excerpt(self, max_lines: int = 12, width: int = 150) -> str:
        """The ENTRY computation with metadata stripped, lines cut at ``width``."""
        lines = [_strip_hlo_attrs(line).rstrip() for line in self.entry().splitlines()]
        lines = [line if len(line) <= width else line[: width - 3] + "..." for line in lines]
        return "\n".join(lines[:max_lines] + ([f"... ({len(lines) - max_lines} more lines)"]
                                              if len(lines) > max_lines else []))


def _strip_hlo_attrs(line: str) -> str:
    """Drop ``, metadata={...}`` and similar attributes (balanced braces) from one HLO line."""
    for attr in _HLO_ATTRS:
        while (start := line.find(f", {attr}=")) >= 0:
            i = line.find("=", start) + 1
            if i >= len(line) or line[i] not in "{\"'":
                end = line.find(",", i)
                line = line[:start] + (line[end:] if end >= 0 else "")
                continue
            opening, closing = ("{", "}") if line[i] == "{" else (line[i], line[i])
            depth, j = 0, i
            while j < len(line):
                if line[j] == opening and (opening != closing or depth == 0):
                    depth += 1
                elif line[j] == closing:
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            line = line[:start] + line[j + 1:]
    return line


def hlo_summary(text: str) -> HloSummary:
    """Summarise optimized HLO text (from ``jax_hlo`` or ``tf_hlo``)."""
    if not isinstance(text, str) or "HloModule" not in text:
        raise ValueError("text must be HLO module text (it starts with 'HloModule')")
    return HloSummary(text)


def jax_hlo(fn: Callable[..., Any], *args: Any, **jit_kwargs: Any) -> str:
    """Optimized HLO of ``jax.jit(fn, **jit_kwargs)`` for ``args``: ``jit(f).lower(*args).compile().as_text()``."""
    import jax

    jitted = fn if hasattr(fn, "lower") else jax.jit(fn, **jit_kwargs)
    return jitted.lower(*args).compile().as_text()


def tf_hlo(fn: Any, *args: Any) -> str:
    """Optimized HLO of a ``tf.function(jit_compile=True)`` for ``args`` (``experimental_get_compiler_ir``)."""
    if not hasattr(fn, "experimental_get_compiler_ir"):
        raise TypeError("fn must be a tf.function created with jit_compile=True")
    return fn.experimental_get_compiler_ir(*args)(stage="optimized_hlo")


# ---------------------------------------------------------------------------------------------------------
# What stops the compiler


@dataclass(frozen=True)
class GraphBreaks:
    """Dynamo's view of a function: how many graphs it captured, how many breaks, and the first reasons."""

    graphs: int
    breaks: int
    reasons: tuple[str, ...]

    def __repr__(self) -> str:
        return f"<GraphBreaks graphs={self.graphs} breaks={self.breaks}>"


def torch_graph_breaks(fn: Callable[..., Any], *args: Any) -> GraphBreaks:
    """Trace ``fn(*args)`` with ``torch._dynamo.explain`` (no Inductor compile) and count graphs and breaks."""
    import torch

    out = torch._dynamo.explain(fn)(*args)
    reasons = tuple(dict.fromkeys(str(r.reason).strip().splitlines()[0] for r in out.break_reasons))
    return GraphBreaks(out.graph_count, out.graph_break_count, reasons)


def compile_error(fn: Callable[..., Any], *args: Any) -> str | None:
    """Call ``fn(*args)``; return the type name of the exception it raises, or None when it runs.

    For showing an expected compiler refusal (``tf.function(jit_compile=True)`` around a Python callback)
    without a traceback; the C++ log lines the failure writes to file descriptor 2 are dropped.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable; got {type(fn).__name__}")
    sys.stderr.flush()
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        fn(*args)
    except Exception as error:  # the point is to report it, not to raise it
        return type(error).__name__
    finally:
        os.dup2(saved, 2)
        os.close(devnull)
        os.close(saved)
    return None


# ---------------------------------------------------------------------------------------------------------
# Size sweep


def cache_sizes() -> dict[str, int]:
    """Data/unified CPU cache sizes in bytes per level ({'L1d': ..., 'L2': ..., 'L3': ...}); empty if unknown."""
    found: dict[str, int] = {}
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
        except OSError:
            continue
        if kind == "Instruction":
            continue
        units = {"K": 2**10, "M": 2**20, "G": 2**30}
        value = int(size[:-1]) * units[size[-1]] if size[-1] in units else int(size)
        found[f"L{level}{'d' if kind == 'Data' else ''}"] = value
    return found


def speedup_vs_size_plot(
    sizes_bytes: Sequence[float],
    speedups: Mapping[str, Sequence[float]],
    *,
    predicted: float | None = None,
    caches: Mapping[str, int] | None = None,
    title: str | None = None,
) -> Figure:
    """Speed-up of fused over unfused against the bytes one tensor holds (log x), cache sizes marked."""
    if not sizes_bytes or any(len(v) != len(sizes_bytes) for v in speedups.values()):
        raise ValueError("each speedups series must have one value per entry of sizes_bytes")
    fig, (ax,) = plotting.figure(width=7.0, height=4.0)
    for i, (label, values) in enumerate(speedups.items()):
        ax.plot(sizes_bytes, values, marker="o", color=plotting.color_for(label, i), label=label)
    ax.axhline(1.0, color="#333333", linewidth=1, linestyle="--")
    if predicted is not None:
        ax.axhline(predicted, color="#888888", linewidth=1, linestyle=":",
                   label=f"bytes ratio {predicted:.1f}x (memory-bound limit)")
    for name, size in (caches if caches is not None else cache_sizes()).items():
        if min(sizes_bytes) / 4 <= size <= max(sizes_bytes) * 4:
            ax.axvline(size, color="#bbbbbb", linewidth=1)
            ax.annotate(name, (size, 1.0), textcoords="offset points", xytext=(3, 6), fontsize=8, color="#666666")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("size of one tensor (bytes, log scale)")
    ax.set_ylabel("speed-up of fused over op-by-op (log scale)")
    ax.set_title(title or "Fusion speed-up against tensor size")
    ax.legend(fontsize=8)
    return fig
