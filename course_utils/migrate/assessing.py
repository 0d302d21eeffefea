"""``assess``: the migration decision measured on the user's own model, device and bill. Everything is checked first;
then fresh processes run the worker one after the other; the report lands only whole."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal

from course_utils import children, declare, display, env, fresh, intervals, validate
from course_utils.declare import NonEmpty, Range, Text
from course_utils.migrate import assessment, ddp, examples, parity, record, report
from course_utils.migrate.inputs import Inputs, read_config
from course_utils.migrate.torch_rungs import autocast_dtype

MODES = ("default", "reduce-overhead", "max-autotune")
AMPS = ("auto", "off", "bf16", "fp16")
DEVICES = ("auto", "cpu", "cuda")
INPUTS = ("end-to-end", "cached")  # each step draws from make_batches() as training does; or batches fetched once
WORKER = Path(__file__).resolve().parents[1] / "workers" / "assess_worker.py"
FP32, COMPILED_FP32 = "eager fp32", "compiled fp32"  # the worker's variants without autocast (assess_worker)
MAX_ROUNDS = 5
Processes = Annotated[int, Range(2, 64)]  # two for an interval, 64 at most (each runs every mode)
Steps = Annotated[int, Range(2, 100_000)]  # timed steps per process
Args = Mapping[Annotated[str, declare.Matches(r"[A-Za-z_]\w*", "a Python argument name")], int | float | str]
Threads = Annotated[int, Range(1, 1024)]
Ranks = Annotated[int, Range(1, 64)]  # ranks per fresh process (torchrun's --nproc-per-node)
Nodes = Annotated[int, Range(1, 1024)]  # torchrun's --nnodes: every node runs the same assess command
Endpoint = Annotated[str, declare.Matches(r"[^\s:]+:\d{1,5}", "HOST:PORT")]
SEPARATE_SHARE = 0.6
"""Above this share of the device's memory (the host's on a CPU), the processes after the first run each variant
alone; 40% is left for what ``layout``'s estimate leaves out (allocator cache, compiler workspace, fallback model)."""
Modes = Annotated[Sequence[Literal[MODES]], NonEmpty] | Text


def _modes(modes: Any, compiler: str | None = None) -> list[str]:
    """The compile modes once each, from names or a comma-separated string; None: 'default' (none beside a compiler)."""
    if modes is None:
        return [] if compiler else ["default"]
    if isinstance(modes, str):
        modes = [m.strip() for m in modes.split(",") if m.strip()]
    return list(dict.fromkeys(validate.choice("modes", m, MODES) for m in validate.non_empty("modes", list(modes))))


def calls(names: Sequence[str], *, fullgraph: bool, blocks: str, optimizer: bool = False) -> dict[str, str]:
    """Each variant's compile call, as the report names it (``blocks``: regional; ``optimizer``: step too)."""
    target = "block" if blocks else "model"
    out = {n: f"{n}({target})" if ":" in n else
           f"torch.compile({target}, mode={n!r}{', fullgraph=True' if fullgraph else ''})" for n in names}
    out = {n: f"{c} on each block of {blocks}" if blocks else c for n, c in out.items()}
    return {n: f"{c} + torch.compile(optimizer.step)" if optimizer else c for n, c in out.items()}


def _device(device: str) -> str:
    """'auto' as 'cuda' where torch sees a GPU, else 'cpu'; 'cuda' refused where torch sees none."""
    import torch

    validate.choice("device", device, DEVICES)
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device is 'cuda' but this machine has no CUDA GPU that torch can use; use cpu or auto")
    return device


def _amp(amp: str, device: str) -> str | None:
    """The autocast dtype's name for ``amp`` ('auto': the device's own, ``autocast_dtype``); None where AMP is off."""
    validate.choice("amp", amp, AMPS)
    if amp == "auto":
        dtype = autocast_dtype(device)
        return None if dtype is None else str(dtype).removeprefix("torch.")
    return {"off": None, "bf16": "bfloat16", "fp16": "float16"}[amp]


def variants(spec: Mapping[str, Any]) -> list[str]:
    """The worker's variants, in order: eager; eager fp32 where AMP runs; each compile call; the deciding call
    without AMP; eager DDP without its all-reduce where the job has several ranks."""
    amp, world = spec["amp"] is not None, spec["nproc"] * spec.get("nnodes", 1)
    return ["eager", *[FP32] * amp, *spec["modes"], *[COMPILED_FP32] * amp, *[ddp.NO_SYNC] * (world > 1)]


def layout(first: Mapping[str, Any], *, parameters: int, memory_bytes: int | None, separate: bool, nodes: int = 1,
           ranks: int = 1) -> dict[str, Any]:
    """Whether the processes after the first run each variant alone (``separate``: forced), and why: every variant's
    need (the eager step's peak plus 16 bytes a parameter, times ``ranks``) over ``memory_bytes``, against
    ``SEPARATE_SHARE``."""
    count = len(first["variants"]) if first else None
    needed = count and ranks * count * ((first["variants"]["eager"]["peak_bytes"] or 0) + 16 * parameters)
    share = None if needed is None or not memory_bytes else needed / memory_bytes
    if separate:
        why = "--separate asked for it"
    elif nodes > 1:
        why = "with several nodes only --separate splits them (the other nodes never see the first process's peak)"
    else:
        separate = share is not None and share > SEPARATE_SHARE
        why = (f"every variant together needs about {display.format_bytes(needed)}, {share:.1%} of the "
               f"{display.format_bytes(memory_bytes)} of memory, {'above' if separate else 'within'} "
               f"{SEPARATE_SHARE:.0%} (computed: the eager step's peak plus 16 bytes a parameter, per variant)"
               if share is not None else "the eager step's peak or the memory is unknown")
    return {"separate": separate, "why": why, "need_bytes": needed, "memory_bytes": memory_bytes,
            "threshold": SEPARATE_SHARE, "variants": count}


def split_steps(steps: int) -> list[int]:
    """``steps`` timed steps split into at most 5 rounds of nearly equal length."""
    rounds = min(MAX_ROUNDS, steps)
    return [steps // rounds + (1 if i < steps % rounds else 0) for i in range(rounds)]


@declare.checked
def command_line(model: Text, batches: Text, *, model_args: Args | None = None, batches_args: Args | None = None,
                 loss: Text | None = None, config: Text | None = None, processes: Processes = 5, steps: Steps = 50,
                 device: Literal[DEVICES] = "auto", modes: Modes | None = None, amp: Literal[AMPS] = "auto",
                 threads: Threads | None = None, out: str | Path = "build/assess/mymodel", compiler: Text | None = None,
                 fullgraph: bool = False, regional: bool = False, inputs: Literal[INPUTS] = "end-to-end",
                 nproc_per_node: Ranks = 1, compile_optimizer: bool = False, nnodes: Nodes = 1,
                 node_rank: int = 0, rdzv_endpoint: Endpoint | None = None, separate: bool = False) -> str:
    """The ``assess`` command line a lead runs on their own model, its arguments checked as ``assess`` checks them."""
    parts = ["python", "-m", "course_utils.migrate", "assess", "--model", model, "--batches", batches]
    parts += [a for k, v in (model_args or {}).items() for a in ("--model-arg", f"{k}={v}")]
    parts += [a for k, v in (batches_args or {}).items() for a in ("--batches-arg", f"{k}={v}")]
    parts += ["--loss", loss] if loss else []
    parts += ["--config", config] if config else []
    parts += ["--processes", str(processes), "--steps", str(steps), "--device", device]
    parts += ["--compile", compiler] if compiler else []
    parts += ["--modes", ",".join(_modes(modes))] if modes or not compiler else []
    parts += ["--fullgraph"] * fullgraph + ["--regional"] * regional + ["--inputs", inputs] * (inputs != INPUTS[0])
    parts += ["--nproc-per-node", str(nproc_per_node)] if nproc_per_node > 1 else []
    parts += ["--compile-optimizer"] * compile_optimizer + ["--separate"] * separate
    parts += ["--nnodes", str(nnodes), "--node-rank", str(node_rank), "--rdzv-endpoint", rdzv_endpoint] \
        if nnodes > 1 else []
    parts += ["--amp", amp, *(["--threads", str(threads)] if threads else []), "--out", str(out)]
    return " ".join(shlex.quote(p) for p in parts)


@declare.checked
def assess(model: Any, batches: Any, *, out: str | Path, model_args: Args | None = None,
           batches_args: Args | None = None, loss: Any = None, config: str | Path | Inputs | None = None,
           processes: Processes = 5, steps: Steps = 50, device: Literal[DEVICES] = "auto", modes: Modes | None = None,
           amp: Literal[AMPS] = "auto", threads: Threads | None = None,
           seed: Annotated[int, Range(0, 2**31 - 1)] = 0, timeout: Annotated[float, Range(1, 24 * 3600)] | None = None,
           progress: bool = True, baseline: str | Path | None = None, compiler: Any = None, fullgraph: bool = False,
           regional: bool = False, inputs: Literal[INPUTS] = "end-to-end",
           nproc_per_node: Ranks = 1, compile_optimizer: bool = False, separate: bool = False, nnodes: Nodes = 1,
           node_rank: int = 0, rdzv_endpoint: Endpoint | None = None) -> assessment.Assessment | None:
    """Measure eager against ``torch.compile`` on ``model`` over ``batches`` in ``processes`` fresh processes, price
    the gain at ``config`` (TOML path, ``Inputs`` or None: the seed's) and write ``out``/report.json, .md, .html. The
    arguments are the command line's (``--help``); functions may stand for the paths; ``timeout`` also bounds the
    probe. Node 0 returns the assessment, others None."""
    start, started = time.perf_counter(), record.now()
    target = examples.check_out("out", out)  # first: a folder that cannot be written is refused before anything
    ddp.check_nodes(nnodes, node_rank, rdzv_endpoint)
    base = None if baseline is None else record.baseline(baseline)
    import torch

    model_path = fresh.target_path(model, "model")
    batches_path = fresh.target_path(batches, "batches")
    loss_path = None if loss is None else fresh.target_path(loss, "loss")
    compile_path = None if compiler is None else fresh.target_path(compiler, "compiler")
    if fullgraph and not _modes(modes, compile_path):
        raise ValueError("fullgraph: it sets torch.compile's fullgraph=True for --modes; your compile function sets "
                         "its own (name a mode too, or leave out --fullgraph)")
    model_args, batches_args = dict(model_args or {}), dict(batches_args or {})
    costs = config if isinstance(config, Inputs) else read_config(config)
    if timeout is None:  # a cold compile and the imports, 300 s, and 2 s a step for 4 variants: 10x the course's
        timeout = 300.0 + 8.0 * steps
    dev = _device(device)
    mode_list = [*([compile_path] if compile_path else []), *_modes(modes, compile_path)]
    amp_name = _amp(amp, dev)
    skipped = {m: "CUDA graphs need a CUDA device; skipped here" for m in mode_list
               if m == "reduce-overhead" and dev != "cuda"}
    measured_modes = [m for m in mode_list if m not in skipped]
    if not measured_modes:
        raise ValueError(f"modes: none of {mode_list} can run on {dev} ({'; '.join(skipped.values())})")
    probe = examples.probe(model_path, batches_path, loss_path, torch.device(dev), timeout=timeout,
                            model_args=model_args, batches_args=batches_args, regional=regional)
    device_name = torch.cuda.get_device_name(0) if dev == "cuda" else env.cpu_model()
    per_round = split_steps(steps)
    command = command_line(model_path, batches_path, model_args=model_args, batches_args=batches_args, loss=loss_path,
                           config=costs.path, processes=processes, steps=steps, device=device, modes=modes,
                           amp=amp, threads=threads, out=target, compiler=compile_path, fullgraph=fullgraph,
                           regional=regional, inputs=inputs, nproc_per_node=nproc_per_node,
                           compile_optimizer=compile_optimizer, nnodes=nnodes, node_rank=node_rank,
                           rdzv_endpoint=rdzv_endpoint, separate=separate)
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-assess-", dir=target.parent))
    try:
        results, plan = _run_processes(work, target.with_name(f"{target.name}.failed-logs"), processes, {
            "model": model_path, "batches": batches_path, "model_args": model_args, "batches_args": batches_args,
            "loss": loss_path, "device": dev, "amp": amp_name,
            "modes": measured_modes, "rounds": len(per_round), "per_round": per_round, "seed": seed,
            "threads": threads, "optimizer": costs.value("optimizer"), "learning_rate": costs.value("learning_rate"),
            "sys_path": [p for p in sys.path if p], "inputs": inputs, "fullgraph": fullgraph, "regional": regional,
            "nproc": nproc_per_node, "compile_optimizer": compile_optimizer, "nnodes": nnodes,
            "node_rank": node_rank, "endpoint": rdzv_endpoint,
        }, timeout, progress, lambda first: layout(
            first, parameters=probe.parameters, separate=separate, nodes=nnodes,
            ranks=nproc_per_node if dev == "cpu" else 1, memory_bytes=torch.cuda.get_device_properties(0).total_memory
            if dev == "cuda" else record.host()["memory_bytes"]))
        if node_rank > 0:
            return None  # node 0 reports
        found = _assemble(results, mode_list=measured_modes, skipped=skipped, amp=amp_name, inputs=costs,
                          calls=calls(measured_modes, fullgraph=fullgraph, blocks=probe.blocks,
                                      optimizer=compile_optimizer),
                          probe=probe, device=dev, device_name=device_name,
                          processes=processes, steps=steps, rounds=len(per_round), names=(model_path, batches_path,
                                                                                          loss_path),
                          seconds=time.perf_counter() - start, command=command, started=started)
        found = replace(found, layout=plan)
        if base is not None:
            found = replace(found, gate=record.Gate(base, found.deciding.speedup, found.deciding.mode))
        report.write(found, work / "report")
        with children.sigint_held():  # a Ctrl-C now waits until the report is in place
            _replace(work / "report", target)
        return found
    finally:
        with children.sigint_held():  # nor can a second Ctrl-C leave the working folder behind
            shutil.rmtree(work, ignore_errors=True)


def _keep_log(log: Path, kept: Path, exc: Exception) -> Exception:
    """Copy the failed process's ``log`` into ``kept`` and return ``exc`` again, its message naming the copy."""
    kept.mkdir(parents=True, exist_ok=True)
    copy = kept / log.name
    shutil.copyfile(log, copy)
    text = str(exc).replace(str(log), str(copy))
    if str(copy) not in text:
        text += f"\nits whole log is kept in {copy}"
    return type(exc)(text)


def _run_processes(work: Path, kept: Path, processes: int, spec: dict[str, Any], timeout: float,
                   progress: bool, plan: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run the worker ``processes`` times, one after the other, the first on an empty compile cache with every variant;
    ``plan(its result)`` (``layout``) says whether each later one runs each variant alone (merged by process index). A
    failed process's log is kept in ``kept``. Returns the results and the layout."""
    names = variants(spec)
    per = 3 + sum(spec["per_round"])
    units = len(names) * per
    bar = None
    if progress:
        from tqdm.auto import tqdm

        # tqdm redraws at most twice a second: a widget flooded with updates can lose a notebook's messages
        bar = tqdm(total=processes * units, desc="assess: fresh processes", unit="step", leave=False, mininterval=0.5)
    cache = work / "compile-cache"  # empty for the first process: cold; then warm
    child_env = {**os.environ, "PYTHONUNBUFFERED": "1", "TORCHINDUCTOR_CACHE_DIR": str(cache),
                 "TRITON_CACHE_DIR": str(cache / "triton"), "TORCHINDUCTOR_FX_GRAPH_CACHE": "1",
                 "TORCHINDUCTOR_AUTOGRAD_CACHE": "1"}
    child_env.pop("TORCH_LOGS", None)

    def one(index: int, tag: str, extra: dict[str, Any], done: int, size: int) -> dict[str, Any]:
        spec_path, result_path = work / f"spec-{tag}.json", work / f"result-{tag}.json"
        spec_path.write_text(json.dumps({**spec, **extra, "index": index}))

        def on_line(line: str) -> None:
            parts = line.split(":", 1)[-1].split() if line.startswith("[") else line.split()  # torchrun's prefix
            if bar is not None and len(parts) == 3 and parts[0] == "@@progress":
                bar.update(max(0, done + min(int(parts[1]), size) - bar.n))

        log, args, job_env = work / f"log-{tag}.txt", [str(spec_path), str(result_path)], {}
        command = [sys.executable, str(WORKER), *args]
        if spec["nproc"] * spec["nnodes"] > 1:  # one torchrun job of nproc ranks (on each node)
            command, job_env = ddp.command(WORKER, args, spec["nproc"], work / f"torchrun-{tag}", nnodes=spec["nnodes"],
                                           node_rank=spec["node_rank"], endpoint=spec["endpoint"], run_id=tag)
        try:
            children.run_child(command, log=log, timeout=timeout, env={**child_env, **job_env}, on_line=on_line)
        except (children.ChildFailed, TimeoutError) as exc:
            raise _keep_log(log, kept, exc) from None
        return json.loads(result_path.read_text()) if spec["node_rank"] == 0 else {}  # node 0's rank writes it

    results, chosen = [], {}
    try:
        for index in range(processes):
            if bar is not None:
                bar.set_postfix_str(f"process {index + 1} of {processes}", refresh=False)
            chosen = chosen or (plan(results[0]) if index else {})
            if not chosen.get("separate"):
                results.append(one(index, f"{index}", {}, index * units, units))
                continue
            parts = [one(index, f"{index}-{k}", {"only": name}, index * units + k * per, per)
                     for k, name in enumerate(names)]
            results.append(_merge(parts) if spec["node_rank"] == 0 else {})
    finally:
        if bar is not None:
            bar.close()
    return results, chosen


def _merge(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One process's result from its variants' own: variants joined, eager's rest, caches summed, the worst guard."""
    load = max((p["load"] for p in parts), key=assessment.drift)
    return {**parts[0], "variants": {k: v for p in parts for k, v in p["variants"].items()}, "separate": True,
            "cache": {k: sum(p["cache"][k] for p in parts) for k in parts[0]["cache"]},
            "load": {**load, "start": max(p["load"]["start"] for p in parts),
                     "end": max(p["load"]["end"] for p in parts)}}


def _assemble(results: list[dict[str, Any]], *, mode_list: list[str], skipped: dict[str, str], amp: str | None,
              inputs: Inputs, probe: examples.Probe, device: str, calls: Mapping[str, str],
              device_name: str, processes: int, steps: int, rounds: int, names: tuple[str, str, str | None],
              seconds: float, command: str, started: str) -> assessment.Assessment:
    import torch

    modes, host = assessment.mode_results(results, mode_list, amp, calls), record.host()
    if device == "cuda" and torch.cuda.is_available():
        host["device_memory_bytes"] = torch.cuda.get_device_properties(0).total_memory
    peak, peak_source = assessment.device_peak(device, device_name, amp, results[0]["roof"])
    fallback = parity.fallback_result(results, mode_list[0], amp)
    eager_step = statistics.median(statistics.median(r["variants"]["eager"]["round_step_s"]) for r in results)
    deciding = modes[0]
    pricing = assessment.price(inputs, deciding.speedup, eager_step_s=eager_step,
                               compile_cold_s=deciding.compile_cold_s, compile_warm_s=deciding.compile_warm_s,
                               label=f"{deciding.call} over eager, {names[0]}",
                               nothing=deciding.nothing,
                               busy=assessment.busy([r["load"] for r in results], host["logical_cores"]))
    versions = {"python": sys.version.split()[0], "torch": torch.__version__}

    def across(baseline: str, candidate: str, label: str) -> intervals.Speedup:
        medians = [[statistics.median(r["variants"][v]["round_step_s"]) for r in results]
                   for v in (baseline, candidate)]
        return replace(intervals.speedup(*medians), baseline=baseline, candidate=label)

    amp_alone = None if amp is None else across(FP32, "eager", f"eager + AMP ({amp}), no migration")
    compile_alone = None if amp is None else across(FP32, COMPILED_FP32, f"{deciding.call} without AMP")
    return assessment.Assessment(
        model=names[0], batches=names[1], loss=names[2], device=device, device_name=device_name,
        versions=versions, threads=int(results[0]["threads"]), processes=processes, steps=steps, rounds=rounds,
        amp=amp, optimizer=f"{inputs.value('optimizer')} (learning rate {inputs.value('learning_rate'):g})",
        eager_step_s=eager_step, eager_peak_bytes=assessment.median_bytes([r["variants"]["eager"]["peak_bytes"]
                                                                      for r in results]),
        modes=modes, skipped=skipped, flops_per_step=probe.flops_per_step, peak_flops=peak, peak_source=peak_source,
        fallback=fallback, pricing=pricing, seconds=seconds, command=command, parameters=probe.parameters,
        batch=probe.batch, cache={"method": assessment.CACHE_METHOD, "per_process": [r["cache"] for r in results]},
        started=started, host=host, loads=tuple(r["load"] for r in results), amp_alone=amp_alone,
        compile_alone=compile_alone,
        batch_inputs=results[0].get("inputs", "cached"), ddp=ddp.summary(results),
        eager_wait_s=assessment.wait([r["variants"]["eager"] for r in results]))


def _replace(new: Path, target: Path) -> None:
    """Move the finished report folder ``new`` to ``target``, replacing a previous report folder there."""
    old = None
    if target.exists():
        old = target.with_name(f".{target.name}-old-{os.getpid()}")
        os.replace(target, old)
    os.replace(new, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
