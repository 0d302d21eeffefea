"""fp8 numerics on the course model's real tensors, on any CPU: round trips, the amax per step, delayed against
dynamic scaling; fp8 *training* where the device plan finds fp8 units and torchao is installed."""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import numpy as np

from course_utils import calls, declare, devices, display, intervals, timing, validate
from course_utils.declare import NonEmpty, PositiveFloat, Range
from course_utils.precision.formats import Module, Tensor, _linear_outputs, linear_hooks

KINDS = ("activations", "gradients")
MAX_WINDOW = 100_000


@declare.checked
def layer_tensors(model: Module, x: Tensor, y: Tensor) -> dict[str, list[Any]]:
    """{'activations': each ``nn.Linear`` output on (x, y), 'gradients': the loss's gradient at each}, fp32."""
    outputs = _linear_outputs(model, x, y)
    return {"activations": [o.detach().float() for o in outputs],
            "gradients": [o.grad.detach().float() for o in outputs]}


@dataclass(frozen=True)
class CastError:
    """One format's round trip over tensors: the median normwise relative error, the share of nonzero values
    flushed to zero, and of finite values that came back inf or nan."""

    error: float
    flushed: float
    nonfinite: float


@declare.checked
def cast_error(tensors: Annotated[Sequence[Tensor], NonEmpty], roundtrip: Callable[[Any], Any], *,
               timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> CastError:
    """``roundtrip(t)`` (the learner's scale-cast-unscale) applied to each tensor, compared with the tensor."""
    import torch

    errors, nonzero, flushed, bad, total = [], 0, 0, 0, 0
    for t in tensors:
        back = calls.call(roundtrip, t, timeout=timeout, name="roundtrip")
        if not isinstance(back, torch.Tensor) or back.shape != t.shape:
            raise ValueError(f"{calls.describe(roundtrip)} must return a tensor of the input's shape "
                             f"{tuple(t.shape)}; got {getattr(back, 'shape', type(back).__name__)}")
        t64, b64 = t.double(), back.double()
        finite = torch.isfinite(b64)
        norm = float(t64.norm())
        errors.append(float((torch.where(finite, b64, 0) - t64).norm()) / norm if norm else 0.0)
        nz = t64 != 0
        nonzero += int(nz.sum())
        flushed += int((nz & (b64 == 0)).sum())
        bad += int((~finite).sum())
        total += t.numel()
    return CastError(float(np.median(errors)), flushed / max(nonzero, 1), bad / max(total, 1))


@dataclass(frozen=True, repr=False)
class CastTable(display.Tabled):
    """``cast_error`` per tensor kind (activations, gradients) and format."""

    errors: Mapping[str, Mapping[str, CastError]]

    def __getitem__(self, kind: str) -> Mapping[str, CastError]:
        return self.errors[validate.choice("kind", kind, self.errors)]

    def table(self) -> display.Table:
        rows = [(kind, fmt, f"{e.error:.2e}", display.percent(e.flushed, 2), display.percent(e.nonfinite, 2))
                for kind, per in self.errors.items() for fmt, e in per.items()]
        return display.table(["tensors", "format", "relative error (median over layers)", "nonzero -> 0",
                              "inf or nan"], rows,
                             title="Round trip through each format, on the trained model's tensors")


@declare.checked
def cast_errors(tensors: Annotated[Mapping[str, Sequence[Any]], NonEmpty],
                roundtrips: Annotated[Mapping[str, Callable[[Any], Any]], NonEmpty]) -> CastTable:
    """``cast_error`` for every kind of ``tensors`` (e.g. from ``layer_tensors``) and every named round trip."""
    return CastTable({kind: {name: cast_error(ts, fn) for name, fn in roundtrips.items()}
                      for kind, ts in tensors.items()})


@dataclass
class AmaxHistory:
    """Per step and per Linear layer, the amax (largest |value|) of its output and of the gradient arriving at it."""

    activations: list[list[float]] = field(default_factory=list)
    gradients: list[list[float]] = field(default_factory=list)

    @declare.checked
    def series(self, kind: Literal["activations", "gradients"]) -> np.ndarray:
        """steps x layers array of amax values for 'activations' or 'gradients' (whole steps only)."""
        rows = getattr(self, kind)
        layers = max((len(r) for r in rows), default=0)
        whole = [r for r in rows if len(r) == layers]
        if not whole or layers == 0:
            raise ValueError("no step was recorded: run training steps inside `with amax_history(model)`")
        return np.array(whole, dtype=float)


@declare.checked
@contextmanager
def amax_history(model: Module) -> Iterator[AmaxHistory]:
    """Record the amax of every ``nn.Linear`` output of ``model`` and of its gradient, per training step."""
    import torch

    history = AmaxHistory()
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    if not linears:
        raise ValueError("model must contain at least one torch.nn.Linear")

    def record(module: Any, inputs: Any, output: Any) -> None:
        if not (torch.is_grad_enabled() and output.requires_grad):
            return
        if module is linears[0]:
            history.activations.append([])
            history.gradients.append([])
        acts, grads = history.activations[-1], history.gradients[-1]
        acts.append(float(output.detach().abs().max()))
        grads.append(math.nan)
        slot = len(grads) - 1
        output.register_hook(lambda g: grads.__setitem__(slot, float(g.detach().abs().max())))

    with linear_hooks(model, record):
        yield history


@dataclass(frozen=True)
class DelayedScaling:
    """Delayed scaling scored over the steps after the first ``window``: how often a tensor outgrew its history
    (saturating), by how much at most, and the powers of two of range the stale scale left unused (median)."""

    kind: str
    window: int
    checked: int
    saturated: int
    worst_overshoot: float
    unused_log2: float


@declare.checked
def delayed_scaling(history: AmaxHistory, kind: Literal["activations", "gradients"], *,
                    window: Annotated[int, Range(1, MAX_WINDOW)] = 16) -> DelayedScaling:
    """Score delayed scaling on ``history``'s ``kind``: step t is scaled by the max amax of the ``window`` before."""
    amax = history.series(kind)
    if len(amax) <= window:
        raise ValueError(f"history holds {len(amax)} steps; delayed scaling over a window of {window} needs more")
    past = np.array([amax[t - window:t].max(axis=0) for t in range(window, len(amax))])
    now = amax[window:]
    ok = np.isfinite(now) & np.isfinite(past) & (now > 0) & (past > 0)
    over = (now > past) & ok
    ratio = np.where(ok, now / np.where(ok, past, 1), np.nan)
    unused = np.log2(1 / ratio[ok & ~over]) if np.any(ok & ~over) else np.array([0.0])
    return DelayedScaling(kind, window, int(ok.sum()), int(over.sum()),
                          float(np.nanmax(ratio[over])) if over.any() else 1.0, float(np.median(unused)))


# ---------------------------------------------------------------------------------------------------------
# fp8 training on a GPU that has the units


@dataclass(frozen=True)
class Fp8Status:
    """Whether this runtime can run fp8 training with torchao, and if not, why (one sentence)."""

    ready: bool
    why: str


@declare.checked
def gpu_fp8_status(plan: devices.Plan | None = None) -> Fp8Status:
    """Whether fp8 training can run: the plan's fp8 units (default ``devices.current()``, which honours
    ``COURSE_DEVICE``), then torchao, looked up without importing it."""
    plan = devices.current() if plan is None else plan
    device = plan.device
    if plan.skip("fp8"):  # no GPU, or one without fp8 units: the plan's sentence
        return Fp8Status(False, plan.skip("fp8"))
    if importlib.util.find_spec("torchao") is None:
        return Fp8Status(False, f"this {device.name} has fp8 units, but torchao is not installed (pip install torchao)")
    return Fp8Status(True, f"{device.name}, compute capability {'.'.join(map(str, device.capability or ()))}, "
                           "torchao installed")


@dataclass(frozen=True)
class Fp8Training:
    """The same model trained from the same weights in bf16 autocast and in fp8: final losses and step times."""

    final_loss: Mapping[str, float]
    speed: intervals.Speedup


@declare.checked
def compare_training(models: Mapping[Literal["bf16", "fp8"], Module], x: Tensor, y: Tensor, *,
                     steps: Annotated[int, Range(1, MAX_WINDOW)] = 50, lr: PositiveFloat = 1e-3,
                     rounds: Annotated[int, Range(2, 100)] = 6,
                     min_time: Annotated[float, Range(0, 60, low_open=True)] = 1.0,
                     timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> Fp8Training:
    """Train both models on ``x`` -> ``y`` (AdamW, bf16 autocast) for ``steps``, then time a step of each in
    interleaved rounds: final losses and fp8's speed-up over bf16."""
    import torch

    if set(models) != {"bf16", "fp8"}:
        raise ValueError(f"models must map exactly 'bf16' and 'fp8'; got {sorted(models)}")
    steps_of, losses = {}, {}
    for name, model in models.items():
        opt = torch.optim.AdamW(model.parameters(), lr=lr)

        def one_step(model: Any = model, opt: Any = opt) -> Any:
            with torch.autocast(x.device.type, dtype=torch.bfloat16):
                loss = torch.nn.functional.mse_loss(model(x).float(), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            return loss

        run = [float(calls.call(one_step, timeout=timeout, name="models").detach()) for _ in range(steps)]
        losses[name] = float(np.mean(run[-max(1, steps // 5):]))
        steps_of[name] = one_step
    timed = timing.interleaved(steps_of, rounds=rounds, min_time=min_time, timeout=timeout)
    return Fp8Training(losses, intervals.speedup(timed["bf16"], timed["fp8"]))
