"""The one reader of compiler output: Inductor's generated code and cache counts, XLA's optimized HLO (fusions, dots,
collectives, library markers) and cost, torch.compile's own ``TORCH_TRACE`` account through ``tlparse``. A reader
refuses text unlike what it reads rather than count zero."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from course_utils import calls, declare, display, env, validate

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

    def entry(self) -> str:
        """The ENTRY computation: what runs, one instruction per line."""
        match = re.search(r"^ENTRY .*?^}", self.text, re.MULTILINE | re.DOTALL)
        return match.group(0) if match else ""

    def excerpt(self, max_lines: int = 12) -> str:
        """The ENTRY computation with metadata stripped, lines cut at 150 characters."""
        validate.positive("max_lines", max_lines, integer=True)
        lines = [_strip_hlo_attrs(line).rstrip() for line in self.entry().splitlines()]
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


# ---------------------------------------------------------------------------------------------------------
# torch.compile's own account of a run: ``TORCH_TRACE`` logs of a fresh process (torch reads it at start) turned
# into a ``tlparse`` report under ``build/tlparse/<name>``, with the compile, recompile and graph-break counts

_Count = Annotated[int, declare.NonNegative]
_COMPILE_ID = re.compile(r"^\[(\d+)/(\d+)\]$")
_REPORT_ENTRIES = {"job.py", "logs", "report"}  # what torch_compile_report writes into folder/name


@declare.checked
@dataclass(frozen=True, repr=False)
class CompileReport(display.Tabled):
    """What tlparse found: frames compiled, compilations (first + recompiles), graph breaks and the reasons."""

    folder: Path
    frames: _Count
    compilations: _Count
    recompiles: _Count
    graph_breaks: _Count
    recompile_reasons: tuple[str, ...]
    break_reasons: tuple[str, ...]

    def __post_init__(self) -> None:
        validate.instance("folder", self.folder, Path)  # a str would pass the declaration, and not join paths
        if self.recompiles > self.compilations:
            raise ValueError(f"recompiles ({self.recompiles}) cannot exceed compilations ({self.compilations})")

    def table(self) -> display.Table:
        rows = [("frames compiled", str(self.frames)), ("compilations", str(self.compilations)),
                ("recompilations", str(self.recompiles)), ("graph breaks", str(self.graph_breaks))]
        rows += [("recompiled because", r) for r in self.recompile_reasons[:3]]
        rows += [("graph break", r) for r in self.break_reasons[:3]]
        return display.table(["tlparse", "found"], rows, note=f"report: {self.folder / 'index.html'}")


def tlparse_available() -> bool:
    """True where the tlparse executable can be found (the course's lock installs it; Colab does not)."""
    return _tlparse() is not None


def _tlparse() -> str | None:
    beside = Path(sys.executable).with_name("tlparse")
    return str(beside) if beside.exists() else shutil.which("tlparse")


@declare.checked
def torch_compile_report(code: declare.Text, name: declare.FileName = "compile", *,
                         folder: str | Path | None = None, timeout: calls.Timeout = calls.DEFAULT_TIMEOUT,
                         ) -> CompileReport:
    """Run ``code`` as ``folder/name/job.py`` (default ``build/tlparse``) in a fresh process with ``TORCH_TRACE`` set,
    turn its logs into a tlparse report there (replacing only a report) and read the counts back."""
    limit = calls.Limit(timeout, f"code (run as {folder or 'build/tlparse'}/{name}/job.py)")
    if (tlparse := _tlparse()) is None:
        raise RuntimeError("tlparse is not installed: pip install tlparse (the course pins it in requirements.txt)")
    folder = env.build_dir("tlparse") if folder is None else validate.folder("folder", folder)
    out = folder / name
    logs = out / "logs"
    if out.exists():
        found = {p.name for p in out.iterdir()} if out.is_dir() else {"(a file)"}
        if not found <= _REPORT_ENTRIES:
            raise ValueError(f"folder/name {str(out)!r} exists and is not a report this function wrote (it holds "
                             f"{sorted(found - _REPORT_ENTRIES)[:3]}): choose another name or folder")
        shutil.rmtree(out)
    logs.mkdir(parents=True)
    environ = {**os.environ, "TORCH_TRACE": str(logs)}
    job = out / "job.py"
    job.write_text(code)
    run = _run([sys.executable, str(job)], limit, env=environ)
    if run.returncode != 0:
        raise RuntimeError(f"the traced code failed (exit {run.returncode}):\n{run.stderr[-2000:]}")
    log_files = sorted(logs.glob("*.log"))
    if not log_files:
        raise RuntimeError("TORCH_TRACE wrote no log: did the code call a torch.compile'd function?")
    report = out / "report"
    parsed = _run([tlparse, str(log_files[-1]), "-o", str(report), "--no-browser", "--overwrite"], limit)
    if parsed.returncode != 0:
        raise RuntimeError(f"tlparse failed:\n{parsed.stderr[-2000:]}")
    return read_report(report)


def _run(command: list[str], limit: calls.Limit, **options: Any) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=limit.seconds, **options)
    except subprocess.TimeoutExpired:
        raise limit.expired() from None


def read_report(folder: str | Path) -> CompileReport:
    """Counts from a tlparse output folder (its ``compile_directory.json``)."""
    folder = Path(validate.instance("folder", folder, (str, Path)))
    index = folder / "compile_directory.json"
    if not index.is_file():
        raise ValueError(f"folder {str(folder)!r} holds no compile_directory.json: not a tlparse report")
    try:
        directory = json.loads(index.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"folder {str(folder)!r}: compile_directory.json is not JSON: {exc}") from None
    if not isinstance(directory, dict):
        raise ValueError(f"folder {str(folder)!r}: compile_directory.json must hold an object of compile ids; got "
                         f"{type(directory).__name__}")
    ids = {cid: m for cid in directory if (m := _COMPILE_ID.match(cid))}
    recompile_reasons, break_reasons = [], []
    for cid, match in ids.items():
        for name, url in _artifacts(folder, cid, directory[cid]):
            path = folder / url
            if name.startswith("recompile_reasons") and path.is_file():
                recompile_reasons.append(_first_line(path))
            if name.startswith("dynamo_graph_break_reason") and match.group(2) == "0" and path.is_file():
                break_reasons.append(_graph_break_reason(path))
    return CompileReport(
        folder=folder,
        frames=len({m.group(1) for m in ids.values()}),
        compilations=len(ids),
        recompiles=sum(m.group(2) != "0" for m in ids.values()),
        graph_breaks=len(break_reasons),
        recompile_reasons=tuple(recompile_reasons),
        break_reasons=tuple(break_reasons),
    )


def _artifacts(folder: Path, cid: str, entry: Any) -> list[tuple[str, str]]:
    """(name, url) of each artifact of one compile id; ValueError naming the field that is not what tlparse writes."""
    where = f"folder {str(folder)!r}: compile_directory.json entry {cid!r}"
    if not isinstance(entry, dict) or not isinstance(entry.get("artifacts", []), list):
        raise ValueError(f"{where} must be an object with an 'artifacts' list")
    found = []
    for i, artifact in enumerate(entry.get("artifacts", [])):
        if not isinstance(artifact, dict) or not isinstance(artifact.get("name"), str) \
                or not isinstance(artifact.get("url", ""), str):
            raise ValueError(f"{where}: artifacts[{i}] must be an object with a 'name' and a 'url' string; "
                             f"got {artifact!r:.80}")
        url = artifact.get("url", "")
        if Path(url).is_absolute() or ".." in Path(url).parts:
            raise ValueError(f"{where}: artifacts[{i}] field 'url' must stay inside the report folder; got {url!r}")
        found.append((artifact["name"], url))
    return found


def _first_line(path: Path) -> str:
    text = path.read_text(errors="replace").strip()
    try:  # recompile_reasons_N.json holds a JSON list of strings
        loaded = json.loads(text)
        text = loaded[0] if isinstance(loaded, list) and loaded else text
    except json.JSONDecodeError:
        pass
    return str(text).splitlines()[0][:160] if text else ""


def _graph_break_reason(path: Path) -> str:
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("Graph Break Reason:"):
            return line.split(":", 1)[1].strip()[:160]
    return _first_line(path)
