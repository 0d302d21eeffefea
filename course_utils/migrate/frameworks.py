"""The seed's framework table on a common baseline: the same CNN, batch and SGD step, each framework's compiled step
beside PyTorch eager and its own eager mode, on the device each row names."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np

from course_utils import declare, devices, display, env, graphs, intervals, memory, models, timing, validate
from course_utils.declare import NonEmpty, Range, Unique
from course_utils.migrate import torch_rungs

_EAGER = {"torch": "eager", "jax": "op-by-op (not how JAX is used)", "tensorflow": "eager"}
_COMPILED = {"torch": "torch.compile", "jax": "jax.jit", "tensorflow": "tf.function(jit_compile=True)"}


Classes = Annotated[int, Range(2, 10_000)]


def _tensorflow_steps(classes: int, size: int) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    tf = env.import_tensorflow()
    eager_inner = models.keras_sgd_step(models.keras_cnn(classes=classes, size=size), lr=torch_rungs.LR)
    compiled = models.keras_sgd_step(models.keras_cnn(classes=classes, size=size), lr=torch_rungs.LR, jit_compile=True)

    def eager(batch: Any) -> Any:
        tf.config.run_functions_eagerly(True)  # the same step, op by op, as TF 2 runs code by default
        try:
            return eager_inner(batch)
        finally:
            tf.config.run_functions_eagerly(False)

    return eager, compiled


@declare.checked
@dataclass(frozen=True)
class FrameworkRow:
    framework: str
    eager: timing.Measurement
    compiled: timing.Measurement
    peak_bytes: int | None
    graph_breaks: int | None
    device: str = "cpu"  # where both of the row's steps ran


@declare.checked
@dataclass(frozen=True, repr=False)
class FrameworkTable(display.Tabled):
    """Measured rows; ``baseline`` is PyTorch eager, the common baseline of every 'vs' column."""

    rows: tuple[FrameworkRow, ...]
    skipped: tuple[str, ...]
    batch_size: int = 0
    load: float | None = None  # 1-minute load average once the rows were measured
    threads: int = 1  # torch's intra-op threads when the rows were measured

    @property
    def baseline(self) -> timing.Measurement:
        return self["torch"].eager

    def __getitem__(self, framework: str) -> FrameworkRow:
        name = validate.framework(framework)
        for row in self.rows:
            if row.framework == name:
                return row
        raise KeyError(f"framework must be one of {[r.framework for r in self.rows]}; got {framework!r}")

    def vs_baseline(self, framework: str) -> float:
        """PyTorch eager median / this framework's compiled median."""
        return self.baseline.median / self[framework].compiled.median

    def vs_own_eager(self, framework: str) -> float:
        """This framework's eager median / its compiled median: what its compiler adds ("compilation")."""
        row = self[framework]
        return row.eager.median / row.compiled.median

    def interval(self, framework: str) -> intervals.Speedup:
        """This framework's compiled step over its own eager step, with the 95% interval of their paired rounds."""
        row = self[framework]
        return intervals.speedup(row.eager, row.compiled)

    def runtime_factor(self, framework: str) -> float:
        """PyTorch eager median / this framework's eager median: what its libraries and runtime give before any
        whole-step compile ("library/runtime"). ``vs_baseline = runtime_factor * vs_own_eager``."""
        return self.baseline.median / self[framework].eager.median

    def ranking(self) -> str:
        """'PyTorch 1.19x > TensorFlow 0.57x > JAX 0.41x': compiled steps over PyTorch eager, fastest first."""
        ranked = sorted(self.rows, key=lambda r: -self.vs_baseline(r.framework))
        return " > ".join(f"{validate.framework_title(r.framework)} {self.vs_baseline(r.framework):.2f}x"
                          for r in ranked)

    def where(self) -> str:
        """Where each row ran: 'PyTorch on CPU, JAX on TPU'."""
        return ", ".join(f"{validate.framework_title(r.framework)} on {r.device.upper()}" for r in self.rows)

    def decomposition(self) -> display.Table:
        """The common-baseline speed-up split into library/runtime x compilation (computed from the medians)."""
        rows = [(validate.framework_title(r.framework), f"{self.runtime_factor(r.framework):.2f}x",
                 f"{self.vs_own_eager(r.framework):.2f}x", f"{self.vs_baseline(r.framework):.2f}x") for r in self.rows]
        return display.table(["framework", "library/runtime: its eager vs PyTorch eager",
                              "compilation: compiled vs its eager", "= compiled vs PyTorch eager"], rows,
                             title="Where each speed-up over PyTorch eager comes from (computed from the medians)",
                             note="JAX's 'eager' is op-by-op: each primitive runs as its own small XLA program, "
                                  "so its convolutions already use XLA:CPU's kernels."
                             if any(r.framework == "jax" for r in self.rows) else None)

    def table(self) -> display.Table:
        rows = []
        for r in self.rows:
            title = f"{validate.framework_title(r.framework)} (on {r.device.upper()})"
            rows.append((title, f"{display.format_time(r.eager.median)} ({_EAGER[r.framework]})",
                         f"{display.format_time(r.compiled.median)} ({_COMPILED[r.framework]})",
                         display.format_time(r.compiled.first_call),
                         f"{self.vs_baseline(r.framework):.2f}x",
                         str(self.interval(r.framework)),
                         "n/a" if r.peak_bytes is None else display.format_bytes(r.peak_bytes),
                         "n/a (traces all or raises)" if r.graph_breaks is None else str(r.graph_breaks)))
        devices_used = sorted({r.device for r in self.rows})
        note = (f"Same CNN, batch {self.batch_size}, fp32, one SGD step, no loader, {self.threads} compute thread(s) "
                "on a CPU; each framework's eager and compiled steps timed in alternating rounds, in this process. "
                "'vs PyTorch eager' is the common baseline (ratio of medians); 'vs its own eager' gives the 95% "
                "interval over the paired rounds in this process; peak memory: growth of the process's peak RSS "
                "during one compiled step.")
        if len(devices_used) > 1:
            note += (f" The rows ran on different devices ({', '.join(d.upper() for d in devices_used)}): 'vs "
                     "PyTorch eager' then compares devices, not frameworks (PyTorch on a TPU runtime runs on the "
                     "host CPU).")
        if self.skipped:
            note += " Skipped: " + " ".join(self.skipped)
        return display.table(["framework", "its eager step", "compiled step", "first compiled call",
                              "vs PyTorch eager", "vs its own eager", "peak memory", "graph breaks"], rows,
                             title="One CNN training step in each framework", note=note)


@declare.checked
def framework_table(x_nchw: np.ndarray, y: np.ndarray, *, torch_compiler: Callable[..., Any], classes: Classes = 10,
                    min_time: Annotated[float, Range(0.001, 60)] = 0.3, rounds: Annotated[int, Range(2, 100)] = 4,
                    frameworks: Annotated[Sequence[Literal[validate.FRAMEWORKS]], NonEmpty, Unique] = (
                        "torch", "jax", "tensorflow"), device: Any = "cpu") -> FrameworkTable:
    """Measure eager and compiled training steps of the course CNN in each installed framework, in ``rounds``
    alternating rounds; ``torch_compiler`` is the learner's migration for the PyTorch row, run on ``device``."""
    import torch

    validate.instance("x_nchw", x_nchw, np.ndarray)
    if x_nchw.ndim != 4 or len(validate.instance("y", y, np.ndarray)) != len(x_nchw):
        raise ValueError(f"x_nchw must be (batch, channels, h, w) with len(y) == batch; got {x_nchw.shape}, {y.shape}")
    x_nhwc = np.ascontiguousarray(x_nchw.transpose(0, 2, 3, 1))
    rows, skipped = [], []
    for name in dict.fromkeys(["torch", *frameworks]):
        if not env.available(name):
            skipped.append(f"{validate.framework_title(name)} is not installed here: its row is skipped.")
            continue
        if name == "torch":
            on = torch.device(device)
            batch = (torch.from_numpy(x_nchw).to(on), torch.from_numpy(y).to(on))
            make = torch_rungs.step_factory(lambda: models.torch_cnn(classes=classes).to(on))  # noqa: B023
            eager, compiled = make(lambda m: m), make(torch_compiler)
            breaks = graphs.torch_graph_breaks(models.torch_cnn(classes=classes).to(on), batch[0]).break_count
            ran_on = on.type.replace("cuda", "gpu")
        elif name == "jax":
            import jax

            batch = (jax.numpy.asarray(x_nhwc), jax.numpy.asarray(y))
            eager, compiled = (models.jax_sgd_step(models.jax_cnn_params(classes=classes), models.jax_cnn_apply,
                                                   lr=torch_rungs.LR, jit=jit) for jit in (False, True))
            breaks, ran_on = None, jax.devices()[0].platform
        else:
            tf = env.import_tensorflow()
            batch = (tf.constant(x_nhwc), tf.constant(y))
            (eager, compiled), breaks = _tensorflow_steps(classes, x_nchw.shape[-1]), None
            ran_on = "gpu" if tf.config.list_physical_devices("GPU") else "cpu"
        calls = {"eager": lambda e=eager, b=batch: e(b), "compiled": lambda c=compiled, b=batch: c(b)}
        timed = timing.interleaved(calls, rounds=rounds, min_time=2 * min_time)  # alternating rounds: the same moments
        peak = memory.torch_peak_bytes(lambda c=compiled, b=batch: timing.sync(c(b)), "cpu")
        rows.append(FrameworkRow(name, timed["eager"], timed["compiled"], peak, breaks, ran_on))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return FrameworkTable(tuple(rows), tuple(skipped), int(x_nchw.shape[0]), load, torch.get_num_threads())


@declare.checked
@dataclass(frozen=True)
class Agreement:
    """Each installed framework's largest absolute difference from PyTorch's CNN output, and the tolerance the
    device plan gives a float32 matmul comparison on this runtime (a TPU's default matmul runs bf16 passes)."""

    diffs: dict[str, float]
    tolerance: float
    device: str

    @property
    def close(self) -> bool:
        return all(d <= self.tolerance for d in self.diffs.values())


@declare.checked
def outputs_agree(x_nchw: np.ndarray, *, plan: devices.Plan, classes: Classes = 10) -> Agreement:
    """Each installed framework's outputs on ``x_nchw`` against PyTorch's, same weights, within the plan's tolerance."""
    import torch

    validate.instance("x_nchw", x_nchw, np.ndarray)
    reference = models.torch_cnn(classes=classes)(torch.from_numpy(x_nchw)).detach().numpy()
    x_nhwc = np.ascontiguousarray(x_nchw.transpose(0, 2, 3, 1))
    diffs = {"torch": 0.0}
    if env.available("jax"):
        import jax.numpy as jnp

        out = models.jax_cnn_apply(models.jax_cnn_params(classes=classes), jnp.asarray(x_nhwc))
        diffs["jax"] = float(np.abs(np.asarray(out) - reference).max())
    if env.available("tensorflow"):
        out = models.keras_cnn(classes=classes, size=x_nchw.shape[-1])(x_nhwc)
        diffs["tensorflow"] = float(np.abs(np.asarray(out) - reference).max())
    return Agreement(diffs, plan.matmul_tolerance, plan.device.name)
