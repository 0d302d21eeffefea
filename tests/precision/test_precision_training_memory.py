"""course_utils.precision.remat, training memory: notebook 03's computed bytes per parameter per training scheme
(the measurements are core: tests/test_memory.py)."""

from __future__ import annotations

from course_utils import precision as P


def test_training_memory_per_scheme() -> None:
    assert sum(P.training_memory(10, "fp32 + Adam").values()) == 160
    assert sum(P.training_memory(10, "mixed + Adam, fp32 master").values()) == 160
    assert sum(P.training_memory(10, "pure bf16 + Adam").values()) == 80
    assert P.training_memory(0, "pure bf16 + Adam") == dict.fromkeys(P.TRAINING_SCHEMES["pure bf16 + Adam"], 0)


