"""precision.training.step_medians: the notebook's step from a module, timed in one process and in fresh processes;
no speed is asserted."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from course_utils import findings, fresh, intervals, models  # noqa: E402
from course_utils import precision as P  # noqa: E402

SIZES = (8, 16, 4)


def test_the_fp32_step_is_a_plain_sgd_step() -> None:
    x, y = torch.randn(6, 8), torch.randint(0, 4, (6,))
    ours, plain = models.torch_mlp(SIZES, seed=1), models.torch_mlp(SIZES, seed=1)
    opt, plain_opt = (torch.optim.SGD(m.parameters(), lr=0.1) for m in (ours, plain))
    P.training.train_step(ours, opt, torch.amp.GradScaler("cpu", enabled=False), x, y, dtype=torch.float32)
    torch.nn.functional.cross_entropy(plain(x), y).backward()
    plain_opt.step()
    assert all(torch.equal(a, b) for a, b in zip(ours.parameters(), plain.parameters()))


def test_the_bf16_step_runs_its_matmuls_in_bf16_and_keeps_fp32_weights() -> None:
    model = models.torch_mlp(SIZES, seed=0)
    seen = []
    model[0].register_forward_hook(lambda _m, _i, out: seen.append(out.dtype))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    P.training.train_step(model, opt, torch.amp.GradScaler("cpu", enabled=False), torch.randn(4, 8),
                          torch.randint(0, 4, (4,)), dtype=torch.bfloat16)
    assert seen == [torch.bfloat16] and all(p.dtype == torch.float32 for p in model.parameters())


def test_step_medians_names_both_steps_as_the_notebook_does() -> None:
    found = P.step_medians(SIZES, 8, rounds=2, min_time=0.02, threads=1)
    assert set(found) == {P.FP32_STEP, "bfloat16 autocast step"} == {P.FP32_STEP, P.amp_step_label("bfloat16")}
    assert all(s > 0 for s in found.values())


@pytest.mark.slow  # seconds: outside make test-unit's fast lane, inside make test
def test_the_claim_is_scored_across_fresh_processes_with_the_in_process_figure_beside_it() -> None:
    found = fresh.replicate(P.step_medians, n=2, kwargs={"widths": list(SIZES), "batch": 8, "rounds": 2,
                                                         "min_time": 0.02, "threads": 1})
    assert found.target == "course_utils.precision.training:step_medians"
    assert found.setups[0]["torch"] == torch.__version__ and found.setups[0]["threads"] == 1
    assert found.setups[0]["device"] == "cpu"
    across = found.speedup(P.FP32_STEP, P.amp_step_label("bfloat16"))
    inside = intervals.Speedup(P.FP32_STEP, "bfloat16 autocast step", 1.3, 1.2, 1.4, 6, intervals.ROUNDS)
    v = P.findings.CLAIM.score(findings.within("step", across, *P.CLAIM_BAND), in_process=str(inside))
    assert "across 2 fresh processes" in str(v) and "over 6 paired rounds in this process" in v.sentence


@pytest.mark.parametrize(("kwargs", "argument"), [
    ({"widths": (8,)}, "widths"), ({"widths": "abc"}, "widths"), ({"widths": (8, 0)}, r"widths\[1\]"),
    ({"batch": 0}, "batch"), ({"dtype": "float32"}, "dtype"), ({"device": "tpu"}, "device"),
    ({"rounds": 1}, "rounds"), ({"min_time": 0}, "min_time"), ({"threads": 0}, "threads"), ({"seed": -1}, "seed"),
])
def test_bad_input_is_refused_by_name(kwargs, argument) -> None:
    args = {"widths": SIZES, "batch": 8, "rounds": 2, "min_time": 0.01} | kwargs
    with pytest.raises((TypeError, ValueError), match=rf"\b{argument}"):
        P.step_medians(**args)
    with pytest.raises(ValueError, match="dtype"):
        P.amp_step_label("float32")
