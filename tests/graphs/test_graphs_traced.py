"""course_utils.graphs.traced: dispatches per call counted from profiler traces."""

from __future__ import annotations

import numpy as np
import pytest

from course_utils import graphs, interop, models

torch = pytest.importorskip("torch")


def test_torch_eager_chain_dispatches_eleven_ops_and_compiled_one() -> None:
    x = interop.to_framework("torch", np.ones(16, np.float32))
    chain = models.chain_for("torch")
    traced = graphs.trace_calls("torch", chain, torch.compile(graphs.fresh_function(chain), backend="eager"),
                                (x, x), calls=2)
    assert traced.eager_per_call == 11 and traced.compiled_per_call == 1
    table = graphs.traced_table([traced])
    assert table.column("eager dispatches / call") == ["11"]
