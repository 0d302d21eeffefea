"""The PyTorch ladder of notebook 07 and ``make bench``: the no-migration wins first, then torch.compile.

Order (each rung keeps the ones before): eager fp32 with the data prepared in the training process, then
DataLoader workers, pinned memory (CUDA only), autocast where the hardware has the units, a doubled batch:
all available in eager PyTorch today. Then ``torch.compile``: what the migration buys. The compiled model
is also measured on the baseline (compile first) for the attribution in both orders.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Callable
from pathlib import Path
from typing import Any

from course_utils import env, models, pipeline, validate
from course_utils.migrate import ladder as _ladder

_LR = 0.05


def autocast_dtype(device: Any) -> Any:
    """The mixed-precision dtype worth using on ``device``: bf16 on GPUs with bf16 kernels (compute capability
    8.0+; emulation does not count) and on CPUs with bf16 units, fp16 on older GPUs, None (skip the rung) on
    CPUs that would emulate bf16 slowly."""
    import torch

    if isinstance(device, str):
        try:
            device = torch.device(device)
        except (RuntimeError, ValueError):
            raise ValueError(f"device must be a device name such as 'cpu' or 'cuda'; got {device!r}") from None
    kind = validate.instance("device", device, torch.device).type
    if kind == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported(including_emulation=False) else torch.float16
    if kind != "cpu":
        raise ValueError(f"device must be a CPU or CUDA device; got {device!r}")
    return torch.bfloat16 if env.has_native_bf16() else None


def train_step(model: Any, amp_dtype: Any = None) -> Callable[[Any], Any]:
    """The course's one PyTorch SGD step (``models.torch_sgd_step``), at this lesson's learning rate."""
    return models.torch_sgd_step(model, lr=_LR, amp_dtype=amp_dtype)


def step_factory(make_model: Callable[[], Any], amp_dtype: Any = None) -> Callable[[Callable[[Any], Any]], Any]:
    """``make_step(compiler)`` for the checklist: a fresh model from ``make_model``, wrapped by ``compiler``,
    trained by ``train_step``."""
    validate.function("make_model", make_model)
    return lambda compiler: train_step(validate.function("compiler", compiler)(make_model()), amp_dtype)


def compile_model(model: Any, **kwargs: Any) -> Any:
    """``torch.compile(model, dynamic=False)``: shapes are fixed per rung, so no dynamic-shape graph."""
    import torch

    return torch.compile(model, **{"dynamic": False, **kwargs})


def peak_bytes(fn: Callable[[], Any], device: Any) -> int | None:
    """Memory one call of ``fn`` adds at its peak: CUDA's allocator on a GPU, else the process's peak RSS
    after freed memory is handed back (None where /proc cannot reset the mark)."""
    import torch

    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        fn()
        torch.cuda.synchronize(device)
        return int(torch.cuda.max_memory_allocated(device) - base)
    status = Path("/proc/self/status")
    if not status.exists():
        return None
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return None

    def field(name: str) -> int:
        line = next(x for x in status.read_text().splitlines() if x.startswith(name + ":"))
        return int(line.split()[1]) * 1024

    base = field("VmRSS")
    fn()
    return max(0, field("VmHWM") - base)


def make_loader(dataset: Any, batch_size: int, workers: int = 0, pin: bool = False) -> Any:
    """The ladder's DataLoader: ``workers`` processes (forkserver/spawn, never fork), whole batches only."""
    import torch

    validate.positive("batch_size", batch_size, integer=True)
    validate.number("workers", workers, low=0, high=64, integer=True)
    validate.instance("pin", pin, bool)

    return torch.utils.data.DataLoader(
        dataset, batch_size=batch_size, num_workers=workers, drop_last=True, pin_memory=pin,
        multiprocessing_context=pipeline.worker_context() if workers else None)


def torch_ladder(dataset: Any, batch_size: int, make_model: Callable[[], Any], *, workers: int = 2,
                 rounds: int = 2, final_rounds: int = 4) -> tuple[_ladder.Ladder, Any]:
    """Measure the ladder; returns it and the model compiled at the final rung's settings.

    Rungs measured together are interleaved epoch by epoch (``rounds``; ``final_rounds`` for the pair that
    decides what the migration buys, so its median rests on enough steady steps).
    """
    import torch

    validate.function("make_model", make_model)
    validate.positive("batch_size", batch_size, integer=True)
    validate.number("workers", workers, low=1, high=64, integer=True)
    validate.number("rounds", rounds, low=1, high=100, integer=True)
    validate.number("final_rounds", final_rounds, low=1, high=100, integer=True)
    if len(dataset) < 2 * batch_size * 2:
        raise ValueError(f"dataset must hold at least {4 * batch_size} samples (two steps at twice batch_size); "
                         f"got {len(dataset)}")
    device = next(make_model().parameters()).device
    cuda = device.type == "cuda"
    amp = autocast_dtype(device)
    skipped = []

    def peak(fn: Callable[[], Any]) -> int | None:
        return peak_bytes(fn, device)

    def eager(dtype: Any = None) -> Callable[[Any], Any]:
        return train_step(make_model(), dtype)

    base = _ladder.measure_rungs([
        ("eager fp32", make_loader(dataset, batch_size, 0, False), eager(), _ladder.NO_MIGRATION),
        ("torch.compile on the baseline", make_loader(dataset, batch_size, 0, False),
         train_step(compile_model(make_model())), _ladder.MIGRATION),
    ], rounds=rounds, peak_memory=peak)
    cheap = [(f"+ {workers} loader workers", make_loader(dataset, batch_size, workers, False), eager(),
              _ladder.NO_MIGRATION)]
    if cuda:
        cheap.append(("+ pinned memory", make_loader(dataset, batch_size, workers, True), eager(),
                      _ladder.NO_MIGRATION))
    else:
        skipped.append("pinned memory (it speeds host-to-GPU copies; there is no GPU here)")
    if amp is not None:
        cheap.append((f"+ autocast {str(amp).split('.')[-1]}", make_loader(dataset, batch_size, workers, cuda),
                      eager(amp), _ladder.NO_MIGRATION))
    else:
        skipped.append("mixed precision (this CPU has no bf16 units, so autocast would emulate bf16 slowly; "
                       "notebook 03 measured it)")
    middle = _ladder.measure_rungs(cheap, rounds=rounds, peak_memory=peak)
    compiled = compile_model(make_model())
    final = _ladder.measure_rungs([
        (f"+ batch {2 * batch_size}", make_loader(dataset, 2 * batch_size, workers, cuda), eager(amp),
         _ladder.NO_MIGRATION),
        ("+ torch.compile", make_loader(dataset, 2 * batch_size, workers, cuda), train_step(compiled, amp),
         _ladder.MIGRATION),
    ], rounds=final_rounds, peak_memory=peak)
    if not cuda and torch.cuda.device_count() == 0:
        skipped.append("data parallel (one device here; notebook 05 measured two processes on one CPU)")
    return _ladder.build_ladder([base[0], *middle, *final], skipped=skipped, extra=[base[1]]), compiled


def step_agreement(make_model: Callable[[], Any], batch: Any, *, amp_dtype: Any = None, steps: int = 3,
                   compiler: Callable[[Any], Any] | None = None) -> dict[str, float]:
    """Largest relative difference of the losses of ``steps`` training steps, eager against compiled
    (``compiler``, default ``compile_model``), each from fresh identical weights; and of the final weights."""

    validate.function("make_model", make_model)
    validate.number("steps", steps, low=1, high=100, integer=True)
    compiler = compile_model if compiler is None else validate.function("compiler", compiler)
    runs = []
    for wrap in (lambda m: m, compiler):
        model = make_model()
        step = train_step(wrap(model), amp_dtype)
        runs.append(([float(step(batch)) for _ in range(steps)], [p.detach().clone() for p in model.parameters()]))
    (loss_a, w_a), (loss_b, w_b) = runs
    loss = max(abs(a - b) / max(abs(a), 1e-12) for a, b in zip(loss_a, loss_b))
    weights = max(float((a - b).abs().max() / a.abs().max().clamp_min(1e-12)) for a, b in zip(w_a, w_b))
    return {"loss": loss, "weights": weights, "final_loss": loss_a[-1]}
