"""course_utils.fusion.variants and custom_ops: the chain per framework, reused buffers, page faults, the
vector roof, the legacy NumPy operator."""

from __future__ import annotations

import numpy as np
import pytest

from course_utils import fusion, interop, memory, models
from course_utils.fusion.vector_roof import VectorRoof

torch = pytest.importorskip("torch")

X = np.random.default_rng(0).standard_normal((64, 32), dtype=np.float32)
B = np.random.default_rng(1).standard_normal(32, dtype=np.float32)
REFERENCE = models.chain_for("numpy")(X, B)
POLYNOMIAL = models.gelu_chain(X, B, lambda v: v)


@pytest.mark.parametrize("framework", ["torch", "jax", "tensorflow"])
def test_the_chain_and_its_polynomial_twin_in_every_framework(framework: str) -> None:
    pytest.importorskip(framework)
    x, bias = interop.to_framework(framework, X, B)
    assert np.allclose(interop.to_numpy(fusion.chain(framework)(x, bias)), REFERENCE, atol=1e-5)
    assert np.allclose(interop.to_numpy(fusion.chain(framework, tanh=False)(x, bias)), POLYNOMIAL, atol=1e-5)
    compiled = interop.compile_default(framework, fusion.chain(framework))
    assert np.allclose(interop.to_numpy(compiled(x, bias)), REFERENCE, atol=1e-5)
    assert set(fusion.EAGER) == set(fusion.FUSED) == set(fusion.INTO) == {"torch", "jax", "tensorflow"}


@pytest.mark.parametrize("framework", ["torch", "jax", "tensorflow"])
def test_into_buffer_writes_the_chain_into_the_same_buffer_every_call(framework: str) -> None:
    pytest.importorskip(framework)
    x, bias = interop.to_framework(framework, X, B)
    into = fusion.variants.into_buffer(framework, fusion.chain(framework, tanh=False), x)
    assert np.allclose(interop.to_numpy(into(x, bias)), POLYNOMIAL, atol=1e-5)
    assert np.allclose(interop.to_numpy(into(x, bias)), POLYNOMIAL, atol=1e-5)  # again: the donated buffer
    if framework == "torch":
        assert into(x, bias).data_ptr() == into(x, bias).data_ptr()


@pytest.mark.slow  # seconds: outside make test-unit's fast lane, inside make test
def test_two_buffers_of_different_shapes_get_their_own_static_graph() -> None:
    chain = fusion.chain("torch", tanh=False)
    for rows in (8, 24, 40):  # a shared code object would compile a shape-generic graph at 24, reused at 40
        x, bias = torch.from_numpy(X[:rows].copy()), torch.from_numpy(B)
        before = torch._dynamo.utils.counters["stats"]["unique_graphs"]
        into = fusion.variants.into_buffer("torch", chain, x)
        assert np.allclose(into(x, bias).numpy(), POLYNOMIAL[:rows], atol=1e-5)
        assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == before + 1


def test_page_faults_count_fresh_pages_and_none_for_a_reused_buffer() -> None:
    x = torch.ones(16 * 2**20 // 4)  # 16 MiB: glibc maps it fresh unless it keeps it
    out = torch.empty_like(x)
    # none of out's 4096 pages (getrusage counts every thread of the worker: another may fault a page meanwhile)
    assert memory.page_faults(lambda: torch.add(x, 1.0, out=out)) < out.nbytes / 4096 / 100
    assert memory.page_faults(lambda: torch.ones(64 * 2**20 // 4)) >= 64 * 2**20 // 4096 * 0.9  # 64 MiB > mmap max


@pytest.mark.slow  # seconds: outside make test-unit's fast lane, inside make test
def test_vector_roof_is_positive_and_adds_time_per_element() -> None:
    roof = fusion.measure_vector_roof(elements=8192, steps=4, min_time=0.01)
    assert roof.flops_per_second > 0 and roof.tanh_per_second > 0 and roof.elements == 8192
    assert roof.intercept_seconds is not None and roof.intercept_seconds >= 0  # the intercept of the two sizes
    one = roof.chain_seconds(1000, flops=10, tanh=1)
    assert one == pytest.approx(1000 * (10 / roof.flops_per_second + 1 / roof.tanh_per_second))
    assert roof.chain_seconds(2000, flops=10, tanh=1) == pytest.approx(2 * one)


@pytest.mark.slow  # seconds: outside make test-unit's fast lane, inside make test
@pytest.mark.parametrize("framework", ["torch", "jax", "tensorflow"])
def test_each_framework_has_its_own_vector_roof_and_tanh_error(framework: str) -> None:
    pytest.importorskip(framework)
    roof = fusion.measure_vector_roof(framework, elements=8192, steps=2, chains=2, tanhs=2, min_time=0.01)
    assert roof.framework == framework and roof.flops_per_second > 0 and roof.tanh_per_second > 0
    assert roof.tanh_error is not None and roof.tanh_error < 1e-5  # float32 tanh, however it is computed


def test_chain_ceiling_is_the_rate_of_flops_plus_tanh() -> None:
    roof = VectorRoof(1e10, 1e9, 4096)
    assert roof.chain_flops_per_second(flops=10, tanh=0) == pytest.approx(1e10)
    assert roof.chain_flops_per_second(flops=10, tanh=1) == pytest.approx(11 / (10 / 1e10 + 1 / 1e9))


def test_vector_roof_table_names_the_limit_and_sets_the_intercept_beside_the_call_cost() -> None:
    fast, slow = VectorRoof(1e11, 1e10, 4096, "jax", intercept_seconds=4e-5), VectorRoof(1e10, 1e8, 4096)
    table = fusion.vector_roof_table({"torch": slow, "jax": fast}, elements=10**6, flops=10, tanh=1,
                                     memory_seconds=1e-3, call_cost={"jax": 2e-5})
    text = repr(table)
    assert "arithmetic" in text.split("torch")[1].split("\n")[0]  # 10 ms of tanh against 1 ms of bytes
    jax_row = text.split("jax")[1].split("\n")[0]
    assert "bytes" in jax_row and "40 µs" in jax_row and "20 µs" in jax_row
    assert "compiled call (machine figures)" in text


def test_a_chain_roof_is_its_larger_part_and_at_most_their_sum() -> None:
    roof = VectorRoof(1e10, 1e9, 4096, "tensorflow")  # 2 ms of arithmetic on 10^6 elements
    limits = fusion.chain_roofs({"tensorflow": roof}, elements=10**6, flops=10, tanh=1, memory_seconds=1e-3)
    limit = limits["tensorflow"]
    assert limit.limit == "arithmetic" and limit.seconds == pytest.approx(2e-3)
    assert limit.serial == pytest.approx(3e-3)
    assert fusion.vector_roof.ChainRoof(1e-3, 5e-3).limit == "bytes"


def test_the_legacy_operator_is_a_close_tanh_in_every_framework() -> None:
    v = np.linspace(-3, 3, 101, dtype=np.float32)
    assert np.max(np.abs(fusion.table_tanh_np(v) - np.tanh(v))) < 1e-4
    assert torch.allclose(fusion.legacy_tanh_torch(torch.from_numpy(v)), torch.tanh(torch.from_numpy(v)), atol=1e-4)
    pytest.importorskip("jax")
    x, bias = interop.to_framework("jax", X, B)
    assert np.allclose(np.asarray(fusion.chain_with_callback_jax(x, bias)), REFERENCE, atol=1e-4)
