"""The machine measured once per run (roofs, a fresh output's page faults, one compiled call's fixed cost), written
to ``build/machine/<key>.json`` by the first notebook that asks and read by the others: one machine, one figure."""

from __future__ import annotations

import datetime
import hashlib
import importlib
import json
import math
import os
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np

from course_utils import declare, display, env, interop, memory, roofline, timing, validate
from course_utils.declare import NonEmpty, NonNegativeFloat, PositiveFloat, Range, Text

FAULT_PROBE_BYTES = 64 * 2**20  # above glibc's largest mmap threshold (32 MiB): every allocation gets new pages
CALL_PROBE_ELEMENTS = 16  # the compiled call probe works on almost nothing: its time is the fixed cost
_FIGURES: dict[str, MachineFigures] = {}


@declare.checked
@dataclass(frozen=True, repr=False)
class MachineFigures(display.Tabled):
    """This machine's figures for this run (``source``: measured by this process, or read): each framework's roofs, a
    fresh output's fault cost (``fault_cost``) and one compiled call's fixed cost (``call_cost``)."""

    key: Text
    roofs: Mapping[str, roofline.Machine]
    fault_seconds_per_byte: NonNegativeFloat
    call_cost: Mapping[str, PositiveFloat]
    measured_at: Text
    source: Literal["measured", "read"]
    faults_per_mib: Any = math.nan  # nan: not counted
    fault_allocator: Literal["numpy", "torch"] = "numpy"
    remeasured_because: str = ""

    def __post_init__(self) -> None:
        if not (isinstance(self.faults_per_mib, float) and math.isnan(self.faults_per_mib)):
            validate.non_negative("faults_per_mib", self.faults_per_mib)

    @property
    def best(self) -> roofline.Machine:
        """One roofline whose roofs are the best probe of any framework (the hardware's, whoever got there)."""
        return best_roof(self.roofs)

    @property
    def bandwidth(self) -> float:
        return self.best.bandwidth

    @property
    def peak_flops(self) -> float:
        return self.best.peak_flops

    @property
    def ridge_intensity(self) -> float:
        return self.best.ridge_intensity

    @property
    def bandwidth_probe(self) -> str:
        """Which framework's probe set the memory roof, e.g. 'jax triad'."""
        return max(self.best.bandwidth_probes.items(), key=lambda kv: kv[1])[0]

    @property
    def flops_probe(self) -> str:
        """Which framework's matmul set the compute roof, e.g. 'jax matmul'."""
        return max(self.best.flops_probes.items(), key=lambda kv: kv[1])[0]

    def fault_seconds(self, nbytes: float) -> float:
        """Seconds of page faults a fresh output of ``nbytes`` costs on this machine (computed from the probe)."""
        return validate.non_negative("nbytes", nbytes) * self.fault_seconds_per_byte

    @property
    def how(self) -> str:
        """One sentence for the notebook: measured now, or read from this run's file (and when it was measured)."""
        when = self.measured_at[11:16]
        if self.source == "measured":
            why = f" (the stored figures were not used: {self.remeasured_because})" if self.remeasured_because else ""
            return f"Measured now ({when}) and kept for the other notebooks of this run in build/machine/{why}."
        return (f"Read from build/machine/ (measured at {when} by the first notebook of this run on this machine, "
                "in this boot, at this size); delete that folder to measure again.")

    def table(self) -> display.Table:
        rows = [(f"memory roof ({self.bandwidth_probe})", display.format_rate(self.bandwidth)),
                (f"compute roof ({self.flops_probe})", display.format_flops(self.peak_flops)),
                ("ridge point", f"{self.ridge_intensity:.1f} FLOP/byte")]
        rows += [(f"{fw}: best bandwidth probe / matmul", f"{display.format_rate(m.bandwidth)} / "
                  f"{display.format_flops(m.peak_flops)}") for fw, m in self.roofs.items()]
        counted = (f" ({self.faults_per_mib:.0f} faults per MiB, {self.fault_allocator} buffer)"
                   if math.isfinite(self.faults_per_mib) else f" ({self.fault_allocator} buffer)")
        rows.append(("page faults of a fresh output",
                     f"{display.format_time(self.fault_seconds(2**20))} per MiB{counted}"))
        rows += [(f"{fw}: one compiled call (x + 1, 16 elements)", display.format_time(cost))
                 for fw, cost in self.call_cost.items()]
        return display.table(["figure", "measured"], rows, title="This machine, measured once for the run",
                             note=self.how)


@declare.checked
def best_roof(machines: Annotated[Mapping[str, roofline.Machine], NonEmpty]) -> roofline.Machine:
    """One machine whose roofs are the best any framework reached: every in-place bandwidth probe and every
    matmul probe, named by framework."""
    first = next(iter(machines.values()))
    return roofline.Machine(
        "best of " + ", ".join(machines), first.device,
        {f"{name} {k}": v for name, m in machines.items() for k, v in m.bandwidth_probes.items()},
        {f"{name} {k}": v for name, m in machines.items() for k, v in m.flops_probes.items()},
        {f"{name} {k}": v for name, m in machines.items() for k, v in m.fresh_output_probes.items()},
        first.array_bytes,
    )


@declare.checked
def figures(*, refresh: bool = False) -> MachineFigures:
    """This machine's figures: read from this run's file when one exists for this machine, boot, size and set of
    frameworks, else measured now (about 10-30 s) and written for the notebooks after this one."""
    key = machine_key()
    if not refresh and key in _FIGURES:
        return _FIGURES[key]
    path = env.build_dir("machine", f"{key}.json")
    if path.exists() and not path.is_file():
        raise ValueError(f"the machine figures' file {path} is not a file: remove it, then run again")
    found, why = (None, "") if refresh else _read(path, key)
    if found is None:
        found = replace(_measure(key), remeasured_because=why)
        store(path, _to_json(found))
    _FIGURES[key] = found
    return found


def machine_key() -> str:
    """A short hash of what makes figures comparable: CPU, cores, boot, accelerator, size, frameworks present."""
    boot = Path("/proc/sys/kernel/random/boot_id")
    parts = [env.cpu_model(), str(os.cpu_count()), boot.read_text().strip() if boot.exists() else "",
             env.accelerator(), env.size_name(), ",".join(env.installed_frameworks())]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


@declare.checked
def fault_cost(nbytes: Annotated[int, Range(2**25 + 2**12, 2**32)] = FAULT_PROBE_BYTES,
               repeats: Annotated[int, Range(1, 100)] = 7) -> tuple[float, float, str]:
    """(seconds per byte, faults per MiB, allocator): a fresh buffer's first fill minus its second, the median over
    ``repeats`` buffers from the allocator the lessons use (torch's where present: NumPy's may get huge pages)."""
    validate.memory_fits("nbytes", nbytes)
    allocator = "torch" if env.available("torch") else "numpy"
    library = importlib.import_module(allocator)  # torch.empty and np.empty take the same arguments
    extra, faults = [], []
    for _ in range(repeats):
        fresh = library.empty(nbytes // 4, dtype=library.float32)
        fill = fresh.fill_ if allocator == "torch" else fresh.fill
        before = memory.minor_faults()
        start = time.perf_counter()
        fill(1.0)
        first = time.perf_counter()
        faults.append(memory.minor_faults() - before)
        fill(2.0)
        second = time.perf_counter()
        extra.append(max((first - start) - (second - first), 0.0))
        del fresh  # unmapped here: the next buffer faults in new pages
    return float(np.median(extra)) / nbytes, float(np.median(faults)) * 2**20 / nbytes, allocator


@declare.checked
def call_cost(framework: str, *, min_time: Annotated[float, Range(0, 60, low_open=True)] = 0.2) -> float:
    """Seconds per call of ``x + 1`` on 16 float32 elements under ``framework``'s default compile: one tiny kernel,
    so its time is the fixed cost every compiled call pays."""
    name = validate.framework(framework)
    x = interop.to_framework(name, np.ones(CALL_PROBE_ELEMENTS, np.float32))
    compiled = interop.compile_default(name, lambda x: x + 1)
    return timing.benchmark(compiled, x, min_time=min_time, label=f"{name} compiled x + 1").median


def _measure(key: str) -> MachineFigures:
    frameworks = env.installed_frameworks()
    roofs = {fw: roofline.measure_machine(fw) for fw in frameworks}
    per_byte, per_mib, allocator = fault_cost()
    return MachineFigures(key, roofs, per_byte, {fw: call_cost(fw) for fw in frameworks},
                          datetime.datetime.now().isoformat(timespec="seconds"), "measured", per_mib, allocator)


def _to_json(found: MachineFigures) -> dict[str, Any]:
    record = {k: v for k, v in asdict(found).items() if k not in ("source", "remeasured_because")}
    return {**record, "faults_per_mib": found.faults_per_mib if math.isfinite(found.faults_per_mib) else None}


def store(path: Path, record: Mapping[str, Any]) -> None:
    """Write a cached record as JSON through a temporary file renamed over ``path`` (atomic on POSIX): a notebook
    running beside this one reads the whole record or none. ``path`` lies inside the build folder."""
    validate.instance("path", path, Path)
    if not path.resolve().is_relative_to(env.build_dir().resolve()):
        raise ValueError(f"path must lie inside the build folder {env.build_dir()}; got {path}")
    validate.instance("record", record, Mapping)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{time.monotonic_ns()}.tmp")
    try:
        tmp.write_text(json.dumps(record, indent=2))
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)  # nothing is left behind when the write or the rename fails


def _read(path: Path, key: str) -> tuple[MachineFigures | None, str]:
    """(the figures in ``path``, "") if it holds a whole record for ``key`` and the frameworks present; else (None,
    why not), and the notebook says why it measured again."""
    if not path.exists():
        return None, ""
    try:
        data = json.loads(path.read_text())
        found = MachineFigures(key, {fw: roofline.Machine(**m) for fw, m in data["roofs"].items()},
                               float(data["fault_seconds_per_byte"]), dict(data["call_cost"]), data["measured_at"],
                               "read", math.nan if data["faults_per_mib"] is None else float(data["faults_per_mib"]),
                               data["fault_allocator"])
    except KeyError as err:
        return None, f"{path.name} lacks {err} (written by an older probe)"
    except (OSError, ValueError, TypeError, AttributeError) as err:  # a partial or foreign file
        return None, f"{path.name} is not a record of figures ({type(err).__name__}: {str(err)[:120]})"
    frameworks = sorted(env.installed_frameworks())
    if sorted(found.roofs) != frameworks or sorted(found.call_cost) != frameworks:
        return None, (f"{path.name} holds roofs for {sorted(found.roofs) or 'no framework'} and call costs for "
                      f"{sorted(found.call_cost) or 'no framework'}; the frameworks here are {frameworks}")
    return found, ""
