"""course_utils.migrate.frameworks: the table's arithmetic on a common baseline, and each compiler's interval over
its own eager step."""

from __future__ import annotations

import pytest

from course_utils import migrate, timing
from course_utils.migrate import frameworks


def _m(label, median, rounds=(1.0, 1.01, 0.99, 1.0)):
    return timing.Measurement(label, (median, median, median), first_call=median * 10,
                              rounds=tuple(median * r for r in rounds))


def test_table_uses_pytorch_eager_as_the_common_baseline() -> None:
    table = frameworks.FrameworkTable((frameworks.FrameworkRow("torch", _m("a", 4.0), _m("b", 2.0, (1, 1.02, 1, 0.99)),
                                                               None, 0),
                                       frameworks.FrameworkRow("jax", _m("c", 8.0), _m("d", 1.0), 1024, None)),
                                      ("TensorFlow is not installed here, so its row is skipped.",))
    assert table.vs_baseline("jax") == pytest.approx(4.0) and table.vs_own_eager("jax") == pytest.approx(8.0)
    assert table.interval("torch").outcome == "faster" and table.runtime_factor("jax") == pytest.approx(0.5)
    text = repr(table)
    assert "vs PyTorch eager" in text and "not how JAX is used" in text and "TensorFlow is not installed" in text
    assert "95% interval" in text and "<table>" in table.decomposition()._repr_html_()


def test_a_framework_step_times_each_framework_with_the_learners_torch_compiler() -> None:
    pytest.importorskip("torch")
    import numpy as np

    used = []

    def compiler(model):
        used.append(model)
        return model  # eager stands in for the compiled model: what matters is that the table uses this callable

    table = migrate.framework_table(np.zeros((2, 3, 16, 16), np.float32), np.zeros(2, np.int64),
                                    torch_compiler=compiler, min_time=0.01, frameworks=["torch"])
    assert used and [r.framework for r in table.rows] == ["torch"] and table.interval("torch").n == 4
