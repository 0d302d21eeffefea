"""Bad input to course_utils.precision: each call raises TypeError or ValueError naming its argument, never a
wrong answer or a raw error from deep inside numpy, torch or matplotlib (issue 16)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from badinput import rejects

from course_utils import intervals
from course_utils import precision as P

NAN, INF = math.nan, math.inf
torch = pytest.importorskip("torch")
X, Y = torch.randn(16, 8), torch.randint(0, 4, (16,))
SIZES = (8, 16, 4)
W = P.block_weights(8, 2)


def _model() -> object:
    from course_utils import models

    return models.torch_mlp(SIZES, seed=0)


def _opt() -> object:
    return torch.optim.SGD(_model().parameters(), lr=0.1)


def _step(model, opt, scaler, xb, yb):
    return torch.nn.functional.cross_entropy(model(xb), yb)


OFF = torch.amp.GradScaler("cpu", enabled=False)
SP = intervals.Speedup("a", "b", 1.5, 1.2, 1.8, 6, "rounds")


BAD_CALLS = [
    # formats
    (lambda: P.formats.float_format("float12"), "name"),
    (lambda: P.formats.float_format(None), "name"),
    (lambda: P.formats.float_format(16), "name"),
    (lambda: P.formats.numpy_dtype("half"), "name"),
    (lambda: P.format_table([]), "names"),
    (lambda: P.format_table(["fp16"]), "names"),
    (lambda: P.round_to(1.0, "half"), "name"),
    (lambda: P.round_to(None, "float16"), "x"),
    (lambda: P.round_to("1.0", "float16"), "x"),
    (lambda: P.formats.relative_rounding_error([1.0], "float16", samples=0), "samples"),
    (lambda: P.formats.relative_rounding_error([1.0], "float16", samples=2.5), "samples"),
    (lambda: P.formats.relative_rounding_error([0.0], "float16"), "magnitudes"),
    (lambda: P.formats.relative_rounding_error([NAN], "float16"), "magnitudes"),
    (lambda: P.formats.relative_rounding_error([], "float16"), "magnitudes"),
    (lambda: P.formats.relative_rounding_error([-1.0], "float16"), "magnitudes"),
    (lambda: P.accumulation_error([]), "lengths"),
    (lambda: P.accumulation_error([0, 10]), "lengths"),
    (lambda: P.accumulation_error([10**9]), "lengths"),
    (lambda: P.accumulation_error([10], seed=-1), "seed"),
    # scaling
    (lambda: P.underflow_stats([1.0, 2.0], [1.0]), "reference"),
    (lambda: P.underflow_stats([], []), "reference"),
    (lambda: P.underflow_stats(None, [1.0]), "reference"),
    (lambda: P.simulate_cast([1.0], "float16", scale=0), "scale"),
    (lambda: P.simulate_cast([1.0], "float16", scale=NAN), "scale"),
    (lambda: P.simulate_cast([1.0], "float99"), "name"),
    (lambda: P.overflow_exponent([0.0, 0.0]), "values"),
    (lambda: P.torch_activation_grads(None, X, Y), "model"),
    (lambda: P.torch_activation_grads(_model(), X.numpy(), Y), "x"),
    (lambda: P.torch_activation_grads(_model(), X, Y, scale=-1.0), "scale"),
    (lambda: P.torch_activation_grads(torch.nn.ReLU(), X, Y), "model"),
    (lambda: P.torch_fp16_overflows(_model(), X, Y, []), "exponents"),
    (lambda: P.torch_fp16_overflows(_model(), X, Y, [1.5]), "exponents"),
    (lambda: P.torch_weight_grads(None, X, Y), "model"),
    (lambda: P.torch_weight_grads(torch.nn.ReLU(), X, Y), "model"),
    (lambda: P.torch_weight_grads(_model(), X, Y.numpy()), "y"),
    (lambda: P.torch_weight_grads(_model(), X, Y, multiplier=0.0), "multiplier"),
    (lambda: P.adam_eps_share([0.0, 0.0]), "grads"),
    (lambda: P.adam_eps_share([1.0], eps=NAN), "eps"),
    (lambda: P.adam_eps_share(None), "grads"),
    # training
    (lambda: P.train(None, _model(), _opt(), OFF, X, Y, steps=2, batch=4), "step"),
    (lambda: P.train(_step, None, _opt(), OFF, X, Y, steps=2, batch=4), "model"),
    (lambda: P.train(_step, _model(), "adam", OFF, X, Y, steps=2, batch=4), "opt"),
    (lambda: P.train(_step, _model(), _opt(), None, X, Y, steps=2, batch=4), "scaler"),
    (lambda: P.train(_step, _model(), _opt(), OFF, X.numpy(), Y, steps=2, batch=4), "x"),
    (lambda: P.train(_step, _model(), _opt(), OFF, X, Y[:3], steps=2, batch=4), "y and x"),
    (lambda: P.train(_step, _model(), _opt(), OFF, X, Y, steps=0, batch=4), "steps"),
    (lambda: P.train(_step, _model(), _opt(), OFF, X, Y, steps=INF, batch=4), "steps"),
    (lambda: P.train(_step, _model(), _opt(), OFF, X, Y, steps=10**9, batch=4), "steps"),
    (lambda: P.train(_step, _model(), _opt(), OFF, X, Y, steps=2, batch=100), "batch"),
    (lambda: P.train(_step, _model(), _opt(), OFF, X, Y, steps=2, batch=4, seed=-1), "seed"),
    (lambda: P.train(_step, _model(), _opt(), OFF, X, Y, steps=2, batch=4, threads=0), "threads"),
    (lambda: P.train(_step, _model(), _opt(), OFF, X, Y, steps=2, batch=4, timeout=NAN), "timeout"),
    (lambda: P.train(_step, _model(), _opt(), OFF, X, Y, steps=2, batch=4, label=""), "label"),
    (lambda: P.SeedSpread({}), "runs"),
    (lambda: P.SeedSpread({"a": []}), "runs"),
    (lambda: P.SeedSpread({"a": ["run"]}), "runs"),
    (lambda: P.unscale_norms(_model(), X, Y, None), "scaler"),
    (lambda: P.unscale_norms(_model(), X, Y, OFF), "scaler"),
    (lambda: P.scale_trace("abc", [False], [1.0]), "scales"),
    (lambda: P.scale_trace([1.0], [False], [1.0], name="fp12"), "name"),
    # policies
    (lambda: P.watch_dtypes(None).__enter__(), "model"),
    (lambda: P.op_dtypes({}), "outputs"),
    (lambda: P.op_dtypes({"a": 1.0}), "outputs"),
    (lambda: P.op_dtypes(["a"]), "outputs"),
    (lambda: P.keras_dtypes(None, X.numpy(), Y.numpy()), "model"),
    (lambda: P.jax_dtypes(None, {}, X, Y), "apply"),
    (lambda: P.dtype_summary(None), "report"),
    (lambda: P.dtype_summary({"weights": set()}), "report"),
    # memory
    (lambda: P.training_memory(10, "fp8"), "scheme"),
    (lambda: P.training_memory(-1, "fp32 + Adam"), "n_params"),
    (lambda: P.training_memory(1.5, "fp32 + Adam"), "n_params"),
    # (the peak, saved-tensor and held-state measurements are core: tests/test_memory.py)
    # remat
    (lambda: P.block_weights(0, 2), "width"),
    (lambda: P.block_weights(8, -1), "blocks"),
    (lambda: P.block_weights(8.5, 2), "width"),
    (lambda: P.torch_remat(None, [X]), "loss"),
    (lambda: P.torch_remat(print, []), "params"),
    (lambda: P.torch_remat(print, "abc"), "params"),
    (lambda: P.torch_remat(print, [1.0]), "params"),
    (lambda: P.torch_remat(print, [X], rounds=1), "rounds"),
    (lambda: P.torch_remat(print, [X], min_time=INF), "min_time"),
    (lambda: P.jax_remat(None, [], X), "loss"),
    (lambda: P.jax_remat(print, [], X, rounds=0), "rounds"),
    (lambda: P.torch_grouped_saved(W, 8, 0), "group"),
    (lambda: P.predicted_peak_with_remat(None, 2), "result"),
    (lambda: P.predicted_peak_with_remat(P.remat.Remat("torch", (1, 1)), 2), "result"),
    (lambda: P.remat.torch_live_peak(None), "fn"),
    (lambda: P.predicted_peak_with_remat(P.remat.Remat("torch", (1, 1), (5, 5)), 2, live="yes"), "live"),
    (lambda: P.predicted_peak_with_remat(P.remat.Remat("torch", (1, 1), (5, 5)), 2, live=True), "result"),
    # speed
    (lambda: P.bf16_bound(("avx2",), "tpu"), "device_type"),
    (lambda: P.matmul_check(1.5, P.bf16_bound(("avx2",))), "speed"),
    (lambda: P.matmul_check(SP, None), "bound"),
    (lambda: P.step_checks(SP, (2.0, 1.9, 2.1), P.bf16_bound(("avx2",))), "matmul"),
    (lambda: P.step_checks(SP, SP, "avx2"), "bound"),
    (lambda: P.stream_point("add fp32", 1.0, 2**20), "name"),
    (lambda: P.stream_point("copy fp32", -1.0, 2**20), "seconds"),
    (lambda: P.stream_point("copy fp32", NAN, 2**20), "seconds"),
    (lambda: P.stream_point("copy fp32", 1.0, 10), "n_bytes_fp32"),
    (lambda: P.mlp_step_flops((8,), 4), "sizes"),
    (lambda: P.mlp_step_flops("84", 4), "sizes"),
    (lambda: P.mlp_step_flops((8, 4), 0), "batch"),
    (lambda: P.mlp_step_flops((8, 4), np.int64(10**9)), "batch"),
    (lambda: P.matmul_shares(NAN, {"fp32": 1.0, "bf16": 1.0}, {"fp32": 1.0, "bf16": 1.0}), "step_flops"),
    # library
    (lambda: P.speed.read_verbose(None), "text"),
    (lambda: P.speed.read_verbose("garbage"), "text"),
    (lambda: P.cpu_vendor(5), "cpuinfo"),
    (lambda: P.library_verbose(n=0), "n"),
    (lambda: P.library_verbose(n=10**6), "n"),
    (lambda: P.library_verbose(timeout=0), "timeout"),
    # fp8
    (lambda: P.layer_tensors(None, X, Y), "model"),
    (lambda: P.layer_tensors(torch.nn.ReLU(), X, Y), "model"),
    (lambda: P.fp8.cast_error([], print), "tensors"),
    (lambda: P.fp8.cast_error("ab", print), "tensors"),
    (lambda: P.fp8.cast_error([X], None), "roundtrip"),
    (lambda: P.fp8.cast_error([1.0], print), "tensors"),
    (lambda: P.cast_errors({}, {"a": print}), "tensors"),
    (lambda: P.cast_errors({"a": [X]}, {}), "roundtrips"),
    (lambda: P.amax_history(None).__enter__(), "model"),
    (lambda: P.delayed_scaling(None, "activations"), "history"),
    (lambda: P.delayed_scaling(P.fp8.AmaxHistory([[1.0]] * 4, [[1.0]] * 4), "weights"), "kind"),
    (lambda: P.delayed_scaling(P.fp8.AmaxHistory([[1.0]] * 4, [[1.0]] * 4), "activations", window=0), "window"),
    (lambda: P.compare_training({"bf16": _model(), "fp8": None}, X, Y), "models"),
    (lambda: P.compare_training({"bf16": _model(), "fp8": _model()}, X, Y, steps=0), "steps"),
    (lambda: P.block_weights(8192, 8), "width and blocks"),
    (lambda: P.tf_recompute_same("abc"), "weights"),
    (lambda: P.tf_recompute_same([1.0, 2.0]), "weights"),
    (lambda: P.torch_grouped_saved([(1, 2)], 8, 1), "weights"),
    (lambda: P.formats.relative_rounding_error([1.0], "float16", samples=10**9), "samples"),
    (lambda: P.loss_curves_plot({"a": [1]}, window=10**12), "window"),
    # plots
    (lambda: P.bit_layout_plot([]), "names"),
    (lambda: P.bit_layout_plot(["fp64"]), "names"),
    (lambda: P.rounding_error_plot(low=0), "low"),
    (lambda: P.rounding_error_plot(low=1.0, high=0.5), "high"),
    (lambda: P.gradient_histogram_plot([0.0, 0.0]), "values"),
    (lambda: P.gradient_histogram_plot([1e-3], scale=-2), "scale"),
    (lambda: P.scale_trace_plot([], []), "scales"),
    (lambda: P.scale_trace_plot([1.0, 2.0], [False]), "skipped"),
    (lambda: P.accumulation_plot([], {"a": []}), "lengths"),
    (lambda: P.throughput_plot({}), "measured"),
    (lambda: P.memory_stack_plot({}), "breakdowns"),
    (lambda: P.lines_plot([], {"a": []}, xlabel="x", ylabel="y", title="t"), "x"),
    (lambda: P.loss_curves_plot({}), "runs"),
    (lambda: P.loss_curves_plot({"a": []}), "runs"),
]


@pytest.mark.parametrize(("call", "argument"), BAD_CALLS, ids=[f"{i:02d}-{a}" for i, (_, a) in enumerate(BAD_CALLS)])
def test_bad_call_is_refused_naming_the_argument(call, argument) -> None:
    if argument == "model" and "keras" in repr(call.__code__.co_names):
        pytest.importorskip("keras")
    rejects(call, argument)


def test_nan_magnitudes_give_no_answer() -> None:
    with pytest.raises(ValueError):
        P.formats.relative_rounding_error(np.array([1.0, INF]), "float16")
