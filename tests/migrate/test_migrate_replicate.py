"""course_utils.migrate.replicate: the compiled rung measured again in a fresh process, and the widened band."""

from __future__ import annotations

import math

import pytest
from migrate_gains import measured_gain

from course_utils import migrate, pipeline, timing
from course_utils.migrate import ladder as lad

NAN = math.nan


def test_widened_keeps_the_median_and_covers_both_bands() -> None:
    gain = measured_gain(1.5, 1.4, 1.6)
    wider = gain.widened(1.2, 1.5, "another run")
    assert (wider.median, wider.low, wider.high) == (gain.median, 1.2, gain.high)
    assert wider.source == f"{gain.source}; another run" and wider.label == gain.label and wider.measured
    assert gain.widened(1.45, 1.55, "inside").low == gain.low  # a band inside changes nothing


@pytest.mark.parametrize(("call", "name"), [
    (lambda g: g.widened(NAN, 1.5, "x"), "low"),
    (lambda g: g.widened(1.2, math.inf, "x"), "high"),
    (lambda g: g.widened(1.6, 1.2, "x"), "low <= high"),
    (lambda g: g.widened(1.2, 1.6, ""), "why"),
    (lambda g: migrate.MigrationGain.claimed(1.3, "the seed").widened(1.2, 1.4, "x"), "claimed"),
])
def test_widened_refuses_bad_bands(call, name) -> None:
    with pytest.raises((TypeError, ValueError), match=name):
        call(measured_gain(1.5, 1.4, 1.6))


@pytest.mark.parametrize(("again", "words"), [
    (migrate.Replicate(1.5, 1.45, 1.55, 8, 20.0), "the band stands"),
    (migrate.Replicate(1.5, 1.3, 1.55, 8, 20.0), "widens from 1.40x-1.60x to 1.30x-1.60x"),
    (migrate.Replicate(1.2, 1.1, 1.25, 8, 20.0), "lies outside this process's band (1.40x to 1.60x)"),
])
def test_replicate_text_follows_where_the_second_run_landed(again, words) -> None:
    one = measured_gain(1.5, 1.4, 1.6)
    text = migrate.replicate_text(one, again, one.widened(again.low, again.high, "x"))
    assert words in text and "20 s" in text


def _ladder(setup):
    m = timing.Measurement("t", (1.0,) * 4)
    rungs = [lad.Rung("base", migrate.NO_MIGRATION, 4, 1.0, m, 0.0, None),
             lad.Rung("+ torch.compile", migrate.MIGRATION, 4, 1.0, m, 0.0, None, setup=setup)]
    return migrate.build_ladder(rungs)


DATA = pipeline.SyntheticImages(16, size=16, work=1)


@pytest.mark.parametrize(("call", "name"), [
    (lambda: migrate.replicate_gain("ladder", DATA, rounds=1, threads=1), "ladder"),
    (lambda: migrate.replicate_gain(_ladder({"batch": 4}), [1, 2], rounds=1, threads=1), "dataset"),
    (lambda: migrate.replicate_gain(_ladder({"batch": 4}), DATA, rounds=NAN, threads=1), "rounds"),
    (lambda: migrate.replicate_gain(_ladder({"batch": 4}), DATA, rounds=1, threads=0), "threads"),
    (lambda: migrate.replicate_gain(_ladder({"batch": 4}), DATA, rounds=1, threads=1, device="tpu"),
     "device"),
    (lambda: migrate.replicate_gain(_ladder({"batch": 4}), DATA, rounds=1, threads=1, timeout=NAN),
     "timeout"),
    (lambda: migrate.replicate_gain(_ladder({}), DATA, rounds=1, threads=1), "set-up"),
    (lambda: migrate.Replicate(NAN, 1.0, 2.0, 8, 1.0), "median"),
    (lambda: migrate.Replicate(1.5, 1.6, 2.0, 8, 1.0), "low <= median"),
    (lambda: migrate.Replicate(1.5, 1.0, 2.0, 0, 1.0), "rounds"),
    (lambda: migrate.Replicate(1.5, 1.0, 2.0, 8, -1.0), "seconds"),
    (lambda: migrate.replicate_text(measured_gain(1.5, 1.4, 1.6), None, measured_gain(1.5, 1.4, 1.6)), "again"),
])
def test_replicate_gain_refuses_bad_input(call, name) -> None:
    with pytest.raises((TypeError, ValueError), match=name):
        call()


@pytest.mark.slow
def test_replicate_gain_measures_the_pair_in_a_fresh_process() -> None:
    ladder = _ladder({"batch": 4, "workers": 0, "pin": False, "amp": None})
    again = migrate.replicate_gain(ladder, DATA, rounds=2, threads=1)
    assert again.low <= again.median <= again.high and again.rounds == 2 and again.seconds > 0


def test_a_failing_fresh_process_names_its_error() -> None:
    ladder = _ladder({"batch": 4, "workers": 0, "pin": False, "amp": "no_such_dtype"})
    with pytest.raises(RuntimeError, match="no_such_dtype"):
        migrate.replicate_gain(ladder, DATA, rounds=1, threads=1)
