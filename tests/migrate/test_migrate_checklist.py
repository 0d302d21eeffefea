"""course_utils.migrate.checklist: each check can fail; the rollback check forces a real compile failure, rolls back
with torch.compiler.set_stance("force_eager") and compares the fallback with eager and with the compiled path."""

from __future__ import annotations

import pytest
from migrate_gains import measured_gain

from course_utils import migrate
from course_utils.migrate import checklist, torch_rungs


def _mlp(branch: bool = False):
    torch = pytest.importorskip("torch")
    from course_utils import models

    class Branchy(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = models.torch_mlp((8, 16, 3))

        def forward(self, x):
            out = self.inner(x)
            return out * 2 if out.mean() > 0 else out

    torch.manual_seed(0)
    return Branchy() if branch else models.torch_mlp((8, 16, 3))


def _compile(model):
    torch = pytest.importorskip("torch")
    return torch.compile(model, dynamic=False)


def _drifting(model):
    """A 'compiler' whose model gives other losses than eager's: the rollback must notice the difference."""
    torch = pytest.importorskip("torch")

    class Drift(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = model

        def forward(self, x):
            return self.inner(x) * 1.5

    return Drift()


def _batch():
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(0)
    return torch.randn(16, 8, generator=g), torch.randint(0, 3, (16,), generator=g)


@pytest.mark.slow
def test_fall_back_survives_a_failing_compiler_with_the_one_line_rollback() -> None:
    make = torch_rungs.step_factory(_mlp)
    losses, error = checklist._fall_back(make, _batch(), 3)
    assert error is not None and "simulated compiler failure" in str(error)
    eager = make(lambda m: m)
    assert losses == [float(eager(_batch())) for _ in range(3)]


@pytest.mark.slow
def test_the_rollback_fails_when_the_compiled_path_does_not_match_it() -> None:
    batch = _batch()
    drifted = migrate.run_checklist(torch_rungs.step_factory(_mlp), batch, compiler=_drifting, steps=2)
    rollback = drifted["rollback: forced compile failure falls back to eager"]
    assert rollback.passed is False and "from the compiled path's" in rollback.evidence


@pytest.mark.slow
def test_checks_fail_when_their_thresholds_are_missed() -> None:
    make = torch_rungs.step_factory(_mlp)
    batch = _batch()
    gain = measured_gain(1.02, 0.97, 1.05)
    result = migrate.run_checklist(make, batch, compiler=_compile, gain=gain, min_speedup=1.05,
                                   forward=(_mlp(), (batch[0],)),
                                   compile_s=30.0, compile_budget_s=10.0)
    assert result["MVP: whole training step, speed and equality"].passed is False
    assert result["monitoring: compile time"].passed is False
    assert result["rollback: forced compile failure falls back to eager"].passed is True
    assert result["operator compatibility"].passed is True
    assert "MVP: whole training step, speed and equality" in result.failed and not result.passed
    ok = migrate.run_checklist(make, batch, compiler=_compile, gain=measured_gain(1.3, 1.2, 1.4), min_speedup=1.05,
                               compile_s=3.0, compile_budget_s=10.0)
    assert ok.passed and "PASS" in repr(ok) and "<table>" in ok._repr_html_()


@pytest.mark.slow
def test_data_dependent_branch_fails_compatibility_and_control_flow() -> None:
    batch = _batch()
    result = migrate.run_checklist(torch_rungs.step_factory(lambda: _mlp(True)), batch, compiler=_compile,
                                   forward=(_mlp(True), (batch[0],)))
    assert result["operator compatibility"].passed is False
    assert result["no data-dependent Python control flow"].passed is False
    assert result["monitoring: compile time"].passed is None


@pytest.mark.slow
def test_the_mvp_evidence_says_which_half_failed() -> None:
    make = torch_rungs.step_factory(_mlp)
    slow = migrate.run_checklist(make, _batch(), compiler=_compile, gain=measured_gain(1.02, 0.97, 1.05),
                                 min_speedup=1.05)
    evidence = slow["MVP: whole training step, speed and equality"].evidence
    assert "speed FAILED" in evidence and "equality ok" in evidence and "0.970x <= the 1.05x bar" in evidence
    assert slow.failed == ["MVP: whole training step, speed and equality"]


def test_the_mvp_low_end_is_the_one_its_interval_prints() -> None:
    """07 printed '95% interval 1.38x to 1.58x' and then 'its interval's low end 1.39x': the bounds are rounded
    outward, so the sentence reads the printed bound, not the raw one."""
    assert measured_gain(1.48, 1.3851, 1.58).low_text() == "1.38x"
    gain = measured_gain(1.48, 1.3851, 1.58)
    evidence = checklist._mvp(gain, 1.08, [1.0, 0.9], [1.0, 0.9], None, 1e-4).evidence
    low = gain.low_text()
    assert f"interval {low} to" in evidence and f"low end {low} > the 1.08x bar" in evidence, evidence
