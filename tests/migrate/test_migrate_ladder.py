"""course_utils.migrate.ladder: rungs from a loader and a step, per-sample speed-ups, the migration's gain."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from course_utils import migrate, timing
from course_utils.migrate import ladder as lad
from course_utils.migrate import torch_rungs

SMALL = [(np.full((4, 2), i, np.float32), np.zeros(4)) for i in range(6)]
LARGE = [(np.full((8, 2), i, np.float32), np.zeros(8)) for i in range(3)]


def _step(batch):
    return float(batch[0].sum())


def _rung(label, kind, median, batch=4, spread=0.1, group=1):
    """A rung of one interleaved group (paired rounds), with four rounds around ``median``."""
    times = tuple(median * f for f in (1 - spread, 1, 1 + spread))
    rounds = tuple(median * (1 + spread / 10 * math.sin(k + sum(map(ord, label)))) for k in range(4))  # own noise
    return lad.Rung(label, kind, batch, median, timing.Measurement(label, times), 0.1, None, round_medians=rounds,
                    group=group)


def test_measure_rung_reads_batch_size_and_steady_steps() -> None:
    rung, = torch_rungs.measure_rungs([("r", SMALL, _step, lad.NO_MIGRATION)], rounds=2,
                                peak_memory=lambda fn: (fn(), 123)[1])
    assert rung.batch_size == 4 and rung.peak_bytes == 123 and rung.kind == lad.NO_MIGRATION
    assert rung.steps.n == 2 * (len(SMALL) - 1)  # each epoch's first step holds the loader start
    assert 0 <= rung.wait_share < 1 and len(rung.fingerprints) == len(SMALL)


def test_measure_rungs_interleaves_and_keeps_kinds() -> None:
    a, b = torch_rungs.measure_rungs([("a", SMALL, _step, lad.NO_MIGRATION), ("b", LARGE, _step, migrate.MIGRATION)],
                                 rounds=2)
    assert (a.kind, b.kind, a.batch_size, b.batch_size) == (lad.NO_MIGRATION, migrate.MIGRATION, 4, 8)
    assert b.steps.n == 2 * (len(LARGE) - 1)


def test_empty_loader_is_a_value_error_not_stop_iteration() -> None:
    with pytest.raises(ValueError, match="loader"):
        torch_rungs.measure_rungs([("x", [], _step, lad.NO_MIGRATION)])


def test_speedups_are_per_sample() -> None:
    result = lad.build_ladder([_rung("base", "no migration", 4.0, batch=4),
                                   _rung("big", "no migration", 6.0, batch=8),
                                   _rung("compiled", "migration", 3.0, batch=8)])
    assert result.speedup("big") == pytest.approx(4 / 4 / (6 / 8))
    assert result.speedup("compiled") == pytest.approx(1.0 / (3 / 8))
    assert result.no_migration_gain() == pytest.approx(4 / 3)


def test_migration_gain_takes_only_migration_rungs_over_the_rung_before() -> None:
    result = lad.build_ladder([_rung("base", "no migration", 4.0), _rung("workers", "no migration", 2.0),
                                   _rung("compile", "migration", 1.6)],
                                  extra=[_rung("compile first", "migration", 3.5)])
    gain = result.migration_gain()
    assert gain.label == "compile" and gain.median == pytest.approx(2.0 / 1.6, rel=0.01)
    assert gain.low < gain.median < gain.high and "workers" in gain.source and "paired rounds" in str(gain)
    first = result.migration_gain("compile first")
    assert first.median == pytest.approx(4.0 / 3.5, rel=0.01) and "base" in first.source
    assert result.interval("compile").outcome == "faster" and result.no_migration_interval().ratio > 1.9
    with pytest.raises(ValueError, match="no-migration"):
        result.migration_gain("workers")
    with pytest.raises(KeyError, match="label"):
        result.migration_gain("nope")


def test_rungs_of_different_groups_have_no_paired_interval() -> None:
    result = lad.build_ladder([_rung("base", "no migration", 4.0, group=1),
                                   _rung("compile", "migration", 2.0, group=2)])
    with pytest.raises(ValueError, match="not paired"):
        result.migration_gain()
    assert result.speedup("compile") == pytest.approx(2.0)  # the ratio of medians needs no pairing


def test_ladder_table_and_waterfall() -> None:
    result = lad.build_ladder([_rung("base", "no migration", 4.0), _rung("compile", "migration", 2.0)],
                            skipped=["pinned memory (no GPU)"])
    text = repr(result)
    assert "needs" in text and "migration" in text and "pinned memory" in text
    assert "<table>" in result._repr_html_()
    assert [label for label, _ in result.waterfall_steps()] == ["base", "compile"]
    with pytest.raises(ValueError, match="rungs"):
        lad.build_ladder([_rung("compile", "migration", 2.0)])


def test_claimed_gain_has_no_spread() -> None:
    gain = lad.MigrationGain.claimed(1 / 0.7, "the seed")
    assert gain.low == gain.median == gain.high and "seed" in str(gain)


def test_autocast_dtype_and_train_step() -> None:
    torch = pytest.importorskip("torch")
    from course_utils import models

    assert migrate.autocast_dtype("cpu") in (None, torch.bfloat16)
    assert migrate.autocast_dtype(torch.device("cpu")) in (None, torch.bfloat16)
    torch.manual_seed(0)
    step = torch_rungs.train_step(models.torch_mlp((8, 16, 3)))
    batch = (torch.randn(64, 8), torch.randint(0, 3, (64,)))
    losses = [float(step(batch)) for _ in range(20)]
    assert losses[-1] < losses[0]


def test_rungs_measured_together_get_an_interval_from_their_paired_rounds() -> None:
    a, b = torch_rungs.measure_rungs([("a", SMALL, _step, lad.NO_MIGRATION), ("b", SMALL, _step, migrate.MIGRATION)],
                                 rounds=3)
    assert a.group == b.group and len(a.round_medians) == len(b.round_medians) == 3
    gain = lad.build_ladder([a, b]).migration_gain()
    assert gain.low <= gain.median <= gain.high


def test_a_migration_gain_cannot_be_built_by_hand() -> None:
    with pytest.raises(TypeError, match="MigrationGain"):
        lad.MigrationGain("+ 2 loader workers", 2.0, 1.5, 2.5, "measured over 'eager fp32'")
    gain = lad.build_ladder([_rung("base", "no migration", 4.0), _rung("c", "migration", 2.0)]).migration_gain()
    assert gain.measured and not lad.MigrationGain.claimed(1.2, "x").measured


def _timed_rung(label, kind, steps, computes, rounds, round_computes, group=7, batch=4):
    return lad.Rung(label, kind, batch, 1.0, timing.Measurement(label, steps), 0.2, None, (), rounds, group,
                    timing.Measurement(label, computes), round_computes, 1.5)


def test_compute_interval_removes_the_wait_and_steps_taken_sorts_wins_from_losses() -> None:
    base = _timed_rung("base", "no migration", (10.0,) * 3, (8.0,) * 3, (10.0, 10.1, 9.9), (8.0, 8.0, 8.1))
    worse = _timed_rung("+ 1 loader worker", "no migration", (12.0,) * 3, (11.0,) * 3, (12.0, 12.5, 12.2),
                        (11.0, 11.0, 11.1))
    fast = _timed_rung("+ torch.compile", "migration", (6.0,) * 3, (4.0,) * 3, (6.0, 6.1, 6.0), (4.0, 4.0, 4.1))
    result = lad.build_ladder([base, worse, fast])
    assert result.interval("+ torch.compile", "compute").ratio == pytest.approx(11 / 4, rel=0.01)
    assert result.interval("+ torch.compile").ratio == pytest.approx(12.23 / 6.03, rel=0.01)
    assert [(r.label, result.interval(r.label).outcome) for r in result.rungs[1:]] == [
        ("+ 1 loader worker", "slower"), ("+ torch.compile", "faster")]
    assert worse.compile_s == 0.0 and fast.compute_time == 4.0
    assert result.find("+ 1 loader") == "+ 1 loader worker" and result.find("+ autocast") is None
    with pytest.raises(ValueError, match="part"):
        result.interval("+ torch.compile", "wait")


@pytest.mark.slow
def test_torch_ladder_tags_only_the_compile_rungs_as_migration() -> None:
    torch = pytest.importorskip("torch")
    from course_utils import models, pipeline

    data = pipeline.SyntheticImages(16, size=8, classes=3, work=0)
    base = {"workers": 0, "pin": False, "amp": None, "batch": 4}
    setups = {"eager fp32": base, migrate.workers_label(1): {**base, "workers": 1},
              "+ batch 8": {**base, "workers": 1, "batch": 8}}  # the rungs a notebook writes

    def loader(setup):
        return migrate.make_loader(data, setup["batch"], setup["workers"], setup["pin"])

    def step(model, setup):
        return torch_rungs.train_step(model, setup["amp"])

    result, compiled = migrate.torch_ladder(setups, loader, step, lambda: models.torch_cnn(classes=3), rounds=2,
                                            final_rounds=2, skipped=["pinned memory (no GPU)"],
                                            compiler=lambda m: torch.compile(m, backend="eager", dynamic=False))
    tagged = {r.label: r.kind for r in (*result.rungs, *result.extra)}
    assert {label for label, kind in tagged.items() if kind == migrate.MIGRATION} == {
        "+ torch.compile", "torch.compile on the baseline"}
    assert all(kind == lad.NO_MIGRATION for label, kind in tagged.items() if "torch.compile" not in label)
    assert result.rungs[-1].label == "+ torch.compile"
    cheap = [r for r in (*result.rungs, *result.dropped) if r.kind == lad.NO_MIGRATION]
    kept = [r for r in result.rungs if r.kind == lad.NO_MIGRATION]
    assert min(cheap, key=lambda r: r.sample_time) is kept[-1]  # compile builds on the fastest set-up
    assert [r.label for r in cheap][1:2] == [migrate.workers_label(1)] and cheap[-1].label == "+ batch 8"
    twin = result.before("+ torch.compile")
    assert twin.note == lad.TWIN and twin.label.startswith(kept[-1].label) and twin.batch_size == kept[-1].batch_size
    gain = result.migration_gain()
    assert gain.label == "+ torch.compile" and gain.source.startswith(f"measured over '{twin.label}'")
    assert result.baseline.group == result["torch.compile on the baseline"].group == cheap[-1].group
    ran = {"threads": torch.get_num_threads(), "device": "cpu"}
    assert result[gain.label].setup == twin.setup == kept[-1].setup and result.baseline.setup == {**base, **ran}
    assert result.skipped == ("pinned memory (no GPU)",)
    assert compiled is not None and migrate.estimate(1000, gain, 10).speedup is gain


def test_a_migration_rung_built_on_a_losing_rung_cannot_feed_the_cost_model() -> None:
    """The trap of a cumulative ladder: compile measured after a cheap rung that lost is credited for undoing it."""
    lost = lad.build_ladder([_rung("base", "no migration", 80.0, batch=32),
                                 _rung("workers", "no migration", 48.0, batch=32),
                                 _rung("batch 64", "no migration", 150.0, batch=64),
                                 _rung("compile", "migration", 98.0, batch=64)])
    with pytest.raises(ValueError, match="undoing"):
        lost.migration_gain()
    twin = replace(_rung("workers (eager, beside compile)", "no migration", 48.0, batch=32, group=2), note=lad.TWIN,
                   over="workers")
    kept = lad.build_ladder([_rung("base", "no migration", 80.0, batch=32),
                                 _rung("workers", "no migration", 48.0, batch=32),
                                 replace(_rung("compile", "migration", 40.0, batch=32, group=2), over=twin.label)],
                                extra=[replace(_rung("batch 64", "no migration", 150.0, batch=64), over="workers",
                                               note=lad.DROPPED), twin])
    gain = kept.migration_gain()
    assert gain.median == pytest.approx(48 / 40, rel=0.01) and twin.label in gain.source
    assert [r.label for r in kept.dropped] == ["batch 64"] and "not kept" in repr(kept)
    assert kept.kept.label == "workers"


def test_the_waterfall_draws_compile_at_its_gain_over_its_twin() -> None:
    """Issue 28: the waterfall drew compile over the rung before it (1.24x) while the page used the twin (1.30x)."""
    twin = replace(_rung("workers (eager, beside compile)", "no migration", 52.0, batch=32, group=2), note=lad.TWIN,
                   over="workers")
    last = replace(_rung("compile", "migration", 40.0, batch=32, group=2), over=twin.label)
    ladder = lad.build_ladder([_rung("base", "no migration", 80.0, batch=32),
                                   _rung("workers", "no migration", 48.0, batch=32), last], extra=[twin])
    (_, base), (_, workers), (_, compiled) = ladder.waterfall_steps()
    assert workers / compiled == pytest.approx(ladder.migration_gain().median)
    assert workers / compiled != pytest.approx(48 / 40)  # not the ratio over the rung measured in the other group
    with pytest.raises(ValueError, match="not another rung"):
        lad.build_ladder([_rung("base", "no migration", 1.0), replace(_rung("c", "migration", 1.0), over="x")])


def test_amp_agreement_passes_autocast_and_catches_a_whole_model_cast() -> None:
    torch = pytest.importorskip("torch")
    from course_utils import models, pipeline

    x, y = pipeline.SyntheticImages(8, size=32, classes=10, work=0).batch(range(8))
    batch = (torch.from_numpy(x), torch.from_numpy(y))
    right = migrate.amp_agreement(lambda: models.torch_cnn(classes=10), batch, torch.bfloat16)
    wrong = migrate.amp_agreement(lambda: models.torch_cnn(classes=10), batch, torch.bfloat16, master_weights=False)
    assert right["close"] and not wrong["close"] and wrong["update"] > torch_rungs.AMP_UPDATE_RTOL > right["update"]
