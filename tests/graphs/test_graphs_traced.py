"""course_utils.graphs.training: dispatches per call counted from profiler traces."""

from __future__ import annotations

import numpy as np
import pytest

from course_utils import graphs, interop, models, profile

torch = pytest.importorskip("torch")


def test_torch_eager_chain_dispatches_eleven_ops_and_compiled_one() -> None:
    x = interop.to_framework("torch", np.ones(16, np.float32))
    chain = models.chain_for("torch")
    traced = graphs.trace_calls("torch", chain, torch.compile(graphs.fresh_function(chain), backend="eager"),
                                (x, x), repeats=2)
    assert traced.eager_per_call == 11 and traced.compiled_per_call == 1
    table = graphs.traced_table([traced])
    assert table.column("eager dispatches / call") == ["11"]


def test_trace_events_per_call_are_rounded() -> None:
    events = tuple(profile.Event("ExecuteHelperOnSingleDevice", "op", "t", i * 1e-6, 1e-7) for i in range(83))
    trace = profile.Trace("jax", None, events)
    row = graphs.training.TracedCalls("jax", 3, trace, profile.Trace("jax", None, events[:9])).table_row()
    assert row[3] == "27.7" and row[4] == "3"
