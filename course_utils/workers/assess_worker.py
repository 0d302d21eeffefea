"""One fresh process of ``assess`` (``assess_worker.py SPEC.json RESULT.json``): every variant from one seed, three
untimed steps, then rotated rounds; in the first process also parity, the roof and a forced compile failure. Prints
``@@progress DONE TOTAL``; ``only``: that one variant (``assessing.layout``); under torchrun rank 0 writes."""

from __future__ import annotations

import contextlib
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
from course_utils.fresh import function
from course_utils.migrate import ddp, parity, readings
from course_utils.migrate.assessing import COMPILED_FP32, FP32, variants
from course_utils.migrate.examples import blocks, call, default_loss, optimizer_for, to_device

PROGRESS = "@@progress"
FALLBACK_STEPS = 10


class Batches:
    """The user's batches in order, read again from the start when they run out (an epoch); each epoch's iterator
    is made, and its first batch drawn, under the same seed, so a shuffling loader gives every variant one order."""

    def __init__(self, make_batches: Callable[[], Any], seed: int) -> None:
        self.source, self.seed, self.seen, self.epochs = make_batches(), seed, 0, 0
        self.it: Iterator[Any] | None = None

    def _epoch(self) -> Any:
        import torch

        with torch.random.fork_rng(devices=[]):  # the loader's sampler draws its seed from the global RNG
            torch.manual_seed(self.seed + self.epochs)
            self.epochs += 1
            self.it = iter(self.source)
            return next(self.it)

    def next(self) -> Any:
        try:
            batch = self._epoch() if self.it is None else next(self.it)
        except StopIteration:
            try:
                batch = self._epoch()
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
            key = parity.break_text(text)
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


def compiler(spec: dict[str, Any], name: str) -> Callable[[Any], Any]:
    """The compile call of variant ``name``: the user's function ('module:fn') or ``torch.compile(mode=name)``
    (``fullgraph`` as asked), applied to the whole model or, ``regional``, to each block of its largest ModuleList."""
    import torch

    def whole(m: Any) -> Any:
        if ":" in name:
            return function("compiler", name)(m)
        return torch.compile(m, mode=name, fullgraph=spec["fullgraph"])

    def regional(m: Any) -> Any:
        _, found = blocks(m)
        for i, block in enumerate(found):
            found[i] = whole(block)
        return m

    return regional if spec["regional"] else whole


class Run:
    """One variant: a fresh model from the seed, wrapped (or not) by ``wrap``, with its optimizer and step."""

    def __init__(self, spec: dict[str, Any], wrap: Callable[[Any], Any], fp32: bool = False,
                 no_sync: bool = False) -> None:
        import torch

        self.spec, self.device = spec, torch.device(spec["device"])
        torch.manual_seed(spec["seed"])
        self.model = function("model", spec["model"])(**spec.get("model_args", {})).to(self.device)
        self.loss_fn = function("loss", spec["loss"]) if spec["loss"] else default_loss
        self.wrapped = wrap(self.model)
        self.optimizer = optimizer_for(self.model.parameters(), spec["optimizer"], spec["learning_rate"])
        self.amp = None if fp32 or spec["amp"] is None else getattr(torch, spec["amp"])
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=self.amp is torch.float16)
        self.losses: list[Any] = []
        self.no_sync = no_sync  # DDP's backward without its all-reduce (what the all-reduce costs)

    def step(self, batch: Any, keep: bool = True, seed: int | None = None) -> Any:
        """One training step; ``seed`` seeds the RNG first (the random state matched between variants)."""
        import torch

        if seed is not None:
            torch.manual_seed(seed)
        inputs, targets = (to_device(v, self.device) for v in batch)
        self.optimizer.zero_grad(set_to_none=True)
        with self.wrapped.no_sync() if self.no_sync else contextlib.nullcontext():
            with torch.autocast(self.device.type, dtype=self.amp or torch.float32, enabled=self.amp is not None):
                loss = self.loss_fn(call(self.wrapped, inputs), targets)
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


def measure(spec: dict[str, Any], ranks: ddp.Ranks) -> dict[str, Any]:
    import torch
    from torch._dynamo.utils import counters

    if spec["threads"]:
        torch.set_num_threads(spec["threads"])
    start = {"load": list(os.getloadavg()), "times": readings.cpu_times()}
    device, ended = torch.device(spec["device"]), spec["inputs"] == "end-to-end"
    log = CompileLog.install()
    eager = ("eager", FP32, ddp.NO_SYNC)  # eager fp32: what AMP alone buys; eager without the all-reduce

    def wrap(name: str) -> Callable[[Any], Any]:
        """The variant's model: in DDP where the job has several ranks; torch.compile(DDP(model)) compiled, or a
        regional compile's blocks inside DDP; the deciding call again without autocast (compiled fp32)."""
        if name in eager:
            return lambda m: ddp.wrap(m, ranks)
        c = compiler(spec, spec["modes"][0] if name == COMPILED_FP32 else name)
        return (lambda m: ddp.wrap(c(m), ranks)) if spec["regional"] else (lambda m: c(ddp.wrap(m, ranks)))

    names = [n for n in variants(spec) if spec.get("only") in (None, n)]
    runs = {name: Run(spec, wrap(name), fp32=name in (FP32, COMPILED_FP32), no_sync=name == ddp.NO_SYNC)
            for name in names}
    for name in (n for n in runs if spec.get("compile_optimizer") and n not in eager):
        runs[name].optimizer.step = torch.compile(runs[name].optimizer.step)  # a GradScaler calls it as well

    def source() -> Batches:
        return Batches(lambda: function("batches", spec["batches"])(**spec.get("batches_args", {})), spec["seed"])

    sources = {name: source() for name in runs} if ended else dict.fromkeys(runs, source())
    rounds, per_round = spec["rounds"], spec["per_round"]
    total, done = len(runs) * (3 + sum(per_round)), 0

    def tick(n: int) -> None:
        nonlocal done
        done += n
        if ranks.local == 0:
            print(f"{PROGRESS} {done} {total}", flush=True)

    lead = names[0]  # eager, where this process runs every variant
    warm = [sources[lead].next() for _ in range(3)]  # the untimed steps; the first is the compile
    kept, first = list(warm), {}  # kept: the eager variant's first batches (parity, memory, the fallback)
    subgraphs = {}  # graphs compiled in each variant's first step (under DDP: Dynamo's split at the buckets)
    for name, run in runs.items():
        log.switch(name)
        before = counters["aot_autograd"]["total"]
        drawn = warm if not ended or name == lead else [sources[name].next() for _ in range(3)]
        sync(device)
        begin = time.perf_counter()
        run.step(drawn[0])
        sync(device)
        first[name] = time.perf_counter() - begin
        subgraphs[name] = int(counters["aot_autograd"]["total"] - before)
        run.step(drawn[1])
        run.step(drawn[2])
        tick(3)
    start["calibration"] = readings.calibrate()  # around the timed rounds, the process warm at both ends
    times, waits = {name: [] for name in runs}, {name: [] for name in runs}
    for r in range(rounds):
        shared = [] if ended else [sources[lead].next() for _ in range(per_round[r])]
        for name in names[r % len(names):] + names[:r % len(names)]:
            log.switch(name)
            run, waited = runs[name], 0.0
            sync(device)
            begin = time.perf_counter()
            for i in range(per_round[r]):
                if ended:
                    asked = time.perf_counter()
                    batch = sources[name].next()
                    waited += time.perf_counter() - asked
                else:
                    batch = shared[i]
                if name == lead and len(kept) < FALLBACK_STEPS:
                    kept.append(batch)
                run.step(batch)
            sync(device)
            times[name].append((time.perf_counter() - begin) / per_round[r])
            waits[name].append(waited / per_round[r] if ended else None)
            tick(per_round[r])
    log.switch("none")
    start["after"] = readings.calibrate()
    peaks = {name: memory.torch_peak_bytes(lambda run=run: run.step(kept[-1], keep=False), device)
             for name, run in runs.items()}
    shares = {name: readings.compiled_share(runs[name], kept[:3]) if spec["index"] == 0 else None
              for name in spec["modes"]}
    result: dict[str, Any] = {
        "index": spec["index"], "device": str(device), "threads": torch.get_num_threads(), "inputs": spec["inputs"],
        "cache": {"fx_hits": int(counters["inductor"].get("fxgraph_cache_hit", 0)),
                  "fx_misses": int(counters["inductor"].get("fxgraph_cache_miss", 0)),
                  "aot_hits": int(counters["aot_autograd"].get("autograd_cache_hit", 0))},
        "variants": {name: {"first_s": first[name], "round_step_s": times[name], "round_wait_s": waits[name],
                            "losses": [float(v) for v in run.losses], "peak_bytes": peaks[name],
                            "graph_breaks": sorted(log.breaks.get(name, {})), "graphs": log.graphs.get(name, 0),
                            "recompiles": log.recompiles.get(name, []), "subgraphs": subgraphs[name],
                            "compiled_share": shares.get(name)}
                     for name, run in runs.items()},
        "ddp": None if ranks.world == 1 else {"ranks": ranks.world, "backend": ranks.backend,
                                              "buckets": ddp.buckets(runs[lead].wrapped),
                                              "nodes": spec.get("nnodes", 1), "endpoint": spec.get("endpoint")},
    }
    result["roof"] = readings.matmul_roof(spec) if spec["index"] == 0 and device.type == "cpu" else None
    result["random"] = random_modules(runs[lead].model)
    result["matched"] = matched(spec, kept) if spec["index"] == 0 and result["random"] else None
    if spec["index"] == 0:
        result["fallback"] = fallback(spec, kept, runs)
    result["load"] = readings.machine(start)
    return result


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
            run = Run(spec, (lambda m: m) if name == "eager" else compiler(spec, name))
            losses[name] = [float(run.step(batch, keep=False, seed=spec["seed"] + i)) for i, batch in enumerate(kept)]
    return losses


def fallback(spec: dict[str, Any], kept: list[Any], runs: dict[str, Run]) -> dict[str, Any]:
    """Force a compile failure on a fresh model, roll back to eager with one line, train the first steps again."""
    import torch

    run = Run(spec, lambda m: torch.compile(m, backend=parity._failing_backend))
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
    ranks = ddp.join(spec["device"])
    result = measure({**spec, "device": ranks.device}, ranks)
    ddp.leave(ranks)
    if ranks.local == 0 and spec.get("node_rank", 0) == 0:  # c10d numbers the nodes its own way: node 0 reports
        out = Path(sys.argv[2])
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(result, allow_nan=True))
        os.replace(tmp, out)
        print(f"{PROGRESS} done", flush=True)


if __name__ == "__main__":
    main()
