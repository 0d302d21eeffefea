"""One fresh process of ``python -m course_utils.migrate assess``: the user's model trained eager and compiled.

Usage: python assess_worker.py SPEC.json RESULT.json   (written and read by ``course_utils.migrate.assess``)

What it does, in order (every variant starts from the same seed, so from the same weights):
1. Builds the model from ``make_model()`` once per variant: eager, and ``torch.compile(model, mode=...)`` for each
   requested mode (all under the run's autocast); where the run uses AMP, also eager without it ("eager fp32").
   The parent points every process at one Inductor cache folder (``TORCHINDUCTOR_CACHE_DIR``),
   empty for the first process: its first call is a cold compile, the later processes' a warm one (the generated
   code and compiled kernels found on disk, as on a machine that compiled this model before).
2. Takes three untimed steps per variant (the first, timed apart, is the compile), then ``rounds`` rounds: each
   round fetches its batches once and runs them through every variant in turn (the order rotated each round), so
   all variants see the same batches at the same moments. Losses are kept for the parity check.
3. Counts graph breaks and recompiles from the compiler's own logs (the ``graph_breaks`` and ``recompiles``
   artifacts of ``TORCH_LOGS``), each break's reason whole with its hints, and the graphs Dynamo captured per
   variant (its ``unique_graphs`` counter); reads one steady step's peak memory per variant.
4. In the first process only, where the model holds dropout: trains every variant again over the first steps with
   the random state matched (the RNG seeded before each step from the same seed; Inductor's random operations
   drawn from it, ``torch._inductor.config.fallback_random``), for the parity check.
5. In the first process on a CPU: measures the matmul roof for the dtype that ran (MFU's peak).
6. In the first process only: forces a compile failure (a backend that raises), rolls back with
   ``torch.compiler.set_stance("force_eager")``, and trains the same steps again (each seeded as in 4), for the
   fallback check.
Progress lines ``@@progress DONE TOTAL`` go to stdout; the result is written to RESULT.json at the end.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from course_utils import memory
from course_utils.migrate import compiled
from course_utils.migrate.trainstep import call, default_loss, optimizer_for, to_device

PROGRESS = "@@progress"
FP32 = "eager fp32"  # the variant without autocast, where the run uses AMP
FALLBACK_STEPS = 10
ROOF_N, ROOF_REPEATS = 1024, 8  # the matmul that measures MFU's peak on a CPU


def load(path: str) -> Callable[..., Any]:
    """The function named by 'package.module:name'."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)  # the user's module, named at run time


class Batches:
    """The user's batches in order, read again from the start when they run out (an epoch)."""

    def __init__(self, make_batches: Callable[[], Any]) -> None:
        self.source = make_batches()
        self.it: Iterator[Any] = iter(self.source)
        self.seen = 0

    def next(self) -> Any:
        try:
            batch = next(self.it)
        except StopIteration:
            self.it = iter(self.source)
            try:
                batch = next(self.it)
            except StopIteration:
                raise RuntimeError(f"make_batches() gave {self.seen} batches and then none when read again: return "
                                   "a list or a DataLoader, which can be read more than once") from None
        self.seen += 1
        return batch


class CompileLog(logging.Handler):
    """Graph breaks (each reason whole, hints included) and recompiles, as the compiler logs them, and the graphs
    Dynamo captured (its ``unique_graphs`` counter), each filed under the variant that was running."""

    def __init__(self) -> None:
        super().__init__()
        self.variant = "none"
        self.breaks: dict[str, dict[str, str]] = {}
        self.recompiles: dict[str, list[str]] = {}
        self.graphs: dict[str, int] = {}
        self._counted = 0

    def switch(self, variant: str) -> None:
        """File the graphs captured since the last switch under the variant that ran, then run ``variant``."""
        from torch._dynamo.utils import counters

        now = int(counters["stats"].get("unique_graphs", 0))
        self.graphs[self.variant] = self.graphs.get(self.variant, 0) + now - self._counted
        self._counted, self.variant = now, variant

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.name.endswith("__graph_breaks"):
            key = compiled.break_text(text)
            self.breaks.setdefault(self.variant, {})[key] = key
        elif record.name.endswith("__recompiles"):
            guard = re.search(r"^\s*-\s*(.*)$", text, re.M)
            self.recompiles.setdefault(self.variant, []).append(guard.group(1) if guard else text.splitlines()[0])

    @classmethod
    def install(cls) -> CompileLog:
        import torch

        torch._logging.set_logs(graph_breaks=True, recompiles=True)
        handler = cls()
        for name in ("torch._dynamo.symbolic_convert.__graph_breaks", "torch._dynamo.guards.__recompiles"):
            logging.getLogger(name).addHandler(handler)
        return handler


def _failing_backend(gm: Any, example_inputs: Any) -> Any:
    raise RuntimeError("compile failure forced by the fallback check")


class Run:
    """One variant: a fresh model from the seed, wrapped (or not) by ``wrap``, with its optimizer and step."""

    def __init__(self, spec: dict[str, Any], wrap: Callable[[Any], Any], fp32: bool = False) -> None:
        import torch

        self.spec, self.device = spec, torch.device(spec["device"])
        torch.manual_seed(spec["seed"])
        self.model = load(spec["model"])(**spec.get("model_args", {})).to(self.device)
        self.loss_fn = load(spec["loss"]) if spec["loss"] else default_loss
        self.wrapped = wrap(self.model)
        self.optimizer = optimizer_for(self.model.parameters(), spec["optimizer"], spec["learning_rate"])
        self.amp = None if fp32 or spec["amp"] is None else getattr(torch, spec["amp"])
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=self.amp is torch.float16)
        self.losses: list[Any] = []

    def step(self, batch: Any, keep: bool = True, seed: int | None = None) -> Any:
        """One training step; ``seed`` seeds the RNG first (the random state matched between variants)."""
        import torch

        if seed is not None:
            torch.manual_seed(seed)
        inputs, targets = (to_device(v, self.device) for v in batch)
        with torch.autocast(self.device.type, dtype=self.amp or torch.float32, enabled=self.amp is not None):
            loss = self.loss_fn(call(self.wrapped, inputs), targets)
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        if keep:
            self.losses.append(loss.detach().clone())
        return loss


def sync(device: Any) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    import torch
    from torch._dynamo.utils import counters

    load_start = os.getloadavg()
    if spec["threads"]:
        torch.set_num_threads(spec["threads"])
    device = torch.device(spec["device"])
    log = CompileLog.install()
    wraps: dict[str, Callable[[Any], Any]] = {"eager": lambda m: m}
    if spec["amp"] is not None:
        wraps[FP32] = lambda m: m  # eager without autocast: what AMP alone buys, no migration
    for mode in spec["modes"]:
        wraps[mode] = lambda m, mode=mode: torch.compile(m, mode=mode)
    runs = {name: Run(spec, wrap, fp32=name == FP32) for name, wrap in wraps.items()}
    batches = Batches(lambda: load(spec["batches"])(**spec.get("batches_args", {})))
    rounds, per_round = spec["rounds"], spec["per_round"]
    total, done = len(runs) * (3 + sum(per_round)), 0

    def tick(n: int) -> None:
        nonlocal done
        done += n
        print(f"{PROGRESS} {done} {total}", flush=True)

    kept = [batches.next() for _ in range(3)]  # the untimed steps; the first is the compile
    first: dict[str, float] = {}
    for name, run in runs.items():
        log.switch(name)
        sync(device)
        start = time.perf_counter()
        run.step(kept[0])
        sync(device)
        first[name] = time.perf_counter() - start
        run.step(kept[1])
        run.step(kept[2])
        tick(3)
    names, times = list(runs), {name: [] for name in runs}
    for r in range(rounds):
        round_batches = [batches.next() for _ in range(per_round[r])]
        if len(kept) < FALLBACK_STEPS:
            kept += round_batches[:FALLBACK_STEPS - len(kept)]
        for name in names[r % len(names):] + names[:r % len(names)]:
            log.switch(name)
            run = runs[name]
            sync(device)
            start = time.perf_counter()
            for batch in round_batches:
                run.step(batch)
            sync(device)
            times[name].append((time.perf_counter() - start) / len(round_batches))
            tick(len(round_batches))
    log.switch("none")
    peaks = {name: memory.torch_peak_bytes(lambda run=run: run.step(kept[-1], keep=False), device)
             for name, run in runs.items()}
    result: dict[str, Any] = {
        "index": spec["index"], "device": str(device), "threads": torch.get_num_threads(),
        "cache": {"fx_hits": int(counters["inductor"].get("fxgraph_cache_hit", 0)),
                  "fx_misses": int(counters["inductor"].get("fxgraph_cache_miss", 0)),
                  "aot_hits": int(counters["aot_autograd"].get("autograd_cache_hit", 0))},
        "variants": {name: {"first_s": first[name], "round_step_s": times[name],
                            "losses": [float(v) for v in run.losses], "peak_bytes": peaks[name],
                            "graph_breaks": sorted(log.breaks.get(name, {})), "graphs": log.graphs.get(name, 0),
                            "recompiles": log.recompiles.get(name, [])}
                     for name, run in runs.items()},
    }
    result["roof"] = matmul_roof(spec) if spec["index"] == 0 and device.type == "cpu" else None
    result["load"] = {"start": list(load_start), "end": list(os.getloadavg())}  # 1, 5, 15 min, before and after
    result["random"] = random_modules(runs["eager"].model)
    result["matched"] = matched(spec, kept) if spec["index"] == 0 and result["random"] else None
    if spec["index"] == 0:
        result["fallback"] = fallback(spec, kept, runs)
    return result


def matmul_roof(spec: dict[str, Any]) -> dict[str, Any]:
    """The best matmul FLOP/s of this process for the dtype that ran (autocast's, else fp32): MFU's peak on a CPU,
    measured here rather than read from another run's cache."""
    import torch

    dtype = getattr(torch, spec["amp"]) if spec["amp"] else torch.float32
    a, b = (torch.randn(ROOF_N, ROOF_N).to(dtype) for _ in range(2))
    best = float("inf")
    for i in range(ROOF_REPEATS + 2):  # two untimed first
        start = time.perf_counter()
        torch.matmul(a, b)
        if i >= 2:
            best = min(best, time.perf_counter() - start)
    return {"flops": 2 * ROOF_N**3 / best, "dtype": str(dtype).removeprefix("torch."), "n": ROOF_N,
            "repeats": ROOF_REPEATS, "threads": torch.get_num_threads()}


def random_modules(model: Any) -> list[str]:
    """The model's modules that draw random numbers in training: dropout of every kind, attention with dropout."""
    import torch

    found = []
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.modules.dropout._DropoutNd):
            p = module.p
        elif isinstance(module, torch.nn.MultiheadAttention):
            p = module.dropout
        else:
            continue
        if p > 0:
            found.append(f"{name or 'the model'}: {type(module).__name__}(p={p:g})")
    return found


def matched(spec: dict[str, Any], kept: list[Any]) -> dict[str, list[float]]:
    """Each variant trained again from the seed over the first steps with the random state matched: the RNG seeded
    before each step from the same seed, Inductor's random operations drawn from it (``fallback_random``)."""
    import torch
    import torch._inductor.config as inductor

    torch._dynamo.reset()  # else the timed variants' compiled code, guarded on the model's structure, is reused
    losses = {}
    with inductor.patch(fallback_random=True):
        for name in ["eager", *spec["modes"]]:
            run = Run(spec, (lambda m: m) if name == "eager" else (lambda m, mode=name: torch.compile(m, mode=mode)))
            losses[name] = [float(run.step(batch, keep=False, seed=spec["seed"] + i)) for i, batch in enumerate(kept)]
    return losses


def fallback(spec: dict[str, Any], kept: list[Any], runs: dict[str, Run]) -> dict[str, Any]:
    """Force a compile failure on a fresh model, roll back to eager with one line, train the first steps again."""
    import torch

    run = Run(spec, lambda m: torch.compile(m, backend=_failing_backend))
    try:
        run.step(kept[0], keep=False)
        error = None
    except Exception as exc:  # the failure this check forces
        error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    torch.compiler.set_stance("force_eager")  # the rollback: every torch.compile'd model runs eager
    try:
        losses = [float(run.step(batch, seed=spec["seed"] + i)) for i, batch in enumerate(kept)]
    finally:
        torch.compiler.set_stance("default")
    return {"error": error, "losses": losses, "steps": len(kept)}


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    for entry in reversed(spec["sys_path"]):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    result = measure(spec)
    out = Path(sys.argv[2])
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, allow_nan=True))
    os.replace(tmp, out)
    print(f"{PROGRESS} done", flush=True)


if __name__ == "__main__":
    main()
