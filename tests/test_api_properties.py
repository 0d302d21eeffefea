"""Every public function of course_utils, fed what a learner who mistypes would pass (tests/api_walk.py reads the
parameters' type hints and names; hypothesis generates the values): each call must raise TypeError or ValueError
naming the parameter, or return an answer that is not NaN-shaped, within 3 seconds and without eating memory.
Where the function is ``@declare.checked``, the bad values come from its declarations, and a value the declaration
refuses must be refused by the call. The hand-written cases in tests/*/test_*_bad_input.py stay: they teach what
each error says."""

from __future__ import annotations

import importlib
import json
import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import psutil
import pytest
from api_walk import (
    EXTREME_FLOATS,
    Target,
    bad_values,
    declared_bad_values,
    declared_good_value,
    kind_of,
    targets,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from course_utils import calls, declare, exercises, models, notebook, profile, roofline, timing

TIME_LIMIT = 3.0  # seconds: a bad value must be refused at the call, not after minutes of work
MEMORY_LIMIT = 1 << 30  # bytes a call may add to the process before it is a runaway allocation
TARGETS = targets()

# Good values for the other parameters, so that the bad one is the only thing wrong with a call.
GOOD_BY_KIND = {"count": 4, "duration": 0.05, "number": 1.0, "text": "x", "callable": lambda *a, **k: 0.0,
                "sequence": [1.0, 2.0], "mapping": {"a": 1.0}, "flag": False}
GOOD_BY_NAME = {"framework": "torch", "label": "x", "name": "x", "device": "cpu", "dtype": "float32"}
_M = timing.Measurement.from_times("m", [1e-3, 1.2e-3, 1.1e-3])
_EVENTS = (profile.Event("op", "cpu_op", "main", 0.0, 1e-6), profile.Event("op", "cpu_op", "main", 2e-6, 1e-6))
# By the hint's class: a parameter of that class (or a sequence or mapping of them) gets this value.
GOOD_BY_ANNOTATION = {
    "Measurement": _M,
    "Machine": roofline.Machine("torch", "cpu", {"triad": 20e9}, {"matmul": 100e9}),
    "Point": roofline.Point("p", 1e6, 1e6, 1e-3),
    "Event": _EVENTS[0],
    "Trace": profile.Trace("torch", None, _EVENTS),
    "Row": notebook.Row("q", 1.0),
    "ndarray": np.ones(8, np.float32),
}


class Lazy:
    """A good value made when a case needs it (from the case's tmp_path): a model, a file on disk."""

    def __init__(self, make: Callable[[Any], Any]) -> None:
        self.make = make


def _trace_file(tmp_path: Any) -> Any:
    path = tmp_path / "good.json"
    path.write_text(json.dumps({"traceEvents": [{"ph": "X", "pid": 1, "tid": 1, "name": "op", "ts": 0, "dur": 1}]}))
    return path


def _xla_function(_: Any) -> Any:
    from course_utils import env

    if not env.available("tensorflow"):
        raise KeyError("fn (TensorFlow is not installed)")
    return env.import_tensorflow().function(lambda x: x + 1, jit_compile=True)


# By target (cu.<package>.<name>.<parameter>), where neither the kind nor the name says what a valid value is.
GOOD_BY_TARGET = {
    "cu.calls.limit.fn": abs,
    "cu.compile_report.CompileReport.recompile_reasons": (),
    "cu.compile_report.CompileReport.break_reasons": (),
    "cu.compiled.tf_hlo.fn": Lazy(_xla_function),
    "cu.display.Table.header": ("a", "b"),
    "cu.display.Table.rows": (("1", "2"),),
    "cu.display.table.rows": [(1, 2)],
    "cu.exercises.Result.exercise_id": "00.1",
    "cu.exercises.Result.status": "correct",
    "cu.exercises.check.answer": 1.0,
    "cu.exercises.check.exercise_id": Lazy(lambda _: exercises.registered()[0]),
    "cu.exercises.close.answer": 1.0,
    "cu.exercises.evaluate.answer": 1.0,
    "cu.exercises.evaluate.exercise_id": Lazy(lambda _: exercises.registered()[0]),
    "cu.exercises.register.exercise_id": "99.9",
    "cu.exercises.register.hint": "a hint",
    "cu.exercises.same_function.candidate": abs,
    "cu.exercises.same_function.reference": abs,
    "cu.exercises.same_function.make_inputs": lambda seed: (float(seed),),
    "cu.exercises.within.answer": 1.0,
    "cu.intervals.Speedup.unit": "rounds",
    "cu.intervals.speedup.baseline": [1.0, 1.1, 1.2],
    "cu.intervals.speedup.candidate": [0.9, 1.0, 1.1],
    "cu.intervals.t_quantile.p": 0.9,
    "cu.machine.MachineFigures.roofs": {"torch": GOOD_BY_ANNOTATION["Machine"]},
    "cu.machine.MachineFigures.call_cost": {"torch": 1e-5},
    "cu.machine.MachineFigures.source": "measured",
    "cu.machine.best_roof.machines": {"torch": GOOD_BY_ANNOTATION["Machine"]},
    "cu.models.gelu_chain.x": 1.0,
    "cu.models.gelu_chain.bias": 0.0,
    "cu.models.jax_cnn_apply.params": Lazy(lambda _: models.jax_cnn_params()),
    "cu.models.jax_cnn_apply.x": np.ones((1, 8, 8, 3), np.float32),
    "cu.models.jax_mlp_apply.params": Lazy(lambda _: models.jax_mlp_params()),
    "cu.models.jax_mlp_apply.x": np.ones((2, models.DEFAULT_SIZES[0]), np.float32),
    "cu.models.jax_sgd_step.params": Lazy(lambda _: models.jax_mlp_params()),
    "cu.models.jax_sgd_step.apply": models.jax_mlp_apply,
    "cu.models.keras_sgd_step.model": Lazy(lambda _: models.keras_mlp()),
    "cu.models.torch_sgd_step.model": Lazy(lambda _: models.torch_mlp()),
    "cu.notebook.SummaryTable.rows": (notebook.Row("q", 1.0),),
    "cu.notebook.summary_table.rows": [("q", 1.0)],
    "cu.plotting.sweep_plot.series": {"a": [_M, _M]},
    "cu.plotting.waterfall.steps": [("a", 1.0), ("b", 0.5)],
    "cu.roofline.ProbeSize.capped_by": "",
    "cu.profile.Trace.events": _EVENTS,
    "cu.profile.load.path": Lazy(_trace_file),
    "cu.timing.interleaved.calls": {"a": lambda: None},
    # validate's checks: the value each one accepts (its errors name the ``name`` they are given: the walk passes
    # the parameter under test as that name)
    "cu.validate.choice.value": "a",
    "cu.validate.choice.choices": ("a", "b"),
    "cu.validate.count.value": 4,
    "cu.validate.count.high": 10,
    "cu.validate.framework.value": "torch",
    "cu.validate.function.value": abs,
    "cu.validate.instance.value": 1,
    "cu.validate.instance.types": int,
    "cu.validate.memory_fits.nbytes": 1024,
    "cu.validate.non_empty.value": [1],
    "cu.validate.non_negative.value": 1,
    "cu.validate.number.value": 1,
    "cu.validate.positive.value": 1,
    "cu.validate.text.value": "x",
    "cu.validate.folder.value": Lazy(lambda tmp_path: tmp_path),
}


@pytest.fixture(scope="module", autouse=True)
def _frameworks_imported() -> None:
    """Import the frameworks before any call runs under the time limit: a limit that expires inside a first
    ``import torch`` would leave the module half-initialised for every later call."""
    from course_utils import env

    for name in ("torch", "jax"):
        if env.available(name):
            importlib.import_module(name)
    if env.available("torch"):  # what a first torch.compile or launch imports (sympy among them): seconds
        for name in ("torch._dynamo", "torch._inductor.compile_fx", "torch.distributed.run"):
            importlib.import_module(name)
    if env.available("tensorflow"):
        env.import_tensorflow()


def _good(target: Target, name: str, annotation: str, tmp_path: Any) -> Any:
    """A valid value for a parameter, or KeyError when the walk knows none (the target is then not covered)."""
    key = f"{target.spelling}.{name}"
    if key in GOOD_BY_TARGET:
        value = GOOD_BY_TARGET[key]
        return value.make(tmp_path) if isinstance(value, Lazy) else value
    if target.spelling.startswith("cu.validate.") and name == "name":
        return target.parameter  # validate's errors name what they are given as name
    if name in GOOD_BY_NAME:
        return GOOD_BY_NAME[name]
    rule = _declared(target.obj).get(name)
    if rule is not None:
        return declared_good_value(rule, GOOD_BY_ANNOTATION, tmp_path / name)
    kind = kind_of(name, annotation)
    classes = re.findall(r"\b([A-Z]\w*|ndarray)\b", annotation)
    for cls in classes:
        if cls in GOOD_BY_ANNOTATION and kind in ("other", "sequence", "mapping"):
            value = GOOD_BY_ANNOTATION[cls]
            return {"other": value, "sequence": [value, value], "mapping": {"a": value, "b": value}}[kind]
    if kind == "path":
        return tmp_path / name if "Path" in annotation else str(tmp_path / name)
    return GOOD_BY_KIND[kind]


def _declared(obj: Any) -> dict[str, Any]:
    """The declared Rules of a @declare.checked callable's parameters (none for one checked by hand)."""
    checked = hasattr(obj, "__checked__") or hasattr(getattr(obj, "__init__", None), "__checked__")
    return declare.declared(obj) if checked else {}


def _declared_values(target: Target, good: Any) -> list[Any]:
    """Each value the declaration refuses, then the extreme floats where it takes a number."""
    return declared_bad_values(target.rule, good) + (EXTREME_FLOATS if target.rule.kind == "float" else [])


def _strategy(target: Target) -> st.SearchStrategy:
    """The listed bad values of the parameter's kind, plus generated ones of the same kind."""
    listed = st.sampled_from(bad_values(target.kind, target.annotation))
    generated = {
        "count": st.one_of(st.integers(max_value=-1), st.integers(min_value=10**10, max_value=10**18)),
        "duration": st.floats(max_value=0.0) | st.sampled_from([math.nan, math.inf]),
        "number": st.sampled_from([math.nan, math.inf, -math.inf]),
    }.get(target.kind)
    return st.one_of(listed, generated) if generated is not None else listed


def _names(error: BaseException, target: Target) -> bool:
    return re.search(rf"\b{re.escape(target.parameter)}\b", str(error)) is not None


def _judge(target: Target, bad: Any, outcome: Any, others: dict[str, Any]) -> str | None:
    """None when the call behaved; else what went wrong, in words. A refusal that names another parameter means
    the walk's good value for it was not good enough: the target is then skipped (not covered), not failed. An
    answer to a value that the declaration refuses means the call does not run its declared checks."""
    if isinstance(outcome, calls.LearnerTimeout) and target.parameter == "timeout" and "timeout=" in str(outcome):
        return None  # the learner's own (tiny) limit, kept and named
    if isinstance(outcome, calls.LearnerTimeout):
        return f"ran past {TIME_LIMIT:g} s with {target.parameter}={bad!r} (a missing bound)"
    if isinstance(outcome, MemoryError):
        return f"allocated over {MEMORY_LIMIT >> 30} GiB with {target.parameter}={bad!r}"
    if isinstance(outcome, (TypeError, ValueError)):
        if _names(outcome, target):
            return None
        if any(re.search(rf"\b{re.escape(name)}\b", str(outcome)) for name in others):
            pytest.skip(f"the walk's value for another parameter was refused: {str(outcome)[:120]}")
        return f"{type(outcome).__name__} does not name {target.parameter!r}: {str(outcome)[:160]}"
    if isinstance(outcome, BaseException):
        return f"raised {type(outcome).__name__} with {target.parameter}={bad!r}: {str(outcome)[:160]}"
    if target.rule is not None and not _declared_accepts(target, bad, others):
        return f"accepted {target.parameter}={bad!r:.80} although its declaration refuses it"
    if isinstance(bad, float) and not math.isfinite(bad) and isinstance(outcome, str) and \
            re.search(r"\b(nan|inf)\b", outcome, re.IGNORECASE):
        return f"accepted {target.parameter}={bad!r} and answered {outcome[:80]!r}"
    return None


def _declared_accepts(target: Target, bad: Any, others: dict[str, Any]) -> bool:
    try:
        target.rule.check(target.parameter, bad, {**others, target.parameter: bad})
        return True
    except (TypeError, ValueError):
        return False


@pytest.mark.parametrize("target", TARGETS, ids=[f"{t.spelling}.{t.parameter}" for t in TARGETS])
def test_a_bad_value_is_refused_by_name_or_answered(target: Target, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("COURSE_BUILD_DIR", str(tmp_path / "build"))
    monkeypatch.chdir(tmp_path)
    import inspect

    params = inspect.signature(target.obj).parameters
    try:
        others = {n: _good(target, n, params[n].annotation if isinstance(params[n].annotation, str) else "",
                           tmp_path) for n in target.required}
    except KeyError as unknown:
        pytest.skip(f"no valid example for parameter {unknown} of {target.spelling}")
    try:
        good = _good(target, target.parameter, params[target.parameter].annotation
                     if isinstance(params[target.parameter].annotation, str) else "", tmp_path)
    except KeyError:
        good = None  # the declaration's relative values (a repeat, a length) are then made from 1.0

    def check(bad: Any) -> None:
        process = psutil.Process()
        before = process.memory_info().rss
        try:
            with calls.time_limit(TIME_LIMIT, f"{target.spelling}({target.parameter}=...)"):
                outcome = target.obj(**{**others, target.parameter: bad})
        except (Exception, calls.LearnerTimeout) as error:  # the outcome is judged, not raised
            outcome = error
        if process.memory_info().rss - before > MEMORY_LIMIT:
            outcome = MemoryError()
        problem = _judge(target, bad, outcome, others)
        assert problem is None, f"{target.spelling}: {problem}"

    if target.rule is not None:  # every value the declaration refuses, and the extreme floats
        for bad in _declared_values(target, good):
            check(bad)
        return
    settings(max_examples=4, deadline=None, database=None, derandomize=True,
             suppress_health_check=list(HealthCheck))(given(bad=_strategy(target))(check))()
