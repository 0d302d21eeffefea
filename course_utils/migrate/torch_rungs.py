"""The PyTorch ladder of notebook 07: the notebook's rungs measured as steady steps interleaved epoch by epoch (load
drift hits all alike): every set-up and compile first, then the fastest beside compile last."""

from __future__ import annotations

import itertools
import os
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Annotated, Any, Literal

from course_utils import declare, env, memory, models, pipeline, timing, validate
from course_utils.declare import MaxItems, MinItems, NonEmpty, Range, Text
from course_utils.migrate import ladder as _ladder
from course_utils.migrate.ladder import KINDS, Rung
from course_utils.migrate.parity import relative

LR = 0.05  # the lesson's learning rate, in every framework
Rounds = Annotated[int, Range(2, 100)]


@declare.checked
def autocast_dtype(device: Any) -> Any:
    """The mixed-precision dtype worth using on ``device``: bf16 on GPUs with bf16 kernels (compute capability
    8.0+) and on CPUs with bf16 units, fp16 on older GPUs, None (skip the rung) on CPUs that would emulate bf16."""
    import torch

    try:
        kind = torch.device(device).type
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(f"device must be a device name such as 'cpu' or 'cuda'; got {device!r}") from None
    if kind == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported(including_emulation=False) else torch.float16
    if kind != "cpu":
        raise ValueError(f"device must be a CPU or CUDA device; got {device!r}")
    return torch.bfloat16 if env.has_native_bf16() else None


def train_step(model: Any, amp_dtype: Any = None) -> Callable[[Any], Any]:
    """The course's one PyTorch SGD step (``models.torch_sgd_step``), at this lesson's learning rate."""
    return models.torch_sgd_step(model, lr=LR, amp_dtype=amp_dtype)


def step_factory(make_model: Callable[[], Any], amp_dtype: Any = None) -> Callable[[Callable[[Any], Any]], Any]:
    """``make_step(compiler)``: a fresh model from ``make_model`` wrapped by ``compiler``, trained by ``train_step``."""
    return lambda compiler: train_step(validate.function("compiler", compiler)(make_model()), amp_dtype)


@declare.checked
def workers_label(workers: Annotated[int, Range(1, 64)]) -> str:
    """The ladder's label of the loader-workers rung: '+ 1 loader worker', '+ 3 loader workers'."""
    return f"+ {workers} loader worker{'' if workers == 1 else 's'}"


@declare.checked
def make_loader(dataset: Any, batch_size: Annotated[int, Range(1, pipeline.dataset.MAX_BATCH)],
                workers: Annotated[int, Range(0, 64)] = 0, pin: bool = False) -> Any:
    """A DataLoader of ``workers`` processes (forkserver/spawn, never fork), whole batches only."""
    import torch

    return torch.utils.data.DataLoader(
        dataset, batch_size=batch_size, num_workers=workers, drop_last=True, pin_memory=pin,
        multiprocessing_context=pipeline.worker_context() if workers else None)


def skipped_rungs(device: Any, amp_dtype: Any) -> list[str]:
    """The sentences of the rungs a ladder on ``device`` leaves out (``amp_dtype``: ``autocast_dtype``'s answer)."""
    import torch

    cuda = autocast_dtype(device) is not None and torch.device(device).type == "cuda"  # autocast_dtype checks device
    return [*([] if cuda else ["pinned memory (it speeds host-to-GPU copies; there is no GPU here)"]),
            *([] if amp_dtype is not None else ["mixed precision (this CPU has no bf16 units, so autocast would "
                                                "emulate bf16 slowly; notebook 03 measured it)"]),
            *([] if cuda and torch.cuda.device_count() > 1 else
              ["data parallel (one device here; notebook 05 measured two processes on one CPU)"])]


@declare.checked
def torch_ladder(setups: Annotated[Mapping[Text, Mapping[str, Any]], MinItems(1), MaxItems(16)],
                 loader: Callable[..., Any], step: Callable[..., Any], make_model: Callable[[], Any], *,
                 compiler: Callable[..., Any], skipped: Sequence[Text] = (), rounds: Rounds = 4,
                 final_rounds: Rounds = 6) -> tuple[_ladder.Ladder, Any]:
    """Measure ``setups`` (label -> set-up, the first the baseline, each later one change; ``loader`` and ``step``
    build a rung) in two groups; return the ladder and the last rung's compiled model (``compiler`` wraps only
    those)."""
    import torch

    labels, chain_setups = list(setups), list(setups.values())
    device = next(make_model().parameters()).device
    ran = {"threads": torch.get_num_threads(), "device": str(device)}  # recorded beside each rung's set-up

    peak = partial(memory.torch_peak_bytes, device=device)
    def eager(setup: Mapping[str, Any]) -> Callable[[Any], Any]:
        return step(make_model(), setup)

    base = chain_setups[0]
    first = measure_rungs([
        (labels[0], loader(base), eager(base), _ladder.NO_MIGRATION),
        ("torch.compile on the baseline", loader(base), step(compiler(make_model()), base), _ladder.MIGRATION),
        *[(label, loader(setup), eager(setup), _ladder.NO_MIGRATION) for label, setup in list(setups.items())[1:]],
    ], rounds=rounds, peak_memory=peak)
    first = [replace(r, setup={**s, **ran}) for r, s in zip(first, [base, base, *chain_setups[1:]])]
    chain, on_baseline = [first[0], *first[2:]], first[1]
    best = min(range(len(chain)), key=lambda i: chain[i].sample_time)
    twin_label = f"{chain[best].label} (eager, beside compile)"
    compiled = compiler(make_model())
    twin, last = measure_rungs([
        (twin_label, loader(chain_setups[best]), eager(chain_setups[best]), _ladder.NO_MIGRATION),
        ("+ torch.compile", loader(chain_setups[best]), step(compiled, chain_setups[best]), _ladder.MIGRATION),
    ], rounds=final_rounds, peak_memory=peak)
    twin, last = (replace(r, setup={**chain_setups[best], **ran}) for r in (twin, last))
    dropped = [replace(r, note=_ladder.DROPPED, over=chain[i].label) for i, r in enumerate(chain[1:]) if i + 1 > best]
    return _ladder.build_ladder(
        [*chain[:best + 1], replace(last, over=twin_label)], skipped=skipped,
        extra=[on_baseline, *dropped, replace(twin, note=_ladder.TWIN, over=chain[best].label)]), compiled


@declare.checked
def step_agreement(make_model: Callable[[], Any], batch: Any, *, compiler: Callable[..., Any],
                   amp_dtype: Any = None, steps: Annotated[int, Range(1, 100)] = 3) -> dict[str, float]:
    """Largest relative difference of ``steps`` losses and final weights, eager against ``compiler``, same init."""
    runs = []
    for wrap in (lambda m: m, compiler):
        model = make_model()
        step = train_step(wrap(model), amp_dtype)
        runs.append(([float(step(batch)) for _ in range(steps)], [p.detach().clone() for p in model.parameters()]))
    (loss_a, w_a), (loss_b, w_b) = runs
    loss = relative(loss_a, loss_b)[0]
    weights = max(float((a - b).abs().max() / a.abs().max().clamp_min(1e-12)) for a, b in zip(w_a, w_b))
    return {"loss": loss, "weights": weights, "final_loss": loss_a[-1]}


# amp_agreement's tolerances over 6 steps of the course CNN: bf16 autocast stays inside, the whole model cast exceeds.
AMP_LOSS_RTOL = 3e-3
AMP_UPDATE_RTOL = 5e-2


@declare.checked
def amp_agreement(make_model: Callable[[], Any], batch: Any, dtype: Any, *, steps: Annotated[int, Range(2, 100)] = 6,
                  master_weights: bool = True) -> dict[str, Any]:
    """fp32 against mixed precision over ``steps`` steps from the same weights: losses' and updates' relative
    differences, ``close`` within tolerance (``master_weights=False``: the wrong whole-model cast)."""
    import torch

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
    loss = relative(loss_a, loss_b)[0]
    update = float((up_b - up_a).norm() / up_a.norm().clamp_min(1e-12))
    return {"loss": loss, "update": update, "steps": steps,
            "close": loss <= AMP_LOSS_RTOL and update <= AMP_UPDATE_RTOL}


_GROUPS = itertools.count(1)
MAX_ROUNDS = 1000  # epochs of each rung: past this a typo, not a measurement
Spec = tuple[Text, Iterable[Any], Callable[..., Any], Literal[KINDS]]


def _steady(timelines: Sequence[pipeline.Timeline]) -> tuple[list[float], list[float], float]:
    """Per-step times, their compute parts and the wait share of the steady steps (each epoch's first step holds
    the loader start; with one step per epoch, every step)."""
    pairs = [(w, c) for t in timelines for i, (w, c) in enumerate(zip(t.waits, t.computes))
             if i > 0 and t.epochs[i] == t.epochs[i - 1]]
    pairs = pairs or [(w, c) for t in timelines for w, c in zip(t.waits, t.computes)]
    totals = [w + c for w, c in pairs]
    return totals, [c for _, c in pairs], sum(w for w, _ in pairs) / sum(totals)


def _first(label: str, loader: Iterable[Any], step: Callable[[Any], Any]) -> tuple[Any, float]:
    batch = next(iter(loader), None)
    if batch is None:
        raise ValueError(f"loader for rung {label!r} yields no batch")
    try:
        pipeline.dataset.fingerprint(batch)  # what the timed loop reads of every batch
    except (TypeError, ValueError) as error:
        raise ValueError(f"loader for rung {label!r} yields a batch the loop cannot read: {error}") from None
    with timing.Timer(label) as first:
        timing.sync(step(batch))
    return batch, first.elapsed


def _batch_size(label: str, batch: Any) -> int:
    """Samples in a batch: the length of its first element (x of an (x, y) pair), or of the batch itself."""
    first = batch[0] if isinstance(batch, (tuple, list)) and batch else batch
    try:
        return int(first.shape[0]) if hasattr(first, "shape") else len(first)
    except TypeError:
        raise ValueError(f"loader for rung {label!r}: cannot tell the batch size of a {type(first).__name__}; yield "
                         "(x, y) pairs of arrays") from None


@declare.checked
def measure_rungs(specs: Annotated[Sequence[Spec], NonEmpty], *, rounds: Annotated[int, Range(1, MAX_ROUNDS)] = 1,
                  peak_memory: Callable[..., Any] | None = None) -> list[Rung]:
    """Measure rungs (label, loader, step, kind) interleaved: one epoch of each in turn, ``rounds`` times, the
    first step timed apart (compile, warm-up); ``peak_memory(fn)`` measures what one more step adds."""
    firsts = [_first(label, loader, step) for label, loader, step, _ in specs]
    lines: list[list[pipeline.Timeline]] = [[] for _ in specs]
    for _ in range(rounds):
        for i, (label, loader, step, _kind) in enumerate(specs):
            lines[i].append(pipeline.run_loop(loader, step, epochs=1, label=label))
    rungs, group = [], next(_GROUPS)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    for (label, _loader, step, kind), (batch, first), timelines in zip(specs, firsts, lines):
        totals, computes, wait_share = _steady(timelines)
        peak = peak_memory(lambda: timing.sync(step(batch))) if peak_memory is not None else None  # noqa: B023
        per_round = [_steady([t]) for t in timelines]
        rungs.append(Rung(label, kind, _batch_size(label, batch), first,
                          timing.Measurement(label, tuple(totals), first_call=first), wait_share, peak,
                          tuple(p for t in timelines[:1] for p in t.fingerprints),
                          tuple(statistics.median(r[0]) for r in per_round), group,
                          timing.Measurement(f"{label} (compute)", tuple(computes)),
                          tuple(statistics.median(r[1]) for r in per_round), load))
    return rungs
