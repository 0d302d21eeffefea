"""One number for torch.compile: every compile speed-up notebook 07 measured, side by side with what differs
between them (the loader's wait, the batch, the precision), so that the distance from each to the number the
decision uses is accounted for by measurements, not by words.

Two methods appear, each used for rows of its kind: the ladder's interleaved epochs with a real loader (step
with its wait, and its compute part alone; band: quartiles of the per-round ratios) and back-to-back steps on
one fixed batch with no loader (``timing.benchmark``; band: opposite quartiles, as ``timing.compare``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from course_utils import display, timing, validate
from course_utils.migrate import torch_rungs
from course_utils.migrate.frameworks import FrameworkTable
from course_utils.migrate.ladder import Ladder, MigrationGain

Band = tuple[float, float, float]


def _ratio(eager: timing.Measurement, compiled: timing.Measurement) -> Band:
    """eager / compiled: ratio of medians, band from opposite quartiles."""
    return (eager.median / compiled.median, eager.p25 / compiled.p75, eager.p75 / compiled.p25)


def _fmt(band: Band) -> str:
    return f"{band[0]:.2f}x ({band[1]:.2f} to {band[2]:.2f})"


def _overlap(a: Band, b: Band) -> bool:
    return a[1] <= b[2] and b[1] <= a[2]


def _precision(dtype: Any) -> str:
    return "fp32" if dtype is None else str(dtype).split(".")[-1].replace("bfloat16", "bf16").replace("float16", "fp16")


@dataclass(frozen=True)
class FixedBatch:
    """Eager and compiled training steps timed back to back on one batch, no loader: ``runs[precision]`` is
    (eager, compiled) Measurements."""

    batch_size: int
    runs: dict[str, tuple[timing.Measurement, timing.Measurement]]

    def speedup(self, precision: str) -> Band:
        validate.choice("precision", precision, list(self.runs))
        return _ratio(*self.runs[precision])


def fixed_batch(make_model: Callable[[], Any], compiled_model: Any, batch: Any, *, amp_dtype: Any = None,
                min_time: float = 0.3) -> FixedBatch:
    """Time eager (a fresh model from ``make_model``) against ``compiled_model`` on ``batch`` in alternating rounds,
    in fp32 and, where ``amp_dtype`` is given, under autocast: the compiled model of the ladder's last rung is
    reused (no new compile where its precision matches; a first call outside the timings where it does not)."""
    validate.function("make_model", make_model)
    validate.positive("min_time", min_time)
    runs = {}
    for dtype in (None, amp_dtype) if amp_dtype is not None else (None,):
        name = _precision(dtype)
        steps = {"eager": torch_rungs.train_step(make_model(), dtype),
                 "compiled": torch_rungs.train_step(compiled_model, dtype)}
        timing.sync(steps["compiled"](batch))  # a precision it was not compiled in recompiles here, untimed
        timed = timing.interleaved({k: (lambda f=f: f(batch)) for k, f in steps.items()}, rounds=3,
                                   min_time=2 * min_time)
        runs[name] = (timed["eager"], timed["compiled"])
    size = batch[0].shape[0] if isinstance(batch, (tuple, list)) else len(batch)
    return FixedBatch(int(size), runs)


@dataclass(frozen=True)
class AccountRow:
    """One measured compile speed-up and the settings it was measured at; ``compute`` is None where there is no
    loader (the step is all compute)."""

    name: str
    loader: str
    batch: int
    precision: str
    step: Band
    compute: Band | None
    waits: str


@dataclass(frozen=True)
class CompileAccount:
    """The rows, the gain the decision uses (the last row) with its steps and rounds, and the eager and compiled
    step times behind the first two rows (seconds), to show which side moved between the two methods."""

    rows: tuple[AccountRow, ...]
    stated: MigrationGain
    steady_steps: int
    rounds: int
    times: dict[str, float]
    loads: tuple[float | None, float | None] = (None, None)
    drift: float | None = None  # Ladder.twin_drift of the stated gain

    def __getitem__(self, name: str) -> AccountRow:
        for row in self.rows:
            if row.name == name:
                return row
        raise KeyError(f"name must be one of {[r.name for r in self.rows]}; got {name!r}")

    def table(self) -> display.Table:
        rows = [(r.name, r.loader, str(r.batch), r.precision, _fmt(r.step),
                 "= the step (no loader)" if r.compute is None else _fmt(r.compute), r.waits) for r in self.rows]
        return display.table(["torch.compile over eager, measured", "loader", "batch", "precision",
                              "speed-up of the step (band)", "compute part alone", "waiting for data"], rows,
                             title="One number for torch.compile: what differs between the measurements",
                             note=f"The decision starts from the last row: {self.stated}, over "
                                  f"{self.steady_steps} steady steps in {self.rounds} interleaved rounds.")

    def __repr__(self) -> str:
        return repr(self.table())

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()

    def _loads(self) -> str:
        if self.loads[0] is None or self.loads[1] is None:
            return ""
        return f" (load average {self.loads[0]:.1f} after the ladder's pair, {self.loads[1]:.1f} after the table)"

    def findings(self) -> list[str]:
        """One computed sentence per difference: the wait, the method, the batch, the precision, the loader."""
        first, table, last = self.rows[0], self.rows[1], self.rows[-1]
        fixed = list(self.rows[1:-1])
        if first.compute is None or last.compute is None:
            raise ValueError("rows: the first and last rows are ladder rows and need their compute parts")
        t = {k: display.format_time(v) for k, v in self.times.items()}
        out = [f"**The wait.** Compile first gives {first.step[0]:.2f}x per whole step and {first.compute[0]:.2f}x on "
               f"the compute alone (waiting for data: {first.waits}): "
               + ("the wait, which no compiler shortens, dilutes it." if first.step[0] < first.compute[0] else
                  "here the wait did not dilute it: the compiled step waited no longer, relative to its compute.")]
        out.append(f"**The method.** At the same batch {table.batch} and {table.precision}, the framework table's "
                   f"back-to-back steps give {_fmt(table.step)}, the ladder's compute parts {_fmt(first.compute)} "
                   + ("(the bands overlap: one compiler at one setting). " if _overlap(first.compute, table.step)
                      else "(the bands do not overlap). ")
                   + f"Eager's step took {t['loop eager']} between loader calls and {t['table eager']} back to back; "
                   f"the compiled step {t['loop compiled']} and {t['table compiled']}" + self._loads() + ".")
        for before, after in zip(fixed, fixed[1:]):
            moved = ("within the bands" if _overlap(before.step, after.step) else
                     "up" if after.step[0] > before.step[0] else "down")
            if (before.batch, before.precision) == (after.batch, after.precision):
                out.append(f"**The repeat.** The same setting ({after.batch} {after.precision}, no loader) measured "
                           f"again later: {before.step[0]:.2f}x -> {after.step[0]:.2f}x ({moved}"
                           + ("" if moved == "within the bands" else ": the same code at another moment, so this is "
                              "the run's noise") + ").")
                continue
            change = "The batch" if before.batch != after.batch else "The precision"
            out.append(f"**{change}.** {before.batch} {before.precision} -> {after.batch} {after.precision}, no "
                       f"loader: {before.step[0]:.2f}x -> {after.step[0]:.2f}x ({moved}).")
        if all(r.precision == "fp32" for r in self.rows):
            out.append("**The precision.** Every row is fp32 (the autocast rung did not run here, or was not kept), so "
                       "precision plays no part.")
        ref = fixed[-1]
        moved = ("within the bands" if _overlap(ref.step, last.compute) else
                 "higher with the loader" if last.compute[0] > ref.step[0] else "lower with the loader")
        out.append(f"**The loader.** At batch {last.batch} {last.precision}: no loader {ref.step[0]:.2f}x; the "
                   f"ladder's compute parts, {last.loader} running beside them, {last.compute[0]:.2f}x ({moved}); "
                   f"its whole steps {last.step[0]:.2f}x (waiting for data: {last.waits}).")
        if {"fixed eager", "fixed compiled", "twin compute", "last compute"} <= set(t):
            eager_grew = self.times["twin compute"] / self.times["fixed eager"]
            compiled_grew = self.times["last compute"] / self.times["fixed compiled"]
            out.append(f"Per step, eager computed in {t['fixed eager']} with no loader and {t['twin compute']} with "
                       f"the loader worker beside it ({eager_grew:.2f}x); the compiled step in {t['fixed compiled']} "
                       f"and {t['last compute']} ({compiled_grew:.2f}x). "
                       + ("The worker beside the model slowed eager's compute more than the compiled one's, which is "
                          "where the ladder's larger gain comes from; why (candidates: the shared last-level cache "
                          "and memory bandwidth, which eager's separate passes over memory use more) is not "
                          "established by this run." if eager_grew > 1.1 * compiled_grew else
                          "The worker changed both about alike." if abs(eager_grew / compiled_grew - 1) <= 0.1 else
                          "The worker slowed the compiled step's compute more than eager's; why is not established "
                          "by this run."))
        if self.drift is not None:
            out.append(f"**The repeat of the set-up.** The eager twin beside compile took {1 / self.drift:.2f}x the "
                       "time of the same set-up measured earlier in its own group, beyond their quartiles; why (the "
                       "machine at another moment, or what ran beside it) is not established by this run, so the "
                       "stated gain's band is widened to cover both.")
        return out


def compile_account(ladder: Ladder, frameworks: FrameworkTable, fixed: FixedBatch) -> CompileAccount:
    """Every compile speed-up of the run in one table: compile first (ladder), the framework table's PyTorch
    row, ``fixed`` (the compiled rung's batch, fp32 then autocast), compile last (ladder: the stated number,
    over its eager twin at the best no-migration set-up)."""
    validate.instance("ladder", ladder, Ladder)
    validate.instance("frameworks", frameworks, FrameworkTable)
    validate.instance("fixed", fixed, FixedBatch)

    workers = next((r.label.removeprefix("+ ") for r in ladder.rungs if "loader worker" in r.label), "in-process")

    def waits(label: str) -> str:
        return f"{ladder.before(label).wait_share:.0%} -> {ladder[label].wait_share:.0%}"

    first, last = "torch.compile on the baseline", ladder.migration_gain().label
    final_precision = next((r.label.split()[-1] for r in ladder.rungs if r.label.startswith("+ autocast")), None)
    final_precision = _precision(None) if final_precision is None else _precision(final_precision)
    torch_row = frameworks["torch"]
    rows = [AccountRow("compile first (ladder, over eager fp32)", "in-process", ladder[first].batch_size, "fp32",
                       ladder.over_previous_band(first), ladder.over_previous_band(first, "compute"), waits(first)),
            AccountRow("framework table (PyTorch row)", "none", frameworks.batch_size, "fp32",
                       _ratio(torch_row.eager, torch_row.compiled), None, "-")]
    rows += [AccountRow(f"fixed batch, {name}", "none", fixed.batch_size, name, fixed.speedup(name), None, "-")
             for name in fixed.runs]
    gain = ladder.migration_gain()
    rows.append(AccountRow(f"compile last (ladder, over '{ladder.before(last).label}')", workers,
                           ladder[last].batch_size, final_precision, (gain.median, gain.low, gain.high),
                           ladder.over_previous_band(last, "compute"), waits(last)))
    rung = ladder[last]
    times = {"loop eager": ladder.baseline.compute_time, "loop compiled": ladder[first].compute_time,
             "table eager": torch_row.eager.median, "table compiled": torch_row.compiled.median,
             "twin compute": ladder.before(last).compute_time, "last compute": rung.compute_time}
    if fixed.batch_size == rung.batch_size and final_precision in fixed.runs:
        eager, compiled = fixed.runs[final_precision]
        times |= {"fixed eager": eager.median, "fixed compiled": compiled.median}
    return CompileAccount(tuple(rows), gain, rung.steps.n, len(rung.round_medians), times,
                          (ladder[first].load, frameworks.load), ladder.twin_drift(last))
