"""Bad input to course_utils.precision: each call raises TypeError or ValueError naming its argument, never a
wrong answer or a raw error from deep inside numpy, torch or matplotlib (issue 16)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from badinput import rejects

from course_utils import precision as P

NAN, INF = math.nan, math.inf
torch = pytest.importorskip("torch")
X, Y = torch.randn(16, 8), torch.randint(0, 4, (16,))
SIZES = (8, 16, 4)
W = P.block_weights(8, 2)


def _model() -> object:
    from course_utils import models

    return models.torch_mlp(SIZES, seed=0)


BAD_CALLS = [
    # formats
    (lambda: P.float_format("float12"), "name"),
    (lambda: P.float_format(None), "name"),
    (lambda: P.float_format(16), "name"),
    (lambda: P.numpy_dtype("half"), "name"),
    (lambda: P.format_table([]), "names"),
    (lambda: P.format_table(["fp16"]), "names"),
    (lambda: P.round_to(1.0, "half"), "name"),
    (lambda: P.round_to(None, "float16"), "x"),
    (lambda: P.round_to("1.0", "float16"), "x"),
    (lambda: P.relative_rounding_error([1.0], "float16", samples=0), "samples"),
    (lambda: P.relative_rounding_error([1.0], "float16", samples=2.5), "samples"),
    (lambda: P.relative_rounding_error([0.0], "float16"), "magnitudes"),
    (lambda: P.relative_rounding_error([NAN], "float16"), "magnitudes"),
    (lambda: P.relative_rounding_error([], "float16"), "magnitudes"),
    (lambda: P.relative_rounding_error([-1.0], "float16"), "magnitudes"),
    (lambda: P.accumulation_error([]), "lengths"),
    (lambda: P.accumulation_error([0, 10]), "lengths"),
    (lambda: P.accumulation_error([10**9]), "lengths"),
    (lambda: P.accumulation_error([10], seed=-1), "seed"),
    (lambda: P.kahan_sum_bf16(None), "values"),
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
    (lambda: P.torch_activation_grads(_model(), X, Y, dtype=torch.int8), "dtype"),
    (lambda: P.torch_activation_grads(torch.nn.ReLU(), X, Y), "model"),
    (lambda: P.torch_fp16_overflows(_model(), X, Y, []), "exponents"),
    (lambda: P.torch_fp16_overflows(_model(), X, Y, [1.5]), "exponents"),
    (lambda: P.torch_weight_grads(None, X, Y), "model"),
    (lambda: P.torch_weight_grads(torch.nn.ReLU(), X, Y), "model"),
    (lambda: P.torch_weight_grads(_model(), X, Y.numpy()), "y"),
    (lambda: P.torch_weight_grads(_model(), X, Y, multiplier=0.0), "multiplier"),
    (lambda: P.torch_weight_grads(_model(), X, Y, dtype=torch.int8), "dtype"),
    (lambda: P.adam_eps_share([0.0, 0.0]), "grads"),
    (lambda: P.adam_eps_share([1.0], eps=NAN), "eps"),
    (lambda: P.adam_eps_share(None), "grads"),
    # training
    (lambda: P.amp_train(SIZES, X, Y, mode="fp8"), "mode"),
    (lambda: P.amp_train(SIZES, X, Y, steps=0), "steps"),
    (lambda: P.amp_train(SIZES, X, Y, steps=INF), "steps"),
    (lambda: P.amp_train(SIZES, X, Y, batch=100), "batch"),
    (lambda: P.amp_train(SIZES, X, Y, batch=8, lr=NAN), "lr"),
    (lambda: P.amp_train(SIZES, X, Y, batch=8, lr=-1e-3), "lr"),
    (lambda: P.amp_train(SIZES, X, Y, batch=8, clip=0.0), "clip"),
    (lambda: P.amp_train(SIZES, X, Y, batch=8, scaler="yes"), "scaler"),
    (lambda: P.amp_train(SIZES, X, Y, batch=8, loss_multiplier=0.0), "loss_multiplier"),
    (lambda: P.amp_train(SIZES, X.numpy(), Y), "x"),
    (lambda: P.seed_spread({}, [0], SIZES, X, Y), "configs"),
    (lambda: P.seed_spread({"a": {}}, [], SIZES, X, Y), "seeds"),
    (lambda: P.seed_spread({"a": "fp32"}, [0], SIZES, X, Y), "configs"),
    (lambda: P.unscale_norms(_model(), X, Y, init_scale=0), "init_scale"),
    # policies
    (lambda: P.Policy(compute_dtype="int8"), "compute_dtype"),
    (lambda: P.Policy(param_dtype=None), "param_dtype"),
    (lambda: P.Policy().wrap(None), "apply"),
    (lambda: P.torch_dtypes(None, X, Y, torch.bfloat16), "model"),
    (lambda: P.torch_dtypes(_model(), X, Y, "bf16"), "dtype"),
    (lambda: P.keras_dtypes("mixed_float8", X.numpy(), Y.numpy()), "policy"),
    (lambda: P.keras_compile_wraps_optimizer(None), "policy"),
    (lambda: P.dtype_summary(None), "report"),
    # memory
    (lambda: P.training_memory(10, "fp8"), "scheme"),
    (lambda: P.training_memory(-1, "fp32 + Adam"), "n_params"),
    (lambda: P.training_memory(1.5, "fp32 + Adam"), "n_params"),
    # (the peak, saved-tensor and held-state measurements are core: tests/test_memory.py)
    # remat
    (lambda: P.block_weights(0, 2), "width"),
    (lambda: P.block_weights(8, -1), "blocks"),
    (lambda: P.block_weights(8.5, 2), "width"),
    (lambda: P.torch_remat([], 8), "weights"),
    (lambda: P.torch_remat(W, 0), "batch"),
    (lambda: P.torch_remat(W, 8, min_time=INF), "min_time"),
    (lambda: P.jax_remat(W, 8, prevent_cse="yes"), "prevent_cse"),
    (lambda: P.torch_grouped_saved(W, 8, 0), "group"),
    (lambda: P.torch_grouped_saved(W, 8, 5), "group"),
    (lambda: P.predicted_peak_with_remat(None, 2), "result"),
    (lambda: P.predicted_peak_with_remat(P.Remat("torch", (1, 1)), 2), "result"),
    # speed
    (lambda: P.matmul_times(0), "n"),
    (lambda: P.matmul_times(16, []), "frameworks"),
    (lambda: P.matmul_times(16, ["mxnet"]), "frameworks"),
    (lambda: P.matmul_times(16, min_time=NAN), "min_time"),
    (lambda: P.copy_times(10), "n_bytes_fp32"),
    (lambda: P.copy_times(2**20, rounds=0), "rounds"),
    (lambda: P.stream_times(2**20, ops=["scale"]), "ops"),
    (lambda: P.stream_times(2**20, ops=[]), "ops"),
    (lambda: P.stream_point("add fp32", 1.0, 2**20), "name"),
    (lambda: P.stream_point("copy fp32", -1.0, 2**20), "measurement"),
    (lambda: P.bandwidth_ratio(1.0, 2.0), "fp32"),
    # speed_text
    (lambda: P.bf16_units("avx512_bf16"), "flags"),
    (lambda: P.fp32_share_text(-1.0, 8, roof_flops=1.0, roof_label="r", peak_flops=None), "fp32_flops"),
    (lambda: P.fp32_share_text(1.0, 8, roof_flops=NAN, roof_label="r", peak_flops=None), "roof_flops"),
    (lambda: P.bf16_units_text(("avx512_bf16",), (0.0, 0.0, 0.0), fp32_flops=1.0, bf16_flops=1.0, peak_flops=None),
     "speed"),
    (lambda: P.step_outcome((1.0, 0.9, 1.1), (0.0, 1.0, 1.0)), "matmul"),
    (lambda: P.step_reason("diluted", (1.0, 0.9, 1.1), (2.0, 1.9, 2.1), 8), "outcome"),
    (lambda: P.mlp_step_flops((8,), 4), "sizes"),
    (lambda: P.mlp_step_flops((8, 4), 0), "batch"),
    (lambda: P.matmul_shares(1.0, {"fp32": 1.0}, {"fp32": 1.0, "bf16": 1.0}), "flops"),
    (lambda: P.claim_outcome(2.0, 1.0), "quartiles"),
    (lambda: P.claim_text("maybe", 1.0, 1.0, 1.0), "outcome"),
    (lambda: P.bandwidth_text({}, {}, array_bytes=8, llc=None), "bw"),
    (lambda: P.roof_share_text({"a": 1.0}, 0.0, None), "roof"),
    (lambda: P.ratio_band(1.0, 2.0), "base"),
    (lambda: P.temp_change_text((0, 1), 8, 8), "temp"),
    (lambda: P.torch_live_peak(None), "fn"),
    (lambda: P.predicted_peak_with_remat(P.Remat("torch", (1, 1), (5, 5)), 2, live="yes"), "live"),
    (lambda: P.predicted_peak_with_remat(P.Remat("torch", (1, 1), (5, 5)), 2, live=True), "result"),
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
    (lambda: P.before_after_plot({}, ylabel="y", title="t"), "rows"),
    (lambda: P.loss_curves_plot({}), "runs"),
    (lambda: P.loss_curves_plot({"a": []}), "runs"),
]


@pytest.mark.parametrize(("call", "argument"), BAD_CALLS, ids=[f"{i:02d}-{a}" for i, (_, a) in enumerate(BAD_CALLS)])
def test_bad_call_is_refused_naming_the_argument(call, argument) -> None:
    if argument == "policy":
        pytest.importorskip("keras")
    if argument == "prevent_cse" or (argument == "fn" and "jax" in repr(call.__code__.co_names)):
        pytest.importorskip("jax")
    rejects(call, argument)


def test_nan_magnitudes_give_no_answer() -> None:
    with pytest.raises(ValueError):
        P.relative_rounding_error(np.array([1.0, INF]), "float16")
