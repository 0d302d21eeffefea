"""course_utils.precision.training: the AMP loop's records, seeds, and unscale_ before clipping."""

from __future__ import annotations

import math

import numpy as np
import pytest

from course_utils import precision as P

torch = pytest.importorskip("torch")
SIZES = (8, 16, 4)


def _data() -> tuple:
    g = torch.Generator().manual_seed(0)
    return torch.randn(256, 8, generator=g), torch.randint(0, 4, (256,), generator=g)


def test_amp_train_records_every_step() -> None:
    x, y = _data()
    model, run = P.amp_train(SIZES, x, y, mode="fp32", steps=12, batch=32, x_test=x, y_test=y)
    assert len(run.loss) == len(run.scale) == len(run.skipped) == len(run.grad_max) == 12
    assert not run.scaler and run.scale == (1.0,) * 12 and not any(run.skipped)
    assert 0.0 <= run.accuracy <= 1.0 and run.label == "fp32"
    assert run.final_loss(5) == pytest.approx(np.mean(run.loss[-5:]))
    assert isinstance(model, torch.nn.Module)


def test_fp16_scaler_skips_and_backs_off_from_a_huge_scale() -> None:
    x, y = _data()
    _, run = P.amp_train(SIZES, x, y, mode="fp16", steps=6, batch=32, init_scale=2.0**40, growth_interval=100)
    assert run.scaler and run.skipped[0] and run.scale[1] < run.scale[0]
    assert run.label == "fp16 autocast + GradScaler"
    _, bare = P.amp_train(SIZES, x, y, mode="fp16", steps=3, batch=32, scaler=False)
    assert not bare.scaler and bare.label == "fp16 autocast (no scaler)"


def test_the_same_seed_gives_the_same_run() -> None:
    x, y = _data()
    a = P.amp_train(SIZES, x, y, steps=5, batch=32, seed=3)[1]
    b = P.amp_train(SIZES, x, y, steps=5, batch=32, seed=3)[1]
    assert a.loss == b.loss


def test_seed_spread_table_and_gap() -> None:
    x, y = _data()
    spread = P.seed_spread({"fp32": {"mode": "fp32"}, "bf16": {"mode": "bf16"}}, [0, 1], SIZES, x, y,
                           steps=25, batch=32, x_test=x, y_test=y)
    assert set(spread.runs) == {"fp32", "bf16"} and len(spread.runs["bf16"]) == 2
    assert spread.final_losses("fp32").shape == (2,)
    assert spread.gap("fp32") == 0.0 and math.isfinite(spread.gap("bf16"))
    assert "range over seeds" in repr(spread) and "<table>" in spread._repr_html_()
    assert "2 seeds per run" in repr(spread)
    one = P.seed_spread({"fp32": {"mode": "fp32"}}, [0], SIZES, x, y, steps=5, batch=32)
    assert "one seed per run" in repr(one) and "several" not in repr(one)


def test_unscale_norms_shows_what_clipping_would_see() -> None:
    x, y = _data()
    from course_utils import models

    norms = P.unscale_norms(models.torch_mlp(SIZES, seed=0), x, y, init_scale=2.0**10)
    assert norms["scale"] == 2.0**10
    assert norms["before unscale_"] / norms["fp32"] == pytest.approx(2.0**10, rel=0.02)
    assert norms["after unscale_"] == pytest.approx(norms["fp32"], rel=0.02)
