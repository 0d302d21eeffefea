"""course_utils.precision.fp8: round trips on real tensors, the amax history and delayed scaling, and the GPU
check that never imports torchao on a machine without fp8 units."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from course_utils import intervals
from course_utils import precision as P

torch = pytest.importorskip("torch")
F = torch.nn.functional
SIZES = (8, 16, 16, 4)


def _model_and_data():
    from course_utils import models

    g = torch.Generator().manual_seed(0)
    return models.torch_mlp(SIZES, seed=0), torch.randn(32, 8, generator=g), torch.randint(0, 4, (32,), generator=g)


def roundtrip(t, dtype):
    scale = torch.finfo(dtype).max / t.abs().max()
    return (t * scale).to(dtype).float() / scale


def test_layer_tensors_are_each_linears_output_and_gradient() -> None:
    model, x, y = _model_and_data()
    found = P.layer_tensors(model, x, y)
    assert [t.shape[1] for t in found["activations"]] == [16, 16, 4]
    assert [t.shape for t in found["gradients"]] == [t.shape for t in found["activations"]]
    assert all(p.grad is None for p in model.parameters()) and not any(m._forward_hooks for m in model.modules())


def test_cast_error_measures_error_flushes_and_nonfinite() -> None:
    t = [torch.tensor([1.0, 2.0, 1e-9, 0.0])]
    exact = P.fp8.cast_error(t, lambda a: a.clone())
    assert exact == P.fp8.CastError(0.0, 0.0, 0.0)
    zero = P.fp8.cast_error(t, torch.zeros_like)
    assert zero.error == pytest.approx(1.0) and zero.flushed == 1.0
    bad = P.fp8.cast_error(t, lambda a: a / 0)
    assert bad.nonfinite == 1.0
    e4 = P.fp8.cast_error(t, lambda a: roundtrip(a, torch.float8_e4m3fn))
    assert 0 < e4.error < 0.1 and e4.flushed == pytest.approx(1 / 3)  # 1e-9 is far below e4m3's scaled range


def test_cast_error_names_a_roundtrip_that_changes_the_shape() -> None:
    def flatten_all(a):
        return a.flatten()[:1]

    with pytest.raises(ValueError, match="flatten_all"):
        P.fp8.cast_error([torch.ones(2, 2)], flatten_all)


def test_cast_errors_orders_e4m3_and_e5m2_on_real_tensors() -> None:
    model, x, y = _model_and_data()
    table = P.cast_errors(P.layer_tensors(model, x, y), {"e4m3": lambda t: roundtrip(t, torch.float8_e4m3fn),
                                                         "e5m2": lambda t: roundtrip(t, torch.float8_e5m2)})
    assert table["activations"]["e4m3"].error < table["activations"]["e5m2"].error  # one more mantissa bit
    assert "nonzero -> 0" in repr(table) and "<table>" in table._repr_html_()


def test_amax_history_records_training_steps_only() -> None:
    model, x, y = _model_and_data()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with P.amax_history(model) as history:
        for _ in range(5):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
        with torch.no_grad():
            model(x)  # a forward without a graph is not a training step
    assert P.fp8.AmaxHistory is type(history)
    acts, grads = history.series("activations"), history.series("gradients")
    assert acts.shape == grads.shape == (5, 3) and np.all(acts > 0) and np.all(grads > 0)
    assert not any(m._forward_hooks for m in model.modules())
    assert len(P.amax_plot(history, layer=1).axes[0].lines) == 2
    with pytest.raises(ValueError, match="layer"):
        P.amax_plot(history, layer=3)
    with pytest.raises(ValueError, match="no step"):
        P.fp8.AmaxHistory().series("activations")
    with pytest.raises(ValueError, match="kind"):
        history.series("weights")


def test_delayed_scaling_saturates_where_the_amax_grows() -> None:
    growing = P.fp8.AmaxHistory([[float(2**i)] for i in range(10)], [[1.0] for _ in range(10)])
    up = P.delayed_scaling(growing, "activations", window=3)
    assert (up.checked, up.saturated, up.worst_overshoot) == (7, 7, 2.0)
    flat = P.delayed_scaling(growing, "gradients", window=3)
    assert flat.saturated == 0 and flat.unused_log2 == 0.0
    shrinking = P.fp8.AmaxHistory([[float(2**-i)] for i in range(10)], [[1.0] for _ in range(10)])
    down = P.delayed_scaling(shrinking, "activations", window=3)
    assert down.saturated == 0 and down.unused_log2 == pytest.approx(3.0)  # the max is 3 steps old: 3 powers unused
    with pytest.raises(ValueError, match="window"):
        P.delayed_scaling(growing, "activations", window=10)


def test_gpu_fp8_status_checks_the_device_plan_before_torchao(monkeypatch) -> None:
    from course_utils import devices

    status = P.gpu_fp8_status()
    if not torch.cuda.is_available():
        assert not status.ready and "no GPU" in status.why
    gib = 2**30
    t4 = devices.plan(devices.Device("gpu", "Tesla T4", 15 * gib, 1, 2, (7, 5)), host_memory=12 * gib)
    old = P.gpu_fp8_status(t4)
    assert not old.ready and "7.5" in old.why and "Tesla T4" in old.why
    h100 = devices.plan(devices.Device("gpu", "NVIDIA H100 80GB HBM3", 80 * gib, 1, 16, (9, 0)), host_memory=64 * gib)
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    missing = P.gpu_fp8_status(h100)
    assert not missing.ready and "torchao is not installed" in missing.why
    assert "torchao" not in sys.modules or torch.cuda.is_available()  # looked up, never imported here


def test_gpu_fp8_status_reads_the_simulated_device(monkeypatch) -> None:
    from course_utils import devices

    devices.current.cache_clear()
    monkeypatch.setenv(devices.SIMULATE, "T4")  # a Colab T4, rehearsed here: its plan has no fp8 units
    try:
        t4 = P.gpu_fp8_status()
    finally:
        devices.current.cache_clear()
    assert not t4.ready and "T4 is 7.5" in t4.why


def test_compare_training_trains_both_and_times_them() -> None:
    from course_utils import models

    x, y = torch.randn(64, 8), torch.randn(64, 4)
    pair = {"bf16": models.torch_mlp((8, 16, 4), seed=0), "fp8": models.torch_mlp((8, 16, 4), seed=0)}
    result = P.compare_training(pair, x, y, steps=5, rounds=2, min_time=0.01)
    assert set(result.final_loss) == {"bf16", "fp8"} and all(math.isfinite(v) for v in result.final_loss.values())
    assert isinstance(result.speed, intervals.Speedup) and result.speed.n == 2
    with pytest.raises(ValueError, match="models"):
        P.compare_training({"bf16": pair["bf16"]}, x, y)
