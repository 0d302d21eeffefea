"""course_utils.precision.story: every branch of every paragraph notebook 03 tells, each under 120 words, and each
reading the verdict it is given (held, failed, not tested) rather than deciding again."""

from __future__ import annotations

import pytest

from course_utils import display, intervals, machine, roofline, timing
from course_utils import precision as P
from course_utils.precision import story

HELD = display.Verdict("held", "numbers")
FAILED = display.Verdict("failed", "numbers", "why")
NOT_TESTED = display.Verdict("not tested", "", "no device")
LONG_PATH = ("Intel(R) Advanced Vector Extensions 512 (Intel(R) AVX-512) with support for INT8, BF16, FP16 (limited) "
             "instructions, and Intel(R) Advanced Matrix Extensions (Intel(R) AMX) with INT8 and BF16")


def sp(ratio: float, low: float, high: float) -> intervals.Speedup:
    return intervals.Speedup("a", "b", ratio, low, high, 6, "rounds")


def short(prose: display.Prose | None) -> str:
    assert isinstance(prose, display.Prose)
    assert prose.longest_paragraph <= display.MAX_PARAGRAPH_WORDS, prose.paragraphs
    return prose.text


def _figures() -> machine.MachineFigures:
    m = roofline.Machine("torch", "cpu", {"triad": 50e9}, {"matmul fp32 n=1024": 300e9}, {}, 2**26)
    return machine.MachineFigures("k", {"torch": m}, 1e-10, {"torch": 1e-5}, "2026-12-05T08:00:00", "read")


def test_formats_states_the_flush_threshold_from_the_table() -> None:
    text = short(story.formats(P.format_table()))
    assert "2^-24" in text and "2^-25" in text and "65,504" in text


@pytest.mark.parametrize(("v", "phrase"), [(HELD, "as predicted"), (FAILED, "not what the prediction said")])
def test_underflow(v, phrase) -> None:
    text = short(story.underflow(v, P.UnderflowStats(400_000, 80_000, 0), P.UnderflowStats(400_000, 6_000, 0),
                                 predicted=0.19, steps=400, final_loss=0.22, scale_log2=14))
    assert phrase in text and "20.0%" in text and "2^14" in text and "2^-25" in text


@pytest.mark.parametrize(("v", "settled_high", "phrases"), [
    (HELD, 18.0, ("held", "below")), (FAILED, 19.0, ("failed", "above"))])
def test_loss_scale(v, settled_high, phrases) -> None:
    trace = P.ScaleTrace(120, 11, True, 24.0, 16.0, settled_high, 18.5)
    text = short(story.loss_scale(v, trace, overflow_log2=26, growth_interval=2000))
    assert all(p in text for p in phrases) and "2^26" in text and "2000 steps" in text


@pytest.mark.parametrize(("v", "phrase"), [(HELD, "The prediction held"), (FAILED, "the lesson stands")])
def test_accumulation(v, phrase) -> None:
    text = short(story.accumulation(v, {"bf16 accumulator": 0.95, "fp32 accumulator": 1e-7,
                                        "fp32 accumulator, bf16 result": 4e-4}, bound=3.9e-3, torch_sum=1000.0,
                                    loop_sum=256.0))
    assert phrase in text and "95%" in text and "256" in text


def test_autocast_ops_on_cpu_names_what_differs_from_cuda() -> None:
    ops = {"linear": "bfloat16", "softmax": "bfloat16", "sum": "bfloat16", "cross_entropy": "float32"}
    text = short(story.autocast_ops(ops, device_type="cpu", amp_name="bfloat16"))
    assert "not CUDA's" in text and "softmax, sum" in text and "cross_entropy returned float32" in text
    one = short(story.autocast_ops({"linear": "bfloat16", "exp": "bfloat16"}, device_type="cpu", amp_name="bfloat16"))
    assert "it keeps" in one
    same = short(story.autocast_ops({"linear": "bfloat16", "softmax": "float32"}, device_type="cpu",
                                    amp_name="bfloat16"))
    assert "not CUDA's" not in same
    gpu = short(story.autocast_ops({"linear": "float16", "softmax": "float32"}, device_type="cuda",
                                   amp_name="float16"))
    assert "this CUDA GPU" in gpu and "CUDA list" in gpu
    none = short(story.autocast_ops({"cross_entropy": "float32"}, device_type="cpu", amp_name="bfloat16"))
    assert "no probed op returned a 16-bit result" in none


@pytest.mark.parametrize(("v", "phrase"), [(HELD, "the dtypes predicted"), (FAILED, "not everything matched")])
def test_apis(v, phrase) -> None:
    text = short(story.apis(v, {"torch": 2.83, "keras": 2.83}))
    assert phrase in text and "2 framework(s)" in text


def _run(loss: float, acc: float, seed: int = 0) -> P.TrainRun:
    return P.TrainRun("r", seed, (loss,) * 20, (1.0,) * 20, (False,) * 20, (1.0,) * 20, acc)


@pytest.mark.parametrize(("v", "phrase"), [(HELD, "within one seed spread"), (FAILED, "further from fp32")])
def test_seeds(v, phrase) -> None:
    spread = P.SeedSpread({"fp32": [_run(0.2, 0.7, s) for s in range(3)],
                           "bf16": [_run(0.21, 0.7, s) for s in range(3)]})
    text = short(story.seeds(v, spread))
    assert phrase in text and "3 seeds" in text


@pytest.mark.parametrize(("v", "phrase"), [(HELD, "So the prediction held"), (FAILED, "The prediction failed")])
def test_state_memory(v, phrase) -> None:
    text = short(story.state_memory(v, {"fp32": 16.0, "bfloat16 autocast": 16.0}, copies=68_000, n_params=38_538,
                                    amp_name="bfloat16"))
    assert phrase in text and "38,538" in text


@pytest.mark.parametrize(("v", "phrase"), [(HELD, "as predicted"), (FAILED, "not show it as cleanly")])
def test_activations(v, phrase) -> None:
    text = short(story.activations(v, per_sample={"fp32": 9000.0, "bfloat16 autocast": 4500.0}, constant=2e6,
                                   copies=2 * 2**20, batch=768, at_batch={"fp32": 7e6, "bfloat16 autocast": 5.4e6},
                                   state=20 * 2**20, amp_name="bfloat16"))
    assert phrase in text and "0.50x" in text


def _remat(live: tuple, peak: tuple) -> P.Remat:
    t = [timing.Measurement(label=f"t{i}", times=(0.1,), rounds=(0.1 * k, 0.1 * k * 1.01, 0.1 * k * 0.99, 0.1 * k))
         for i, k in enumerate((1.0, 1.3))]
    return P.Remat("torch", (110 * 2**20, 14 * 2**20), peak, time=(t[0], t[1]), same_gradients=True, live_peak=live)


@pytest.mark.parametrize(("live", "peak", "predicted", "v", "phrases"), [
    ((116 * 2**20, 36 * 2**20), (135 * 2**20, 76 * 2**20), 38 * 2**20, HELD, ("as the formula says", "RSS", "held")),
    ((116 * 2**20, 60 * 2**20), (135 * 2**20, 76 * 2**20), 38 * 2**20, FAILED, ("more than 10%", "failed")),
    ((None, None), (None, None), None, FAILED, ("did not report", "failed")),
])
def test_remat(live, peak, predicted, v, phrases) -> None:
    text = short(story.remat(v, _remat(live, peak), predicted_peak=predicted))
    assert all(p in text for p in phrases) and "1.3x" in text


# ---------------------------------------------------------------------------------------------------------
# speed

AMX, AVX, NONE = (P.bf16_bound(f) for f in (("amx_bf16", "amx_tile"), ("avx512_bf16",), ("avx2",)))


@pytest.mark.parametrize(("kind", "speed", "bound", "v", "phrase"), [
    ("within bound", sp(1.8, 1.5, 1.9), AVX, HELD, "within that bound"),
    ("beyond bound", sp(4.0, 3.6, 4.4), AVX, FAILED, "the fp32 kernel at this size is the slow side"),
    ("not faster", sp(1.0, 0.9, 1.1), AMX, FAILED, "did not turn them into speed"),
    ("slower", sp(0.01, 0.008, 0.012), NONE, HELD, "a memory format here"),
    ("not slower", sp(1.0, 0.9, 1.1), NONE, FAILED, "did not expect"),
    ("within bound", sp(12.0, 9.0, 14.0), P.bf16_bound((), "cuda"), HELD, "tensor cores"),
])
def test_matmul_speed(kind, speed, bound, v, phrase) -> None:
    text = short(story.matmul_speed(v, kind, speed, bound, n=512, flops={"torch fp32": 2e11, "torch bf16": 4e11}))
    assert phrase in text and "95% interval" in text


def _report(mkl: bool = True, kernel: str | None = "brg_matmul:avx10_1_512_amx", isa: str | None = "AMX",
            path: str = LONG_PATH) -> P.LibraryReport:
    return P.LibraryReport("oneMKL 2024.0", path if mkl else None, (("SGEMM", "1ms"),) if mkl else (), isa,
                           ((kernel, "bf16"),) if kernel else (), ())


@pytest.mark.parametrize(("report", "kwargs", "phrases"), [
    (_report(), {"dot_operands": ("f32",), "converts": 3, "jax_speed": sp(0.9, 0.8, 1.0)},
     ("AMX tiles", "widens the bf16 inputs", "SGEMM")),
    (_report(kernel="brg_matmul:avx512_core_bf16"), {"dot_operands": ("bf16",)},
     ("avx512_core_bf16", "16-bit operands")),
    (_report(kernel=None), {}, ("its own loop",)),
    (_report(mkl=False, kernel=None, isa=None), {"device_type": "cuda"}, ("did not go through MKL", "printed nothing",
                                                                           "cuBLAS")),
])
def test_which_kernel(report, kwargs, phrases) -> None:
    text = short(story.which_kernel(report, **kwargs))
    assert all(p in text for p in phrases), text


@pytest.mark.parametrize(("flops", "phrase"), [(1.5e11, "50%"), (4.5e11, "lower bound")])
def test_fp32_roof(flops, phrase) -> None:
    assert phrase in short(story.fp32_roof(flops, _figures(), n=512))


@pytest.mark.parametrize(("kinds", "shares", "array_bytes", "v", "phrases"), [
    ({"copy": "as predicted", "triad": "as predicted"}, {"triad fp32": 0.9, "triad bf16": 0.85}, 2**30, HELD,
     ("half the bytes bought the time", "held")),
    ({"copy": "beyond 2x", "triad": "not faster"}, {"triad fp32": 1.1, "triad bf16": 0.5}, 2**28, FAILED,
     ("more than half the bytes explain", "converting each value", "lower bound", "served from cache", "failed")),
    ({"copy": "not faster", "triad": "as predicted"}, {"triad fp32": 0.9, "triad bf16": 0.9}, 2**30, FAILED,
     ("a copy converts nothing",)),
])
def test_halved_bytes(kinds, shares, array_bytes, v, phrases) -> None:
    halving = {"copy": sp(1.9, 1.7, 2.1), "triad": sp(1.5, 1.3, 1.7)}
    text = short(story.halved_bytes(v, halving, kinds, shares=shares, figures=_figures(), array_bytes=array_bytes,
                                    llc=480 * 2**20))
    assert all(p in text for p in phrases), text


@pytest.mark.parametrize(("kind", "step", "shares", "phrase"), [
    ("diluted", sp(3.0, 2.8, 3.2), {"fp32": 0.8, "bf16": 0.6}, "as predicted"),
    ("noise of matmul", sp(3.9, 3.5, 4.0), {"fp32": 0.8, "bf16": 0.6}, "no dilution it can resolve"),
    ("noise of 1", sp(1.0, 0.5, 2.0), {"fp32": 0.8, "bf16": 0.01}, "holds 1x"),
    ("further", sp(5.0, 4.6, 5.4), {"fp32": 1.2, "bf16": 0.6}, "cannot size"),
    ("opposite", sp(0.5, 0.4, 0.6), {"fp32": 0.8, "bf16": 0.6}, "the other way"),
])
def test_step_speed(kind, step, shares, phrase) -> None:
    v = HELD if kind == "diluted" else FAILED
    text = short(story.step_speed(v, kind, step, sp(4.0, 3.8, 4.2), shares=shares, step_flops=1_890_000_000,
                                  amp_name="bfloat16"))
    assert phrase in text and "1.89 GFLOP" in text


@pytest.mark.parametrize(("claim", "step", "native", "phrases"), [
    ("held", sp(1.3, 1.2, 1.4), True, ("holds in this run", "16-bit units")),
    ("exceeded", sp(3.0, 2.7, 3.4), True, ("was exceeded",)),
    ("short", sp(1.05, 1.01, 1.1), False, ("does not hold", "has none")),
    ("unresolved", sp(1.3, 0.9, 1.7), True, ("cannot decide", "also holds 1x")),
    ("unresolved", sp(1.5, 1.3, 1.7), True, ("cannot decide", "lies outside it")),
])
def test_seed_claim(claim, step, native, phrases) -> None:
    v = HELD if claim == "held" else FAILED
    text = short(story.seed_claim(v, claim, step, native=native))
    assert all(p in text for p in phrases), text


# ---------------------------------------------------------------------------------------------------------
# Going further

FINAL = {"fp32, loss x 1": 0.22, "fp16 + GradScaler, loss x 1": 0.21, "fp16, no scaler, loss x 1": 0.22,
         "fp32, loss x 2^-12": 0.24, "fp16 + GradScaler, loss x 2^-12": 0.24, "fp16, no scaler, loss x 2^-12": 0.65}


@pytest.mark.parametrize(("v", "flushed", "eps_share", "phrase"), [
    (HELD, 2_000, 0.98, "which is what it is for"),
    (FAILED, 2_000, 0.98, "did little harm"),
    (FAILED, 30_000, 0.5, "not established"),
])
def test_no_scaler(v, flushed, eps_share, phrase) -> None:
    lost = {"1": P.UnderflowStats(37_000, 30, 0), "2^-12": P.UnderflowStats(37_000, flushed, 0)}
    text = short(story.no_scaler(v, FINAL, lost=lost, eps_share=eps_share, adam_eps=1e-8, batch=256))
    assert phrase in text and "2.71x" in text


def _jremat(temp: tuple) -> P.Remat:
    return P.Remat("jax", (206 * 2**20, 14 * 2**20), flops=(19.77e9, 21.40e9), temp=temp, dots=(35, 35))


@pytest.mark.parametrize(("v", "temp", "checks", "phrases"), [
    (HELD, (214 * 2**20, 90 * 2**20), {"flops": True, "temp": True}, ("as predicted", "below half", "held")),
    (FAILED, (214 * 2**20, 254 * 2**20), {"flops": False, "temp": False}, ("A candidate", "they grew")),
    (FAILED, (214 * 2**20, 150 * 2**20), {"flops": True, "temp": False}, ("less than half",)),
    (FAILED, (None, None), {"flops": False, "temp": False}, ("did not report",)),
])
def test_jax_remat(v, temp, checks, phrases) -> None:
    text = short(story.jax_remat(v, _jremat(temp), checks | {"computed extra": 3.2e9}, batch=4096, width=128,
                                 blocks=6))
    assert all(p in text for p in phrases), text


def test_jax_remat_says_nothing_more_when_not_tested() -> None:
    assert story.jax_remat(NOT_TESTED, None, {}, batch=1, width=1, blocks=1) is None


AVX512 = ("avx2", "avx512f")


@pytest.mark.parametrize(("vendor", "report", "speed", "phrases"), [
    ("Intel", _report(), sp(2.0, 1.5, 2.5), ("Intel CPU", "does not apply", "not established", "under load")),
    ("Intel", _report(), sp(1.0, 0.9, 1.1), ("within the noise", "does not apply")),
    ("Intel", _report(), None, ("does not apply",)),
    ("AMD", _report(path="Intel(R) Advanced Vector Extensions 2 (Intel(R) AVX2) enabled processors"), sp(2.0, 1.6, 2.4),
     ("known candidate", "a narrower path, observed", "stays a candidate")),
    ("AMD", _report(), sp(0.8, 0.7, 0.9), ("JAX slower", "did not show in this run")),
    ("AMD", _report(), None, ("was not measured",)),
    ("other", _report(), sp(1.0, 0.9, 1.1), ("neither Intel nor AMD",)),
    ("AMD", _report(mkl=False), sp(2.0, 1.5, 2.5), ("did not go through MKL",)),
])
def test_mkl(vendor, report, speed, phrases) -> None:
    text = short(story.mkl(vendor, report, flags=AVX512, jax_over_torch=speed))
    assert all(p in text for p in phrases), text


def _cast_table(e4_flushed: float) -> P.CastTable:
    act = {"e4m3": P.CastError(0.026, 0.0, 0.0), "e5m2": P.CastError(0.053, 0.0, 0.0),
           "bf16": P.CastError(0.0017, 0, 0)}
    grad = {"e4m3": P.CastError(0.026, e4_flushed, 0.0), "e5m2": P.CastError(0.052, 0.007, 0.0),
            "bf16": P.CastError(0.0017, 0.0, 0.0)}
    return P.CastTable({"activations": act, "gradients": grad})


@pytest.mark.parametrize(("v", "phrase"), [(HELD, "the split follows the bits"), (FAILED, "did not show it")])
def test_fp8_formats(v, phrase) -> None:
    text = short(story.fp8_formats(v, _cast_table(0.089)))
    assert phrase in text and "8.9%" in text


@pytest.mark.parametrize(("saturated", "phrase"), [(108, "would saturate"), (0, "saturated nothing")])
def test_fp8_scaling(saturated, phrase) -> None:
    delayed = {k: P.DelayedScaling(k, 16, 1536, saturated, 1.33 if saturated else 1.0, 0.3)
               for k in ("activations", "gradients")}
    text = short(story.fp8_scaling(delayed))
    assert phrase in text and "last 16 steps" in text and "dynamic" in text


def test_fp8_training_branches() -> None:
    missing = P.Fp8Status(False, "this runtime has no CUDA GPU")
    text = short(story.fp8_training(NOT_TESTED, missing))
    assert "why it did not run here" in text and "no CUDA GPU" not in text  # the verdict already said why
    ready = P.Fp8Status(True, "NVIDIA H100, compute capability 9.0, torchao installed")
    result = P.Fp8Training({"bf16": 1.01, "fp8": 1.02}, sp(1.4, 1.3, 1.5))
    assert "The prediction held" in short(story.fp8_training(HELD, ready, result))
    assert "failed" in short(story.fp8_training(FAILED, ready, result))


def test_story_functions_refuse_a_verdict_that_is_not_one() -> None:
    with pytest.raises(TypeError, match="v"):
        story.seeds("held", P.SeedSpread({"fp32": [_run(0.2, 0.7)]}))
    with pytest.raises(ValueError, match="kind"):
        story.matmul_speed(HELD, "fast", sp(1, 1, 1), AVX, n=1, flops={"torch fp32": 1.0, "torch bf16": 1.0})
