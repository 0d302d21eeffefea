"""course_utils.precision: formats from finfo, rounding, underflow, the JAX policy, memory accounting and plots."""

from __future__ import annotations

import math

import numpy as np
import pytest
from matplotlib.figure import Figure

from course_utils import precision as P

# ---------------------------------------------------------------------------------------------------------
# Formats


def test_formats_come_from_finfo() -> None:
    fp16, bf16, fp32 = P.float_format("float16"), P.float_format("bfloat16"), P.float_format("float32")
    assert (fp16.bits, fp16.exponent_bits, fp16.mantissa_bits) == (16, 5, 10)
    assert fp16.max == 65504.0 and fp16.eps == 2.0**-10 and fp16.min_subnormal == 2.0**-24
    assert fp16.min_normal == 2.0**-14
    assert (bf16.exponent_bits, bf16.mantissa_bits) == (8, 7) and bf16.eps == 2.0**-7
    assert bf16.min_normal == fp32.min_normal and bf16.max == pytest.approx(fp32.max, rel=0.01)
    assert P.float_format("float8_e4m3fn").max == 448.0
    assert P.float_format("float8_e5m2").max == 57344.0


def test_tf32_is_fp32_range_with_fp16_mantissa() -> None:
    tf32, fp32 = P.float_format("tf32"), P.float_format("float32")
    assert (tf32.bits, tf32.exponent_bits, tf32.mantissa_bits) == (19, 8, 10)
    assert tf32.eps == 2.0**-10 and tf32.min_normal == fp32.min_normal
    assert tf32.max == (2 - 2.0**-10) * 2.0**127
    assert float(P.round_to(tf32.max, "tf32")) == tf32.max


def test_format_properties() -> None:
    fp16 = P.float_format("float16")
    assert fp16.short == "fp16" and fp16.unit_roundoff == 2.0**-11
    assert fp16.decimal_digits == pytest.approx(-math.log10(2.0**-11))


def test_bad_format_names_are_rejected() -> None:
    with pytest.raises(ValueError, match="name must be one of"):
        P.float_format("float12")
    with pytest.raises(ValueError, match="name must be one of"):
        P.round_to(1.0, "half")


def test_format_table_renders_and_indexes() -> None:
    table = P.format_table()
    assert [f.short for f in table.formats] == [P.SHORT[n] for n in P.FORMATS]
    assert table["bf16"] is table["bfloat16"]
    assert "fp8 e4m3" in repr(table) and "<table>" in table._repr_html_()
    with pytest.raises(KeyError, match="no format"):
        table["fp64"]


# ---------------------------------------------------------------------------------------------------------
# Rounding


def test_round_to_nearest_even() -> None:
    assert float(P.round_to(1 + 2.0**-8, "bfloat16")) == 1.0  # a tie: to even
    assert float(P.round_to(1 + 2.0**-8 + 2.0**-9, "bfloat16")) == 1 + 2.0**-7
    assert float(P.round_to(1 + 2.0**-11, "tf32")) == 1.0
    assert float(P.round_to(1 + 2.0**-10 + 2.0**-11, "tf32")) == 1 + 2.0**-9
    assert P.round_to([1e5], "float16")[0] == np.inf
    assert np.isnan(P.round_to([1e5], "float8_e4m3fn")[0])  # e4m3fn has no inf
    assert P.round_to([np.inf], "tf32")[0] == np.inf


def test_relative_rounding_error_regimes() -> None:
    fp16 = P.float_format("float16")
    err = P.relative_rounding_error([1.0, 1e3, 1e-9, 1e6], "float16")
    assert err[0] <= fp16.unit_roundoff and err[1] <= fp16.unit_roundoff
    assert err[2] == 1.0 and err[3] == np.inf
    subnormal = P.relative_rounding_error([1e-6], "float16")[0]
    assert fp16.unit_roundoff < subnormal < 1.0
    with pytest.raises(ValueError, match="samples"):
        P.relative_rounding_error([1.0], "float16", samples=0)
    with pytest.raises(ValueError, match="positive"):
        P.relative_rounding_error([0.0], "float16")


# ---------------------------------------------------------------------------------------------------------
# Underflow and accumulation


def test_underflow_stats_counts_flushed_and_overflowed() -> None:
    ref = np.array([0.0, 1e-9, 1.0, 2.0, 1e6])
    low = np.array([0.0, 0.0, 1.0, np.inf, np.inf])
    stats = P.underflow_stats(ref, low)
    assert (stats.nonzero, stats.flushed, stats.overflowed) == (4, 1, 2)
    assert stats.flushed_fraction == 0.25 and stats.overflowed_fraction == 0.5
    assert P.underflow_stats([0.0], [0.0]).flushed_fraction == 0.0
    with pytest.raises(ValueError, match="same size"):
        P.underflow_stats([1.0, 2.0], [1.0])


def test_simulate_cast_and_loss_scaling() -> None:
    grads = np.array([1e-9, 1e-8, 1e-3, 1.0])
    assert P.simulate_cast(grads, "float16").flushed == 2
    assert P.simulate_cast(grads, "float16", scale=2.0**14).flushed == 0
    assert P.simulate_cast(grads, "float16", scale=2.0**17).overflowed == 1
    assert P.simulate_cast(grads, "bfloat16").flushed == 0


def test_accumulation_error_shows_bf16_stagnation() -> None:
    lengths = [10, 1000, 100_000]
    err = P.accumulation_error(lengths)
    assert set(err) == {"bf16 accumulator", "fp32 accumulator", "fp32 accumulator, bf16 result"}
    assert err["bf16 accumulator"][-1] > 0.9 and err["bf16 accumulator"][1] > 0.3
    assert err["fp32 accumulator"].max() < 1e-5
    assert err["fp32 accumulator, bf16 result"].max() <= P.float_format("bfloat16").unit_roundoff
    with pytest.raises(ValueError, match="lengths"):
        P.accumulation_error([0, 10])


def test_torch_activation_grads_and_fp16_underflow() -> None:
    torch = pytest.importorskip("torch")
    from course_utils import models

    model = models.torch_mlp((8, 16, 4), seed=0)
    x, y = torch.randn(32, 8), torch.randint(0, 4, (32,))
    g32 = P.torch_activation_grads(model, x, y)
    assert g32.dtype == torch.float32 and g32.numel() == 32 * (16 + 4)
    assert all(p.grad is None for p in model.parameters())  # leaves the model clean
    scaled = P.torch_activation_grads(model, x * 1e-6, y, dtype=torch.float16, scale=2.0**10)
    assert scaled.dtype == torch.float32
    with pytest.raises(ValueError, match="Linear"):
        P.torch_activation_grads(torch.nn.ReLU(), x, y)


# ---------------------------------------------------------------------------------------------------------
# JAX policy


def test_policy_casts_only_floating_leaves_and_gives_fp32_gradients() -> None:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    policy = P.Policy()
    tree = {"w": jnp.ones((2, 2)), "step": jnp.array(3, dtype=jnp.int32)}
    low = policy.cast_to_compute(tree)
    assert low["w"].dtype == jnp.bfloat16 and low["step"].dtype == jnp.int32
    assert policy.cast_to_param(low)["w"].dtype == jnp.float32

    def apply(params, x):
        assert x.dtype == jnp.bfloat16 and params["w"].dtype == jnp.bfloat16
        return x @ params["w"]

    wrapped = policy.wrap(apply)
    out = wrapped(tree, jnp.ones((3, 2)))
    assert out.dtype == jnp.float32 and wrapped.__name__ == "apply_bfloat16"
    grads = jax.grad(lambda p: wrapped(p, jnp.ones((3, 2))).sum())({"w": jnp.ones((2, 2))})
    assert grads["w"].dtype == jnp.float32


def test_policy_rejects_unknown_dtypes() -> None:
    with pytest.raises(ValueError, match="compute_dtype must be one of"):
        P.Policy(compute_dtype="int8")


# ---------------------------------------------------------------------------------------------------------
# Memory


def test_training_memory_per_scheme() -> None:
    assert sum(P.training_memory(10, "fp32").values()) == 160
    assert sum(P.training_memory(10, "mixed (fp32 master)").values()) == 180
    assert sum(P.training_memory(10, "pure bf16").values()) == 80
    with pytest.raises(ValueError, match="scheme must be one of"):
        P.training_memory(10, "fp8")
    with pytest.raises(ValueError, match="n_params"):
        P.training_memory(-1, "fp32")


def test_torch_state_bytes_match_the_fp32_accounting() -> None:
    torch = pytest.importorskip("torch")
    from course_utils import models

    model = models.torch_mlp((8, 16, 4), seed=0)
    opt = torch.optim.Adam(model.parameters())
    assert P.torch_state_bytes(model, opt)["gradients"] == 0
    model(torch.randn(5, 8)).sum().backward()
    opt.step()
    n = sum(p.numel() for p in model.parameters())
    assert P.torch_state_bytes(model, opt) == P.training_memory(n, "fp32")


def test_saved_activation_bytes_counts_what_autograd_keeps() -> None:
    torch = pytest.importorskip("torch")

    w = torch.randn(8, 16, requires_grad=True)
    x = torch.randn(32, 8, requires_grad=True)
    # x @ w saves x (for w's gradient) and w (for x's gradient); relu saves its output; w is excluded
    saved = P.saved_activation_bytes(lambda: torch.relu(x @ w), exclude=[w])
    assert saved == 32 * 8 * 4 + 32 * 16 * 4
    assert P.saved_activation_bytes(lambda: torch.relu(x @ w)) == saved + 8 * 16 * 4


def test_peak_rss_delta_sees_an_allocation() -> None:
    if not P.rss_peak_supported():
        pytest.skip("peak RSS cannot be reset on this system")
    size = 64 * 2**20
    peak = P.peak_rss_delta(lambda: np.ones(size // 8))
    assert size * 0.9 <= peak <= size * 1.5
    torch = pytest.importorskip("torch")
    assert P.torch_peak_bytes(lambda: torch.ones(size // 4).sum(), "cpu") >= size * 0.9


def test_jax_memory_reports_argument_and_output_bytes() -> None:
    pytest.importorskip("jax")
    import jax.numpy as jnp

    stats = P.jax_memory(lambda x: jnp.tanh(x) * 2, jnp.ones(1000, jnp.float32))
    assert stats["argument"] == 4000 and stats["output"] == 4000 and "temp" in stats


def test_plots_return_figures() -> None:
    figs = [
        P.bit_layout_plot(),
        P.rounding_error_plot(("float16", "bfloat16")),
        P.gradient_histogram_plot(np.logspace(-12, -1, 200), scale=2.0**10),
        P.scale_trace_plot([2.0**16, 2.0**15, 2.0**15, 2.0**16], [True, False, False, False]),
        P.accumulation_plot([10, 100], {"a": [1e-3, 1e-2]}),
        P.throughput_plot({"torch fp32": 1e11, "torch bf16": 4e11}, {"A100 bf16": 3e14}, "published"),
        P.memory_stack_plot({k: P.TRAINING_SCHEMES[k] for k in P.TRAINING_SCHEMES}),
        P.lines_plot([1, 2, 3], {"a": [1, 2, 3]}, xlabel="x", ylabel="y", title="t", logy=True),
        P.before_after_plot({"torch": (10.0, 2.0)}, ylabel="MiB", title="t"),
    ]
    assert all(isinstance(f, Figure) for f in figs)
    assert len(figs[0].axes[0].patches) == 3 * len(P.FORMATS)
    assert len(figs[5].axes) == 2 and len(P.throughput_plot({"a": 1e9}).axes) == 1
    assert "0.20x" in [t.get_text() for t in figs[8].axes[0].texts]
