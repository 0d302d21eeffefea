"""course_utils.distributed.breakdown: the workers' timings as Measurements with rounds, and a step
taken apart from them."""

from __future__ import annotations

import pytest

from course_utils import distributed as dist
from course_utils import timing


def _record(**variants: list[float]) -> dict:
    """A worker record whose variants each hold per-round medians equal to their times."""
    return {"kind": "t", **variants, "rounds": dict(variants)}


def test_measurements_keep_the_rounds_for_an_interval() -> None:
    found = dist.measurements(_record(ddp=[2e-3, 2.2e-3, 2.1e-3], compute=[1e-3, 1.1e-3, 1e-3]))
    assert set(found) == {"ddp", "compute"} and found["ddp"].rounds == (2e-3, 2.2e-3, 2.1e-3)
    with pytest.raises(ValueError, match="rounds"):
        dist.measurements({"kind": "x", "ddp": [1.0]})
    with pytest.raises(ValueError, match="list of seconds"):
        dist.measurements({"kind": "x", "ddp": "fast", "rounds": {"ddp": [1.0]}})


def test_summed_adds_round_by_round() -> None:
    a = timing.Measurement("a", (1.0, 2.0), rounds=(1.0, 2.0))
    b = timing.Measurement("b", (0.5, 0.5), rounds=(0.5, 0.25))
    total = dist.summed("a + b", a, b)
    assert total.rounds == (1.5, 2.25) and total.times == (1.5, 2.25)
    with pytest.raises(ValueError, match="rounds"):
        dist.summed("x", a, timing.Measurement("c", (1.0,), rounds=(1.0,)))


def _timing(scale: dict[str, float]) -> dict[str, timing.Measurement]:
    base = [1.0, 1.1, 0.9, 1.05]
    return {k: timing.Measurement(k, tuple(v * b * 1e-3 for b in base), rounds=tuple(v * b * 1e-3 for b in base))
            for k, v in scale.items()}


def test_chain_finds_the_link_that_adds_time() -> None:
    parts = _timing({"single": 1.0, "single_half": 0.9, "solo_ddp": 0.9, "compute": 1.8, "ddp": 3.0})
    links = dist.chain(parts)
    assert list(links) == [what for _, what in dist.breakdown.CHAIN[1:]]
    partner = links["the partner rank computing beside it (no_sync)"]
    assert partner.slower and partner.ratio == pytest.approx(0.5)  # twice the time: the row before over this one
    assert links["DDP's bookkeeping, no partner (no_sync)"].outcome == "within the noise"
    table = dist.chain_table({"tiny": parts}, {"tiny": links})
    factor = "tiny: x the step above, geometric mean of per-round ratios (95% interval)"
    assert table.column(factor)[3].startswith("2.00x")
    with pytest.raises(ValueError, match="lacks"):
        dist.chain({"single": parts["single"]})


def test_accumulation_saving_prices_the_removed_all_reduces() -> None:
    record = _record(every=[10e-3, 11e-3, 10.5e-3], no_sync=[4e-3, 4.5e-3, 4.2e-3], local=[2e-3, 2e-3, 2e-3],
                     allreduces=[1.5e-3, 1.6e-3, 1.5e-3])
    record.update(k=4, inside_allreduce=[1.8e-3, 2e-3, 1.9e-3])
    found = dist.accumulation_saving(record)
    assert found["saved"] == pytest.approx(6.3e-3) and found["back_to_back"] == pytest.approx(1.5e-3)
    assert found["per_sync"] == pytest.approx((10.5e-3 - 2e-3) / 4) and found["inside"] == pytest.approx(1.9e-3)
    assert found["one"] == pytest.approx(0.5e-3)
    assert "back to back" in repr(found["table"])
    with pytest.raises(ValueError, match="inside_allreduce"):
        dist.accumulation_saving({**record, "inside_allreduce": []})
    with pytest.raises(ValueError, match="k"):
        dist.accumulation_saving({**record, "k": 1})


def test_chain_table_names_the_estimate_it_prints_beside_the_medians() -> None:
    """Rounds whose medians' ratio (2.0) differs from the geometric mean of per-round ratios: the table prints the
    latter and its header and note say so (issue 36 rule 1)."""
    rounds = {"single": (1.0, 1.0, 4.0), "single_half": (2.0, 0.5, 2.0), "solo_ddp": (2.0, 0.5, 2.0),
              "compute": (2.0, 0.5, 2.0), "ddp": (2.0, 0.5, 2.0)}
    parts = {k: timing.Measurement(k, r, rounds=r) for k, r in rounds.items()}
    links = dist.chain(parts)
    table = dist.chain_table({"m": parts}, {"m": links})
    printed = table.rows[1][2]  # halving the batch: x the step above
    first = next(iter(links.values()))
    assert printed.startswith(f"{1 / first.ratio:.2f}x")
    medians = parts["single_half"].median / parts["single"].median
    assert f"{medians:.2f}x" != printed.split()[0]  # the medians' ratio is another number ...
    assert "geometric mean of per-round ratios" in table.header[2]  # ... so the column names what it prints
    assert "3 paired rounds" in table.note and "not equal the ratio of the printed medians" in table.note.replace(
        "need not", "not")
