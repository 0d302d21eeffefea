"""The traffic model: an elementwise chain's bytes op by op and fused (counted on "meta" tensors: any size is free),
its FLOPs and roofline time; attention's bytes against a blocked kernel's; fusions counted in a trace; refusals."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from course_utils import calls, declare, display, env, profile, roofline, validate
from course_utils.declare import PositiveInt, Range, Text

# ops that hand back their input under another shape without moving a byte, although their schema is not a view
ALIASING_OPS = frozenset({"_unsafe_view", "alias", "lift_fresh"})


@dataclass(frozen=True)
class OpTraffic:
    """One eager op: its name, the bytes it reads (distinct input tensors) and writes, its output elements."""

    name: str
    read_bytes: int
    write_bytes: int
    elements: int


@dataclass(frozen=True, repr=False)
class Traffic(display.Tabled):
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
        return sum(op.read_bytes + op.write_bytes for op in self.ops)

    @property
    def fused_bytes(self) -> int:
        """One kernel: each input read once, each output written once; intermediates stay in registers."""
        return self.input_bytes + self.output_bytes

    @property
    def ratio(self) -> float:
        """unfused / fused bytes: the most fusion can give when both runs reach the same bandwidth."""
        return self.unfused_bytes / self.fused_bytes

    @property
    def flops(self) -> int:
        """One FLOP per output element per op (a tanh counts as one, although it costs many instructions)."""
        return sum(op.elements for op in self.ops)

    def table(self) -> display.Table:
        rows = [(op.name, display.format_bytes(op.read_bytes), display.format_bytes(op.write_bytes))
                for op in self.ops]
        rows += [("unfused total", display.format_bytes(self.unfused_bytes), ""),
                 ("fused (inputs + output)", display.format_bytes(self.fused_bytes), "")]
        return display.table(["eager op", "reads", "writes"], rows,
                             title=f"{self.n_ops} eager ops; bytes ratio {self.ratio:.1f}x (computed)")


def _meta_tensor(spec: Any, index: int) -> Any:
    import torch

    if isinstance(spec, torch.Tensor):
        return torch.empty(spec.shape, dtype=spec.dtype, device="meta")
    try:
        shape, dtype = spec
        if not isinstance(dtype, torch.dtype):  # 'float32', or NumPy's np.float32
            dtype = getattr(torch, getattr(dtype, "__name__", str(dtype)))
        return torch.empty(tuple(int(validate.non_negative("size", n, integer=True)) for n in shape), dtype=dtype,
                           device="meta")
    except (TypeError, ValueError, AttributeError) as error:
        raise TypeError(f"inputs[{index}] must be a torch.Tensor or a (shape, dtype) pair such as ((8,), 'float32'); "
                        f"got {spec!r}") from error


@declare.checked
def trace_traffic(fn: Callable[..., Any], inputs: Any, *more: Any,
                  timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> Traffic:
    """The bytes of each op ``fn`` (PyTorch code) launches on shape-only tensors (tensors or ``(shape, dtype)``
    pairs): a tensor read twice by one op counts once; views and ``ALIASING_OPS`` move nothing."""
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
            name = str(func.overloadpacket.__name__)
            if not getattr(func, "is_view", False) and name not in ALIASING_OPS:
                outs = tensors(out)
                ops.append(OpTraffic(name, sum(t.nbytes for t in tensors((args, kwargs))),
                                     sum(t.nbytes for t in outs), sum(t.numel() for t in outs)))
            return out

    metas = [_meta_tensor(spec, i) for i, spec in enumerate((inputs, *more))]
    with calls.time_limit(timeout, calls.describe(fn)), Recorder():
        result = fn(*metas)
    return Traffic(tuple(ops), sum(t.nbytes for t in metas), sum(t.nbytes for t in tensors(result)))


@declare.checked
def torch_counted_flops(fn: Callable[..., Any], *args: Any, timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> int:
    """FLOPs that ``FlopCounterMode`` counts for ``fn(*args)``: matmul-like ops only, elementwise ops count 0."""
    from torch.utils.flop_counter import FlopCounterMode

    with calls.time_limit(timeout, calls.describe(fn)), FlopCounterMode(display=False) as counter:
        fn(*args)
    return int(counter.get_total_flops())


# ---------------------------------------------------------------------------------------------------------
# Predicted vs measured


@dataclass(frozen=True)
class VariantResult:
    """One way of running a kernel: the bytes it must move, the time predicted from them, the time measured."""

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
        """Achieved / measured memory roof: the '% of bandwidth' kind of utilisation."""
        return self.achieved_bandwidth / self.bandwidth

    def point(self) -> roofline.Point:
        return roofline.Point(self.name, self.flops, self.bytes, self.seconds)


@dataclass(frozen=True, repr=False)
class PredictionTable(display.Tabled):
    """Predicted and measured time, achieved GB/s and % of the measured bandwidth, one row per variant."""

    rows: tuple[VariantResult, ...]

    def __getitem__(self, name: str) -> VariantResult:
        for row in self.rows:
            if row.name == name:
                return row
        raise KeyError(f"no variant named {name!r}; variants are {[r.name for r in self.rows]}")

    def table(self) -> display.Table:
        rows = [(r.name, display.format_bytes(r.bytes), display.format_time(r.predicted),
                 display.format_time(r.seconds), display.format_rate(r.achieved_bandwidth),
                 display.percent(r.fraction_of_bandwidth)) for r in self.rows]
        return display.table(["variant", "bytes moved", "predicted (computed)", "measured (median)",
                              "achieved", "% of bandwidth"], rows,
                             note="bandwidth in decimal GB/s; bytes in binary units")


Measured = Mapping[Text, Any]  # name -> a Measurement (its median is used) or seconds


@declare.checked
def compare_to_prediction(traffic: Traffic, machine: roofline.Machine, *, unfused: Measured | None = None,
                          fused: Measured | None = None) -> PredictionTable:
    """Rows for each measured variant (a Measurement's median, or seconds), with the roofline prediction: unfused
    variants are charged ``traffic.unfused_bytes``, fused ones ``traffic.fused_bytes``."""
    rows = []
    for is_fused, label, group in ((False, "unfused", unfused), (True, "fused", fused)):
        nbytes = traffic.fused_bytes if is_fused else traffic.unfused_bytes
        for name, measured in (group or {}).items():
            seconds = float(validate.positive(f"{label}[{name!r}]", getattr(measured, "median", measured)))
            rows.append(VariantResult(name, is_fused, nbytes, traffic.flops, seconds,
                                      machine.roofline_time(traffic.flops, nbytes), machine.bandwidth))
    if not rows:
        raise ValueError("unfused or fused must hold at least one measurement")
    return PredictionTable(tuple(rows))


@declare.checked
@dataclass(frozen=True, repr=False)
class AttentionBytes(display.Tabled):
    """Bytes of one attention call: one B x H x L x S score matrix, q, k, v read and the output written once (ideal),
    and a blocked kernel's, whose query blocks re-read the ``visited`` of ``blocks`` key and value block pairs."""

    scores: PositiveInt
    ideal: PositiveInt
    blocked: PositiveInt
    visited: Annotated[int, Range(0)]
    blocks: PositiveInt

    @property
    def visited_share(self) -> float:
        """Share of the (query block, key block) pairs the kernel computes; the rest the mask skips."""
        return self.visited / self.blocks

    def table(self) -> display.Table:
        rows = [("one score matrix (B x H x L x S, fp32)", display.format_bytes(self.scores)),
                ("fused, ideal: q, k, v read once, output written once", display.format_bytes(self.ideal)),
                (f"fused, blocked: k and v re-read for each of {self.visited} visited block pairs",
                 display.format_bytes(self.blocked)),
                ("block pairs the mask lets the kernel skip", display.percent(1 - self.visited_share))]
        return display.table(["attention bytes (computed)", "bytes"], rows)


def _shape(name: str, tensor: Any) -> tuple[int, ...]:
    shape = getattr(tensor, "shape", None)
    if shape is None or len(shape) != 4:
        raise TypeError(f"{name} must be a 4-d tensor (batch, heads, length, dim); got {type(tensor).__name__} "
                        f"with shape {shape}")
    return tuple(int(s) for s in shape)


@declare.checked
def attention_bytes(q: Any, k: Any, v: Any, block_mask: Any = None) -> AttentionBytes:
    """The bytes of ``attention(q, k, v)`` for tensors shaped (batch, heads, length, dim), fp32 counted as 4 bytes
    per element, and, given FlexAttention's ``block_mask``, what a blocked kernel reads (see ``AttentionBytes``)."""
    (b, h, length, e), (kb, kh, s, ke), (vb, vh, vs, ev) = _shape("q", q), _shape("k", k), _shape("v", v)
    if (kb, kh, ke) != (b, h, e) or (vb, vh, vs) != (b, h, s):
        raise ValueError(f"q, k, v must agree in batch, heads, length of k and v, and dim of q and k; got "
                         f"q {(b, h, length, e)}, k {(kb, kh, s, ke)}, v {(vb, vh, vs, ev)}")
    fp32 = 4
    scores = b * h * length * s * fp32
    q_bytes, k_bytes, v_bytes, out = (b * h * length * e * fp32, b * h * s * e * fp32, b * h * s * ev * fp32,
                                      b * h * length * ev * fp32)
    ideal = q_bytes + k_bytes + v_bytes + out
    if block_mask is None:
        return AttentionBytes(scores, ideal, ideal, 1, 1)
    sizes = getattr(block_mask, "BLOCK_SIZE", None)
    partial = getattr(block_mask, "kv_num_blocks", None)
    if sizes is None or partial is None:
        raise TypeError(f"block_mask must be a FlexAttention BlockMask (create_block_mask); got "
                        f"{type(block_mask).__name__}")
    full = getattr(block_mask, "full_kv_num_blocks", None)
    q_block, kv_block = (int(n) for n in sizes)
    per_mask = int(partial.sum()) + (0 if full is None else int(full.sum()))
    mask_b, mask_h = int(partial.shape[0]), int(partial.shape[1])
    visited = per_mask * (b // mask_b) * (h // mask_h)  # a mask made with B=None, H=None serves every batch, head
    blocks = b * h * -(-length // q_block) * -(-s // kv_block)
    tile = kv_block * (e + ev) * fp32  # one key block and one value block
    blocked = q_bytes + out + visited * tile
    return AttentionBytes(scores, ideal, blocked, visited, blocks)


@declare.checked
def compile_error(fn: Callable[..., Any], *args: Any, timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> str | None:
    """The type name of the exception a compiler raised in ``fn(*args)`` (its C++ log dropped), or None when it ran.
    An error raised in the learner's own code, or past ``timeout`` seconds (None: the size's default), propagates."""
    with env.silenced_stderr(), calls.time_limit(timeout, calls.describe(fn)):
        try:
            fn(*args)
        except Exception as error:  # the point is to report it, not to raise it
            if not _from_compiler(error):
                raise
            return type(error).__name__
    return None


_COMPILER_MODULES = ("tensorflow", "jax", "jaxlib", "torch", "keras")


def _from_compiler(error: BaseException) -> bool:
    """True when ``error`` was raised inside a framework (the compiler refused), not in the learner's own code."""
    if isinstance(error, TimeoutError):
        return False
    frames = []
    tb = error.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_globals.get("__name__", ""))
        tb = tb.tb_next
    last = frames[-1] if frames else ""
    return last.split(".")[0] in _COMPILER_MODULES


# ---------------------------------------------------------------------------------------------------------
# Kernels seen in a profiler trace (course_utils.profile), to compare with the compiler's own output

_INDUCTOR_EVENT = re.compile(r"^(?:graph_\d+_)?((?:cpp|triton)_\w+)$")


@declare.checked
def trace_kernels(trace: profile.Trace, framework: str) -> dict[str, int]:
    """{name: events} of a trace's generated kernels: Inductor's (``cpp_fused_...``, ``triton_...``) or XLA's thunks
    (closed by ``end: X``; XLA may split one fusion into several tasks: compare names, not events per call)."""
    return dict(Counter(name for name, _ in _kernel_events(trace, framework)))


def _kernel_events(trace: profile.Trace, framework: str) -> list[tuple[str, Any]]:
    """(kernel name, event) for every generated-kernel event of ``trace`` (see ``trace_kernels``)."""
    framework = validate.framework(framework)
    events = trace.events
    if not events:
        raise ValueError("trace holds no events at all: nothing was recorded, so no kernel can be counted")
    if framework == "torch":
        return [(m.group(1), e) for e in events if (m := _INDUCTOR_EVENT.match(e.name))]
    closed = {e.name[len("end: "):] for e in events if e.name.startswith("end: ")}
    return [(e.name, e) for e in events if e.name in closed]


@declare.checked
def kernel_busy_share(trace: profile.Trace, framework: str) -> float:
    """Busy time as ``nvidia-smi`` counts it, from a CPU trace: the share of the span from the first generated
    kernel's start to the last one's end in which one of them ran (overlaps counted once)."""
    spans = sorted((e.start, e.end) for _, e in _kernel_events(trace, framework))
    if not spans:
        raise ValueError(f"the trace holds no generated kernel of {framework}: nothing to measure busy time on")
    busy, (low, high) = 0.0, spans[0]
    for start, end in spans[1:]:
        if start > high:
            busy, low = busy + high - low, start
        high = max(high, end)
    busy += high - low
    window = max(end for _, end in spans) - spans[0][0]
    return busy / window if window > 0 else 1.0
