"""course_utils.precision.training: the learner's step run over batches, its records, seeds, unscale_ first."""

from __future__ import annotations

import math

import numpy as np
import pytest

from course_utils import calls
from course_utils import precision as P

torch = pytest.importorskip("torch")
F = torch.nn.functional
SIZES = (8, 16, 4)


def _data() -> tuple:
    g = torch.Generator().manual_seed(0)
    return torch.randn(256, 8, generator=g), torch.randint(0, 4, (256,), generator=g)


def step(model, opt, scaler, xb, yb, *, dtype=torch.float32):
    with torch.autocast("cpu", dtype=dtype, enabled=dtype != torch.float32):
        loss = F.cross_entropy(model(xb), yb)
    opt.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    return loss


def _run(steps: int = 12, *, dtype=torch.float32, scaler=None, seed: int = 0, **kw):
    from course_utils import models

    x, y = _data()
    model = models.torch_mlp(SIZES, seed=seed)
    scaler = scaler or torch.amp.GradScaler("cpu", enabled=False)
    return P.train(step, model, torch.optim.Adam(model.parameters(), lr=1e-2), scaler, x, y, steps=steps, batch=32,
                   seed=seed, dtype=dtype, **kw)


def test_train_records_every_step_of_the_learners_step() -> None:
    x, y = _data()
    run = _run(x_test=x, y_test=y, label="fp32")
    assert len(run.loss) == len(run.scale) == len(run.skipped) == len(run.grad_max) == 12
    assert run.scale == (1.0,) * 12 and not any(run.skipped) and all(g > 0 for g in run.grad_max)
    assert 0.0 <= run.accuracy <= 1.0 and run.label == "fp32"
    assert run.final_loss(5) == pytest.approx(np.mean(run.loss[-5:]))
    assert run.loss[-1] < run.loss[0]  # it trained


def test_fp16_scaler_skips_and_backs_off_from_a_huge_scale() -> None:
    run = _run(30, dtype=torch.float16, scaler=torch.amp.GradScaler("cpu", init_scale=2.0**30, growth_interval=100))
    assert run.skipped[0] and run.scale[1] < run.scale[0] == 2.0**30
    trace = P.scale_trace(run.scale, run.skipped, run.grad_max)
    assert trace.first_skipped and 1 <= trace.skipped < 30 and trace.start == 30


def test_the_same_seed_gives_the_same_run_and_threads_are_restored() -> None:
    before = torch.get_num_threads()
    assert _run(5, seed=3).loss == _run(5, seed=3).loss
    assert torch.get_num_threads() == before


def test_a_step_that_returns_no_loss_is_named() -> None:
    from course_utils import models

    x, y = _data()
    m = models.torch_mlp(SIZES)

    def no_loss(model, opt, scaler, xb, yb):
        return None

    with pytest.raises(TypeError, match="no_loss"):
        P.train(no_loss, m, torch.optim.SGD(m.parameters(), lr=0.1), torch.amp.GradScaler("cpu", enabled=False),
                x, y, steps=2, batch=8)


def test_a_step_that_never_returns_is_stopped_and_named() -> None:
    from course_utils import models

    x, y = _data()
    m = models.torch_mlp(SIZES)

    def endless(model, opt, scaler, xb, yb):
        while True:
            pass

    with pytest.raises(calls.LearnerTimeout, match="endless"):
        P.train(endless, m, torch.optim.SGD(m.parameters(), lr=0.1), torch.amp.GradScaler("cpu", enabled=False),
                x, y, steps=2, batch=8, timeout=0.3)


def test_seed_spread_table_and_gap() -> None:
    runs = {"fp32": [_run(25, seed=s) for s in (0, 1)],
            "bf16": [_run(25, dtype=torch.bfloat16, seed=s) for s in (0, 1)]}
    spread = P.SeedSpread(runs)
    assert spread.final_losses("fp32").shape == (2,) and spread.seeds() == 2
    assert spread.gap("fp32") == 0.0 and math.isfinite(spread.gap("bf16"))
    assert "range over seeds" in repr(spread) and "<table>" in spread._repr_html_()
    assert "2 seeds per run" in repr(spread)
    assert "one seed per run" in repr(P.SeedSpread({"fp32": [runs["fp32"][0]]}))


def test_unscale_norms_shows_what_clipping_would_see() -> None:
    from course_utils import models

    x, y = _data()
    norms = P.unscale_norms(models.torch_mlp(SIZES, seed=0), x, y, torch.amp.GradScaler("cpu", init_scale=2.0**10))
    assert norms["scale"] == 2.0**10
    assert norms["before unscale_"] / norms["fp32"] == pytest.approx(2.0**10, rel=0.02)
    assert norms["after unscale_"] == pytest.approx(norms["fp32"], rel=0.02)
