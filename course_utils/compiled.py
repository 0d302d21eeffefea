"""The one reader of compiler output: Inductor's generated code and cache counts, XLA's optimized HLO (fusions,
collectives, library markers) and cost; a reader refuses text unlike what it reads rather than count zero."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from course_utils import calls, declare, validate

# ---------------------------------------------------------------------------------------------------------
# Inductor's generated code

_KERNEL_DEF = re.compile(r"^(\w+) = async_compile\.(\w+)\(", re.MULTILINE)
_EXTERN = re.compile(r"extern_kernels\.(\w+)\(")
_FALLBACK = re.compile(r"torch\.ops\.(\w+)\.(\w+)\.\w+\(")


@dataclass(frozen=True)
class InductorCode:
    """One graph's generated module: its kernels (C++ ``cpp_fused_*`` or Triton), library calls, fallbacks."""

    source: str

    def __post_init__(self) -> None:
        if not isinstance(self.source, str) or "def call(" not in self.source:
            raise ValueError("source must be a module Inductor generated (it defines call(args)); got "
                             f"{self.source!r:.60}")

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

    @property
    def allocates_output(self) -> bool:
        """True when the launch code allocates a fresh buffer (``empty_strided``) rather than writing into one given."""
        return "empty_strided" in self.call_body()

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
            raise ValueError("this module has no generated kernel (kernels is empty)")
        name = names[0] if name is None else validate.choice("name", name, names)
        start = self.source.index(f"{name} = async_compile.")
        end = self.source.find("''')", start)
        return self.source[start:end + 4] if end >= 0 else self.source[start:]

    def excerpt(self, max_lines: int = 14) -> str:
        """The arithmetic of the first kernel (its ``tmp`` lines, C++ or Triton), at most ``max_lines``."""
        validate.positive("max_lines", max_lines, integer=True)
        lines = [line.strip() for line in self.kernel_source().splitlines()]
        body = [line for line in lines if re.match(r"(auto\s+)?tmp\d+ = ", line) or ".store(" in line
                or "tl.store(" in line]
        return "\n".join(body[:max_lines] + ([f"... ({len(body) - max_lines} more lines)"]
                                             if len(body) > max_lines else []))


@contextlib.contextmanager
def capture_inductor_code() -> Iterator[list[InductorCode]]:
    """Collect the modules Inductor writes (also on a cache hit) in the block: ``run_and_get_code``'s hook without its
    ``dynamo.reset()``, so compiled functions elsewhere keep their caches."""
    from torch._inductor.graph import GraphLowering

    found: list[InductorCode] = []
    previous = GraphLowering.save_output_code
    GraphLowering.save_output_code = lambda code: found.append(InductorCode(code))  # type: ignore[assignment]
    try:
        yield found
    finally:
        GraphLowering.save_output_code = previous  # type: ignore[assignment]


@declare.checked
def inductor_cache_counts(since: Mapping[Literal["hits", "misses"], Annotated[int, declare.NonNegative]] | None = None,
                          ) -> dict[str, int]:
    """Inductor's FX-graph cache ``{"hits": n, "misses": n}`` so far in this process, minus ``since`` (an earlier
    reading) where given: read before and after a compile to see what that compile found on disk."""
    import torch._dynamo.utils

    counters = torch._dynamo.utils.counters["inductor"]
    now = {"hits": int(counters.get("fxgraph_cache_hit", 0)), "misses": int(counters.get("fxgraph_cache_miss", 0))}
    if since is None:
        return now
    return {k: v - int(since.get(k, 0)) for k, v in now.items()}


# ---------------------------------------------------------------------------------------------------------
# XLA's optimized HLO (JAX and TensorFlow)

# Which library XLA handed a dot or convolution to, from markers in the optimised HLO.
LIBRARY_MARKERS = (
    ("__ynn_fusion", "YNNPACK", "the dot is a __ynn_fusion in the optimised HLO"),
    ("__onednn", "oneDNN", "a __onednn custom call in the optimised HLO"),
    ("__cublas", "cuBLAS", "a __cublas custom call in the optimised HLO"),
    ("cublas", "cuBLAS", "a cuBLAS custom call in the optimised HLO"),
    ("triton", "Triton", "a Triton fusion in the optimised HLO"),
)
COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")

_HLO_FUSION = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=.*?\bfusion\(.*?kind=(k\w+)", re.MULTILINE)
_HLO_ATTRS = ("metadata", "backend_config", "frontend_attributes", "statistics", "origin")


@dataclass(frozen=True)
class HloSummary:
    """The ``fusion`` instructions (name, kind) and custom-calls found in an optimized HLO module."""

    text: str

    def __post_init__(self) -> None:
        validate.instance("text", self.text, str)
        if "HloModule" not in self.text or "ENTRY" not in self.text:
            raise ValueError(f"text must be HLO module text (HloModule ... ENTRY ...); got {self.text[:60]!r}")

    @property
    def fusions(self) -> list[tuple[str, str]]:
        return _HLO_FUSION.findall(self.text)

    @property
    def n_fusions(self) -> int:
        return len(self.fusions)

    @property
    def custom_calls(self) -> list[str]:
        """Targets of custom-calls: host callbacks (``pure_callback``) and library calls."""
        return re.findall(r'custom-call\(.*?custom_call_target="([^"]+)"', self.text)

    def count(self, op: str) -> int:
        """How many instructions of ``op`` (e.g. 'dot', 'convert', 'convolution') the whole module holds."""
        validate.text("op", op)
        return len(re.findall(rf"\s{re.escape(op)}\(", self.text))

    def collectives(self) -> dict[str, int]:
        """Collective instructions per kind (the async ``-start`` form counted as one)."""
        return {op: self.count(op) + self.count(f"{op}-start") for op in COLLECTIVES}

    def library(self) -> tuple[str, str]:
        """(library, evidence) that XLA handed the module's dot/convolution to: YNNPACK, oneDNN, cuBLAS, Triton,
        or XLA:CPU's own Eigen runtime for a plain dot."""
        for marker, library, evidence in LIBRARY_MARKERS:
            if marker in self.text:
                return library, evidence
        if re.search(r"\bdot\(", self.text):
            return "Eigen (XLA:CPU runtime)", "a plain dot in the optimised HLO, which XLA:CPU runs with Eigen"
        return "unknown", "no dot found in the optimised HLO"

    def operand_types(self, op: str = "dot") -> tuple[str, ...]:
        """The element types (e.g. 'bf16', 'f32') of the operands of every ``op`` instruction."""
        validate.text("op", op)
        types = dict(re.findall(r"%([\w.\-]+) = (\w+)\[", self.text))  # every value: name -> element type
        found: set[str] = set()
        for args in re.findall(rf"= \w+\[[^\]]*\]\{{?[^ ]*\}}? {re.escape(op)}\(([^)]*)\)", self.text):
            found |= {types.get(name.strip().lstrip("%"), "?") for name in args.split(",")}
        return tuple(sorted(found))

    def excerpt(self, max_lines: int = 12) -> str:
        """The ENTRY computation (what runs) with metadata stripped, lines cut at 150 characters."""
        validate.positive("max_lines", max_lines, integer=True)
        entry = re.search(r"^ENTRY .*?^}", self.text, re.MULTILINE | re.DOTALL)
        lines = [_strip_hlo_attrs(line).rstrip() for line in (entry.group(0) if entry else "").splitlines()]
        lines = [line if len(line) <= 150 else line[:147] + "..." for line in lines]
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
    return HloSummary(text)  # which refuses text that is not an HLO module


def _compiled(fn: Any, args: tuple[Any, ...], jit_kwargs: dict[str, Any], timeout: float | None) -> Any:
    """``jax.jit(fn).lower(*args).compile()``: tracing runs ``fn``'s Python, so it and the compile must end within
    ``timeout`` seconds (else ``calls.LearnerTimeout`` names ``fn``)."""
    import jax

    jitted = fn if hasattr(fn, "lower") else jax.jit(fn, **jit_kwargs)
    with calls.limit(fn, timeout):
        return jitted.lower(*args).compile()


@declare.checked
def jax_hlo(fn: Callable[..., Any], *args: Any, timeout: calls.Timeout = calls.DEFAULT_TIMEOUT,
            **jit_kwargs: Any) -> str:
    """Optimized HLO of ``jax.jit(fn, **jit_kwargs)`` for ``args``: ``jit(f).lower(*args).compile().as_text()``.
    Tracing and compiling must end within ``timeout`` seconds."""
    return _compiled(fn, args, jit_kwargs, timeout).as_text()


@declare.checked
def jax_cost(fn: Callable[..., Any], *args: Any, timeout: calls.Timeout = calls.DEFAULT_TIMEOUT,
             **jit_kwargs: Any) -> dict[str, float]:
    """XLA's own 'flops', 'transcendentals' (a tanh is one, not a FLOP) and 'bytes accessed' (of the fused module) for
    ``jax.jit(fn)`` on ``args``, from ``cost_analysis()``; tracing and compiling must end within ``timeout``."""
    analysis = _compiled(fn, args, jit_kwargs, timeout).cost_analysis()
    if isinstance(analysis, (list, tuple)):  # older jax returned one dict per device
        analysis = analysis[0] if analysis else {}
    return {key: float(analysis.get(key, 0.0)) for key in ("flops", "transcendentals", "bytes accessed")}


@declare.checked
def tf_hlo(fn: Any, *args: Any, timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> str:
    """Optimized HLO of a ``tf.function(jit_compile=True)`` for ``args`` (``experimental_get_compiler_ir``).
    Tracing (``fn``'s Python) and compiling must end within ``timeout`` seconds."""
    if not hasattr(fn, "experimental_get_compiler_ir"):
        raise TypeError(f"fn must be a tf.function created with jit_compile=True; got {type(fn).__name__}")
    with calls.limit(fn, timeout):
        return fn.experimental_get_compiler_ir(*args)(stage="optimized_hlo")

