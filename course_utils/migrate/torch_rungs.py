"""The PyTorch ladder of notebook 07 and ``make bench``: the no-migration wins first, then torch.compile.

Order (each rung keeps the ones before): eager fp32 with the data prepared in the training process, then
DataLoader workers (as many as the cores left once the training process keeps one: notebook 04's rule),
pinned memory (CUDA only), autocast where the hardware has the units, a doubled batch: all available in
eager PyTorch today. The fastest of these set-ups (per sample) is kept; a rung slower than the set-up before
it is shown as tried and not kept. Then ``torch.compile`` at the kept set-up, beside its eager twin: what the
migration buys over what the team can have anyway. The compiled model is also measured on
the baseline (compile first), to show how the order of the rungs changes the credit. Compile time is not this
module's figure: ``assess`` measures it cold and warm in fresh processes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from course_utils import env, memory, models, pipeline, validate
from course_utils.migrate import ladder as _ladder
from course_utils.migrate import rungs as _rungs

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


def workers_label(workers: int) -> str:
    """The ladder's label of the loader-workers rung: '+ 1 loader worker', '+ 3 loader workers'."""
    validate.positive("workers", workers, integer=True)
    return f"+ {workers} loader worker{'' if workers == 1 else 's'}"


def make_loader(dataset: Any, batch_size: int, workers: int = 0, pin: bool = False) -> Any:
    """The ladder's DataLoader: ``workers`` processes (forkserver/spawn, never fork), whole batches only."""
    import torch

    validate.count("batch_size", batch_size, high=pipeline.dataset.MAX_BATCH)  # 10**9 grew to 7.9 GiB
    validate.number("workers", workers, low=0, high=64, integer=True)
    validate.instance("pin", pin, bool)

    return torch.utils.data.DataLoader(
        dataset, batch_size=batch_size, num_workers=workers, drop_last=True, pin_memory=pin,
        multiprocessing_context=pipeline.worker_context() if workers else None)


def torch_ladder(dataset: Any, batch_size: int, make_model: Callable[[], Any], *, compiler: Callable[[Any], Any],
                 workers: int | None = None, rounds: int = 4, final_rounds: int = 6) -> tuple[_ladder.Ladder, Any]:
    """Measure the ladder; returns it and the model ``compiler`` compiled for the last rung. Each rung's ``setup``
    records its batch, loader workers, pinned memory and autocast dtype (None: fp32).

    ``compiler`` is the learner's migration, e.g. ``lambda m: torch.compile(m, dynamic=False)``; it wraps the
    models of the two migration rungs and nothing else. ``workers`` defaults to ``pipeline.data_cores()``: every
    core but the one the training process keeps. Two interleaved groups, epoch by epoch: the baseline, compile on
    the baseline and the no-migration rungs, each adding one change to the one before (``rounds``); then, at the
    set-up that was fastest per sample, its eager twin beside its compiled version (``final_rounds``). A
    no-migration rung slower per sample than the best set-up before it is kept off the main order (tried, not
    kept), so compile is never credited for undoing a change that lost.
    """
    import torch

    validate.function("make_model", make_model)
    validate.function("compiler", compiler)
    validate.positive("batch_size", batch_size, integer=True)
    workers = pipeline.data_cores() if workers is None else workers
    validate.number("workers", workers, low=1, high=64, integer=True)
    validate.number("rounds", rounds, low=2, high=100, integer=True)
    validate.number("final_rounds", final_rounds, low=2, high=100, integer=True)
    if len(dataset) < 2 * batch_size * 2:
        raise ValueError(f"dataset must hold at least {4 * batch_size} samples (two steps at twice batch_size); "
                         f"got {len(dataset)}")
    device = next(make_model().parameters()).device
    cuda = device.type == "cuda"
    amp = autocast_dtype(device)
    skipped = []

    def peak(fn: Callable[[], Any]) -> int | None:
        return memory.torch_peak_bytes(fn, device)

    def loader(setup: dict[str, Any]) -> Any:
        return make_loader(dataset, setup["batch"], setup["workers"], setup["pin"])

    def eager(setup: dict[str, Any]) -> Callable[[Any], Any]:
        return train_step(make_model(), setup["amp"])

    baseline = {"workers": 0, "pin": False, "amp": None, "batch": batch_size}
    changes = [(workers_label(workers), {"workers": workers})]
    if cuda:
        changes.append(("+ pinned memory", {"pin": True}))
    else:
        skipped.append("pinned memory (it speeds host-to-GPU copies; there is no GPU here)")
    if amp is not None:
        changes.append((f"+ autocast {str(amp).split('.')[-1]}", {"amp": amp}))
    else:
        skipped.append("mixed precision (this CPU has no bf16 units, so autocast would emulate bf16 slowly; "
                       "notebook 03 measured it)")
    changes.append((f"+ batch {2 * batch_size}", {"batch": 2 * batch_size}))
    setups = [baseline]
    for _label, change in changes:
        setups.append({**setups[-1], **change})
    first = _rungs.measure_rungs([
        ("eager fp32", loader(baseline), eager(baseline), _ladder.NO_MIGRATION),
        ("torch.compile on the baseline", loader(baseline), train_step(compiler(make_model())), _ladder.MIGRATION),
        *[(label, loader(setup), eager(setup), _ladder.NO_MIGRATION) for (label, _), setup in zip(changes, setups[1:])],
    ], rounds=rounds, peak_memory=peak)
    first = [replace(r, setup=setup) for r, setup in zip(first, [baseline, baseline, *setups[1:]])]
    base, on_baseline, cheap = first[0], first[1], first[2:]
    chain = [base, *cheap]
    best = min(range(len(chain)), key=lambda i: chain[i].sample_time)
    twin_label = f"{chain[best].label} (eager, beside compile)"
    compiled = compiler(make_model())
    twin, last = _rungs.measure_rungs([
        (twin_label, loader(setups[best]), eager(setups[best]), _ladder.NO_MIGRATION),
        ("+ torch.compile", loader(setups[best]), train_step(compiled, setups[best]["amp"]), _ladder.MIGRATION),
    ], rounds=final_rounds, peak_memory=peak)
    twin, last = replace(twin, setup=setups[best]), replace(last, setup=setups[best])
    dropped = [replace(r, note=_ladder.DROPPED, over=chain[i].label) for i, r in enumerate(cheap) if i + 1 > best]
    if not cuda and torch.cuda.device_count() == 0:
        skipped.append("data parallel (one device here; notebook 05 measured two processes on one CPU)")
    return _ladder.build_ladder(
        [*chain[:best + 1], replace(last, over=twin_label)], skipped=skipped,
        extra=[on_baseline, *dropped, replace(twin, note=_ladder.TWIN, over=chain[best].label)]), compiled


def step_agreement(make_model: Callable[[], Any], batch: Any, *, compiler: Callable[[Any], Any],
                   amp_dtype: Any = None, steps: int = 3) -> dict[str, float]:
    """Largest relative difference of the losses of ``steps`` training steps, eager against compiled by
    ``compiler`` (the learner's migration), each from fresh identical weights; and of the final weights."""

    validate.function("make_model", make_model)
    validate.number("steps", steps, low=1, high=100, integer=True)
    validate.function("compiler", compiler)
    runs = []
    for wrap in (lambda m: m, compiler):
        model = make_model()
        step = train_step(wrap(model), amp_dtype)
        runs.append(([float(step(batch)) for _ in range(steps)], [p.detach().clone() for p in model.parameters()]))
    (loss_a, w_a), (loss_b, w_b) = runs
    loss = max(abs(a - b) / max(abs(a), 1e-12) for a, b in zip(loss_a, loss_b))
    weights = max(float((a - b).abs().max() / a.abs().max().clamp_min(1e-12)) for a, b in zip(w_a, w_b))
    return {"loss": loss, "weights": weights, "final_loss": loss_a[-1]}


# Tolerances of amp_agreement over 6 steps of the course CNN: correct bf16 autocast stays well inside both
# (its error is bf16 rounding of the operands); casting the whole model to bf16 (no fp32 master weights, so
# small updates are rounded away) exceeds both. tests/migrate checks the two cases.
AMP_LOSS_RTOL = 3e-3
AMP_UPDATE_RTOL = 5e-2


def amp_agreement(make_model: Callable[[], Any], batch: Any, dtype: Any, *, steps: int = 6,
                  master_weights: bool = True) -> dict[str, Any]:
    """Train an fp32 copy and a mixed-precision copy from the same weights for ``steps`` steps on ``batch``.

    Returns the largest relative difference of their losses, the relative difference of their weight updates
    (norm of the difference over the norm of fp32's update), and ``close``: both within ``AMP_LOSS_RTOL`` and
    ``AMP_UPDATE_RTOL``. ``master_weights=False`` casts the whole model to ``dtype`` instead of autocasting
    (the classic wrong cast: updates smaller than a bf16 step are rounded away), which the check must catch.
    """
    import torch

    validate.function("make_model", make_model)
    validate.number("steps", steps, low=2, high=100, integer=True)
    validate.instance("master_weights", master_weights, bool)
    runs = []
    for mixed in (False, True):
        model = validate.instance("the model make_model returned", make_model(), torch.nn.Module)
        start = [p.detach().float().clone() for p in model.parameters()]
        x, y = batch
        if mixed and not master_weights:
            model, x = model.to(dtype), x.to(dtype)
        step = train_step(model, dtype if mixed and master_weights else None)
        losses = [float(step((x, y))) for _ in range(steps)]
        update = torch.cat([(p.detach().float() - s).flatten() for p, s in zip(model.parameters(), start)])
        runs.append((losses, update))
    (loss_a, up_a), (loss_b, up_b) = runs
    loss = max(abs(a - b) / max(abs(a), 1e-12) for a, b in zip(loss_a, loss_b))
    update = float((up_b - up_a).norm() / up_a.norm().clamp_min(1e-12))
    return {"loss": loss, "update": update, "steps": steps,
            "close": loss <= AMP_LOSS_RTOL and update <= AMP_UPDATE_RTOL}
