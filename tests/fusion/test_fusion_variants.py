"""course_utils.fusion.variants and custom_ops: the chain per framework, reused buffers, page faults, the
vector roof, the legacy NumPy operator."""

from __future__ import annotations

import numpy as np
import pytest

from course_utils import fusion, interop, models

torch = pytest.importorskip("torch")

X = np.random.default_rng(0).standard_normal((64, 32), dtype=np.float32)
B = np.random.default_rng(1).standard_normal(32, dtype=np.float32)
REFERENCE = models.chain_for("numpy")(X, B)
POLYNOMIAL = models.gelu_chain(X, B, lambda v: v)


@pytest.mark.parametrize("framework", ["torch", "jax", "tensorflow"])
def test_every_variant_computes_the_chain(framework: str) -> None:
    pytest.importorskip(framework)
    x, bias = interop.to_framework(framework, X, B)
    assert np.allclose(interop.to_numpy(fusion.chain(framework)(x, bias)), REFERENCE, atol=1e-5)
    assert np.allclose(interop.to_numpy(fusion.chain(framework, tanh=False)(x, bias)), POLYNOMIAL, atol=1e-5)
    compiled = interop.compile_default(framework, fusion.chain(framework))
    assert np.allclose(interop.to_numpy(compiled(x, bias)), REFERENCE, atol=1e-5)
    into = fusion.into_buffer(framework, fusion.chain(framework, tanh=False), x)
    copy = fusion.copy_into(framework, x)
    if framework == "tensorflow":
        assert into is None and copy is None  # a tf.function cannot write into a caller's buffer
    else:
        assert np.allclose(interop.to_numpy(into(x, bias)), POLYNOMIAL, atol=1e-5)
        assert np.allclose(interop.to_numpy(into(x, bias)), POLYNOMIAL, atol=1e-5)  # again: the donated buffer
        assert np.array_equal(interop.to_numpy(copy(x)), X)


def test_torch_out_buffer_is_the_same_memory_every_call() -> None:
    x, bias = interop.to_framework("torch", X, B)
    into = fusion.into_buffer("torch", fusion.chain("torch"), x)
    assert into(x, bias).data_ptr() == into(x, bias).data_ptr()


def test_page_faults_count_fresh_pages_and_none_for_a_reused_buffer() -> None:
    x = torch.ones(16 * 2**20 // 4)  # 16 MiB: glibc maps it fresh unless it keeps it
    out = torch.empty_like(x)
    assert fusion.page_faults(lambda: torch.add(x, 1.0, out=out)) == 0
    assert fusion.page_faults(lambda: torch.ones(64 * 2**20 // 4)) >= 64 * 2**20 // 4096 * 0.9  # 64 MiB > mmap max


def test_vector_roof_is_positive_and_adds_time_per_element() -> None:
    roof = fusion.measure_vector_roof(elements=4096, steps=4, min_time=0.01)
    assert roof.flops_per_second > 0 and roof.tanh_per_second > 0 and roof.elements == 4096
    one = roof.chain_seconds(1000, flops=10, tanh=1)
    assert one == pytest.approx(1000 * (10 / roof.flops_per_second + 1 / roof.tanh_per_second))
    assert roof.chain_seconds(2000, flops=10, tanh=1) == pytest.approx(2 * one)


def test_measure_variants_names_every_like_for_like_variant() -> None:
    x, bias = interop.to_framework("torch", X, B)
    found = fusion.measure_variants({"torch": (x, bias)}, known={"torch.compile": 1.0}, min_time=0.01, min_repeats=1)
    assert found["torch.compile"] == 1.0  # known results are not measured again
    assert set(found) == {"torch.compile", "torch.compile, no tanh", "torch.compile, out=",
                          "torch.compile, out=, no tanh", "torch copy, same bytes", "torch eager, no tanh"}


def test_the_legacy_operator_is_a_close_tanh_in_every_framework() -> None:
    v = np.linspace(-3, 3, 101, dtype=np.float32)
    assert np.max(np.abs(fusion.table_tanh_np(v) - np.tanh(v))) < 1e-4
    assert torch.allclose(fusion.legacy_tanh_torch(torch.from_numpy(v)), torch.tanh(torch.from_numpy(v)), atol=1e-4)
    pytest.importorskip("jax")
    x, bias = interop.to_framework("jax", X, B)
    assert np.allclose(np.asarray(fusion.chain_with_callback_jax(x, bias)), REFERENCE, atol=1e-4)
