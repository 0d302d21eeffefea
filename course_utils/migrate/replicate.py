"""What the migration buys, measured again in a fresh Python process (notebook 07).

A ladder's quartile band is the spread of its interleaved rounds inside one process. A process also carries
state that stays fixed for its lifetime (the allocator's heap, where its threads and its loader worker run,
what the compiler generated), so one process's band can miss the spread between processes. This module runs the
compiled rung's pair again (the eager twin beside the compiled model, same set-up, same rounds) in a new
interpreter, with the course CNN and the same dataset, and returns that run's speed-up and band.

The fresh process runs ``main()`` with the set-up as JSON in ``sys.argv[1]``; it prints one line
``@@replicate {json}``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

from course_utils import display, models, pipeline, validate
from course_utils.migrate import rungs, torch_rungs
from course_utils.migrate.ladder import MIGRATION, NO_MIGRATION, Ladder, MigrationGain, per_sample_band

_MARK = "@@replicate "
_MAIN = "from course_utils.migrate.replicate import main; main()"


@dataclass(frozen=True)
class Replicate:
    """The compiled rung's per-sample speed-up over its eager twin in a fresh process: median and band."""

    median: float
    low: float
    high: float
    rounds: int
    seconds: float  # the fresh process's wall time, start-up and compile included

    def __post_init__(self) -> None:
        for name in ("median", "low", "high", "seconds"):
            validate.positive(name, getattr(self, name))
        if not self.low <= self.median <= self.high:
            raise ValueError(f"low <= median <= high must hold; got {self.low}, {self.median}, {self.high}")
        validate.positive("rounds", self.rounds, integer=True)

    def within(self, low: float, high: float) -> bool:
        """True when this median lies inside [low, high] (another run's band)."""
        return low <= self.median <= high

    def __str__(self) -> str:
        return f"{self.median:.2f}x (quartile band {self.low:.2f}x to {self.high:.2f}x, {self.rounds} rounds)"


def replicate_text(one: MigrationGain, again: Replicate, both: MigrationGain) -> str:
    """What the fresh process showed: ``one`` (this process's gain), ``again``, ``both`` (``one`` widened)."""
    validate.instance("one", one, MigrationGain)
    validate.instance("again", again, Replicate)
    validate.instance("both", both, MigrationGain)
    text = f"The fresh process took {display.format_time(again.seconds)} (start-up and compile included). "
    if again.within(one.low, one.high):
        if (both.low, both.high) == (one.low, one.high):
            return text + "Its run fell inside this process's band, and so did its own band: the band stands."
        return (text + "Its run fell inside this process's band, but its own band reaches further, so the band "
                f"widens from {one.low:.2f}x-{one.high:.2f}x to {both.low:.2f}x-{both.high:.2f}x.")
    return (text + f"Its {again.median:.2f}x lies outside this process's band ({one.low:.2f}x to {one.high:.2f}x): "
            "here the spread between two processes was larger than the spread inside one, so one process's band "
            f"overstates how sure a single run can be. The band the decision uses covers both runs: {both.low:.2f}x "
            f"to {both.high:.2f}x. For a real decision, repeat the measurement in several processes (and on several "
            "days).")


def _dtype_name(dtype: Any) -> str | None:
    return None if dtype is None else str(dtype).split(".")[-1]


def replicate_gain(ladder: Ladder, dataset: pipeline.SyntheticImages, *, rounds: int, threads: int,
                   device: str = "cpu", timeout: float = 600.0) -> Replicate:
    """Measure the last migration rung of ``ladder`` again, beside its eager twin, in a fresh process.

    The fresh process builds ``models.torch_cnn`` (one output per class of ``dataset``) on ``device`` with
    ``threads`` intra-op threads and the loader of the rung's set-up (batch, workers, pinned memory, autocast)
    over ``dataset``, and measures both for ``rounds`` interleaved rounds, as ``torch_ladder`` does. Raises
    RuntimeError with the process's last output if it fails or runs past ``timeout`` seconds.
    """
    validate.instance("ladder", ladder, Ladder)
    validate.instance("dataset", dataset, pipeline.SyntheticImages)
    validate.number("rounds", rounds, low=1, high=100, integer=True)
    validate.number("threads", threads, low=1, high=1024, integer=True)
    validate.choice("device", device, ("cpu", "cuda"))
    validate.number("timeout", timeout, low=1, high=24 * 3600)
    setup = ladder[ladder.migration_gain().label].setup
    if not setup:
        raise ValueError("ladder: its migration rung records no set-up (batch, workers, pin, amp); "
                         "measure it with torch_ladder")
    spec = {"dataset": {"n": dataset.n, "size": dataset.size, "classes": dataset.classes, "work": dataset.work,
                        "seed": dataset.seed},
            "setup": {**setup, "amp": _dtype_name(setup.get("amp"))},
            "rounds": rounds, "threads": threads, "device": device}
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-c", _MAIN, json.dumps(spec)],
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"the fresh process ran past timeout={timeout:g} s") from None
    lines = [line for line in done.stdout.splitlines() if line.startswith(_MARK)]
    if done.returncode != 0 or not lines:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-12:])
        raise RuntimeError(f"the fresh process failed (exit code {done.returncode}):\n{tail}")
    result = json.loads(lines[-1].removeprefix(_MARK))
    return Replicate(result["median"], result["low"], result["high"], rounds, time.perf_counter() - start)


def _measure(spec: dict[str, Any]) -> dict[str, float]:
    """In the fresh process: the twin and the compiled model over the rung's loader, interleaved."""
    import torch

    torch.set_num_threads(spec["threads"])
    setup, device = spec["setup"], torch.device(spec["device"])
    amp = None if setup["amp"] is None else getattr(torch, setup["amp"])
    dataset = pipeline.SyntheticImages(**spec["dataset"])

    def model() -> Any:
        return models.torch_cnn(classes=dataset.classes).to(device)

    def loader() -> Any:
        return torch_rungs.make_loader(dataset, setup["batch"], setup["workers"], setup["pin"])

    twin, compiled = rungs.measure_rungs([
        ("eager twin", loader(), torch_rungs.train_step(model(), amp), NO_MIGRATION),
        ("compiled", loader(), torch_rungs.train_step(torch_rungs.compile_model(model()), amp), MIGRATION),
    ], rounds=spec["rounds"])
    median, low, high = per_sample_band(twin, compiled)
    return {"median": median, "low": low, "high": high}


def main() -> None:
    """The fresh process's entry point: measure the set-up given as JSON in ``sys.argv[1]``, print the result."""
    print(_MARK + json.dumps(_measure(json.loads(sys.argv[1]))), flush=True)
