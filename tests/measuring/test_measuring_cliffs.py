"""course_utils.measuring.hierarchy's cliffs: main memory starts past the sweep's own last cliff,
and the cache size the OS reports is a second fact that decides it only where the sweep shows no cliff."""

from __future__ import annotations

import pytest

from course_utils.measuring import hierarchy
from course_utils.measuring.hierarchy import Cliff, find_cliffs

K, M = 2**10, 2**20
SIZES = (16 * K, 64 * K, 256 * K, M, 4 * M, 16 * M, 64 * M, 256 * M, 512 * M)


def test_a_clear_cliff_places_main_memory_past_it() -> None:
    rates = (26e9, 60e9, 82e9, 80e9, 78e9, 76e9, 30e9, 27e9, 26e9)  # overhead-bound start, one cache, then DRAM
    sweep = hierarchy.HierarchySweep(SIZES, rates, {"L1d": 32 * K, "L2": M, "L3": 16 * M})
    (cliff,) = sweep.cliffs
    assert (cliff.before, cliff.after) == (16 * M, 64 * M) and cliff.drop == pytest.approx(76 / 30)
    assert sweep.main_memory_start == 64 * M and "last cliff, between 16 MiB and 64 MiB" in sweep.basis
    assert [s for s, _ in sweep.dram_points()] == [64 * M, 256 * M, 512 * M]
    assert [sweep.level_of(s) for s in (16 * K, 16 * M, 64 * M)] == ["cache 1", "cache 1", "main memory"]


def test_a_cliff_far_from_the_reported_cache_wins_over_the_report() -> None:
    rates = (60e9, 80e9, 80e9, 78e9, 70e9, 65e9, 50e9, 20e9, 19e9)  # falls between 64 and 256 MiB
    sweep = hierarchy.HierarchySweep(SIZES, rates, {"L2": M, "L3": 480 * M})  # a VM reporting its host's cache
    assert sweep.main_memory_start == 256 * M  # not 4x 480 MiB, which this sweep never reaches
    assert [s for s, _ in sweep.dram_points()] == [256 * M, 512 * M]
    assert sweep.level_of(128 * M) == "cliff 1" and sweep.reported_level(512 * M) == "past L3"
    assert sweep.reported_level(256 * M) == "L3"  # the second fact, shown beside the measured level
    assert "480 MiB" not in sweep.basis and "second fact" in repr(sweep)


def test_no_cliff_falls_back_on_the_reported_cache_and_says_so() -> None:
    rates = (20e9, 40e9, 60e9, 62e9, 61e9, 60e9, 59e9, 58e9, 57e9)  # rises, then flat: no level's edge shows
    sweep = hierarchy.HierarchySweep(SIZES, rates, {"L3": 32 * M})
    assert sweep.cliffs == () and sweep.main_memory_start == 128 * M
    assert "no cliff" in sweep.basis and "32 MiB" in sweep.basis
    assert [s for s, _ in sweep.dram_points()] == [256 * M, 512 * M]
    bare = hierarchy.HierarchySweep(SIZES, rates, {})
    assert bare.main_memory_start is None and bare.dram_points() == () and bare.level_of(512 * M) == "cache 1"


def test_one_slow_point_in_a_plateau_is_not_a_cliff() -> None:
    assert find_cliffs(SIZES[:5], (50e9, 50e9, 25e9, 50e9, 49e9)) == ()
    assert find_cliffs(SIZES[:5], (50e9, 49e9, 48e9, 47e9, 46e9)) == ()  # a slow decline under the drop


def test_two_cliffs_are_found_in_order() -> None:
    rates = (90e9, 90e9, 45e9, 44e9, 43e9, 20e9, 19e9)
    cliffs = find_cliffs(SIZES[:7], rates)
    assert [(c.before, c.after) for c in cliffs] == [(64 * K, 256 * K), (4 * M, 16 * M)]
    sweep = hierarchy.HierarchySweep(SIZES[:7], rates, {})
    assert [sweep.level_of(s) for s in SIZES[:7]] == ["cache 1"] * 2 + ["cache 2"] * 3 + ["main memory"] * 2
    assert str(cliffs[1]) == "between 4 MiB and 16 MiB, a 2.1x fall"


@pytest.mark.parametrize(("call", "name"), [
    (lambda: find_cliffs((), ()), "working_sets"),
    (lambda: find_cliffs((K,), (1e9, 2e9)), "bandwidths"),
    (lambda: find_cliffs((K, 2 * K), (1e9, -1.0)), "bandwidths"),
    (lambda: Cliff(K, 2 * K, 0.5), "drop"),
])
def test_bad_input_names_the_argument(call, name: str) -> None:
    with pytest.raises((TypeError, ValueError), match=name):
        call()
