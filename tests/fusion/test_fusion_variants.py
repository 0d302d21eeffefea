"""course_utils.fusion.variants and custom_ops: the chain per framework, reused buffers, page faults, the
vector roof, the legacy NumPy operator."""

from __future__ import annotations

import numpy as np
import pytest

from course_utils import fusion, interop, memory, models

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
    assert memory.page_faults(lambda: torch.add(x, 1.0, out=out)) == 0
    assert memory.page_faults(lambda: torch.ones(64 * 2**20 // 4)) >= 64 * 2**20 // 4096 * 0.9  # 64 MiB > mmap max


def test_vector_roof_is_positive_and_adds_time_per_element() -> None:
    roof = fusion.measure_vector_roof(elements=8192, steps=4, min_time=0.01)
    assert roof.flops_per_second > 0 and roof.tanh_per_second > 0 and roof.elements == 8192
    assert roof.call_seconds is not None and roof.call_seconds >= 0  # the intercept of the two sizes
    one = roof.chain_seconds(1000, flops=10, tanh=1)
    assert one == pytest.approx(1000 * (10 / roof.flops_per_second + 1 / roof.tanh_per_second))
    assert roof.chain_seconds(2000, flops=10, tanh=1) == pytest.approx(2 * one)


@pytest.mark.parametrize("framework", ["torch", "jax", "tensorflow"])
def test_each_framework_has_its_own_vector_roof_and_tanh_error(framework: str) -> None:
    pytest.importorskip(framework)
    roof = fusion.measure_vector_roof(framework, elements=8192, steps=2, chains=2, tanhs=2, min_time=0.01)
    assert roof.framework == framework and roof.flops_per_second > 0 and roof.tanh_per_second > 0
    assert roof.tanh_error is not None and roof.tanh_error < 1e-5  # float32 tanh, however it is computed


def test_one_thread_torch_roof_records_its_threads() -> None:
    roof = fusion.measure_vector_roof("torch", elements=8192, steps=2, chains=2, tanhs=2, min_time=0.01, threads=1)
    assert roof.threads == 1
    assert torch.get_num_threads() >= 1  # restored afterwards


def test_chain_ceiling_is_the_rate_of_flops_plus_tanh() -> None:
    roof = fusion.VectorRoof(1e10, 1e9, 4096)
    assert roof.chain_flops_per_second(flops=10, tanh=0) == pytest.approx(1e10)
    assert roof.chain_flops_per_second(flops=10, tanh=1) == pytest.approx(11 / (10 / 1e10 + 1 / 1e9))


def test_vector_roof_table_names_the_limit_per_framework() -> None:
    fast, slow = fusion.VectorRoof(1e11, 1e10, 4096, "jax"), fusion.VectorRoof(1e10, 1e8, 4096, "torch")
    table = fusion.vector_roof_table({"torch": slow, "jax": fast}, elements=10**6, flops=10, tanh=1,
                                     memory_seconds=1e-3)
    text = repr(table)
    assert "arithmetic" in text.split("torch")[1].split("\n")[0]  # 10 ms of tanh against 1 ms of bytes
    assert "bytes" in text.split("jax")[1].split("\n")[0]


def test_a_measured_fresh_output_floor_can_be_the_limit() -> None:
    roof = fusion.VectorRoof(1e10, 1e9, 4096, "tensorflow")  # 2 ms of arithmetic on 10^6 elements
    limits = fusion.chain_roofs({"tensorflow": roof}, elements=10**6, flops=10, tanh=1, memory_seconds=1e-3,
                                fresh_output={"tensorflow": 5e-3})
    assert limits["tensorflow"].limit == "fresh output" and limits["tensorflow"].seconds == 5e-3
    assert limits["tensorflow"].serial == pytest.approx(2e-3 + 5e-3)  # the fresh output holds the bytes
    plain = fusion.chain_roofs({"tensorflow": roof}, elements=10**6, flops=10, tanh=1, memory_seconds=1e-3)
    assert plain["tensorflow"].limit == "arithmetic" and "fresh output" not in plain["tensorflow"].parts
    assert plain["tensorflow"].serial == pytest.approx(2e-3 + 1e-3)
    text = repr(fusion.vector_roof_table({"tensorflow": roof}, elements=10**6, flops=10, tanh=1, memory_seconds=1e-3,
                                         fresh_output={"tensorflow": 5e-3}))
    assert "fresh output" in text.split("tensorflow")[-1]


def test_two_buffers_of_different_shapes_get_their_own_static_graph() -> None:
    chain = fusion.chain("torch", tanh=False)
    for rows in (8, 24, 40):  # a shared code object would compile a shape-generic graph at 24, reused at 40
        x, bias = torch.from_numpy(X[:rows].copy()), torch.from_numpy(B)
        before = torch._dynamo.utils.counters["stats"]["unique_graphs"]
        into = fusion.into_buffer("torch", chain, x)
        assert np.allclose(into(x, bias).numpy(), POLYNOMIAL[:rows], atol=1e-5)
        assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == before + 1


def test_best_matmul_roof_lifts_a_depressed_probe_and_keeps_a_good_one() -> None:
    from course_utils import roofline

    machine = roofline.Machine("torch", "cpu", {"copy": 1e10}, {"mm": 1e11})
    fast = roofline.Point("mm n=1024", 2 * 1024**3, 12 * 1024**2, 2 * 1024**3 / 3e11)
    slow = roofline.Point("mm n=16", 2 * 16**3, 12 * 16**2, 1e-3)
    assert fusion.best_matmul_roof(machine, [slow, fast]).peak_flops == pytest.approx(3e11)
    assert fusion.best_matmul_roof(machine, [slow]).peak_flops == 1e11
    assert machine.peak_flops == 1e11  # the measured machine itself is left as it was


def test_measure_variants_names_every_like_for_like_variant() -> None:
    x, bias = interop.to_framework("torch", X, B)
    found = fusion.measure_variants({"torch": (x, bias)}, known={"torch.compile": 1.0}, rounds=2, min_time=0.01)
    assert found["torch.compile"] == 1.0  # known results are not measured again
    assert set(found) == {"torch.compile", "torch.compile, no tanh", "torch.compile, out=",
                          "torch.compile, out=, no tanh", "torch copy, same bytes", "torch eager, no tanh"}
    assert all(len(found[name].times) >= 2 * 3 for name in found if name != "torch.compile")  # 3 blocks a round


def test_variant_calls_run_nothing_until_called_and_then_compute_the_chain() -> None:
    x, bias = interop.to_framework("torch", X, B)
    calls = fusion.variant_calls({"torch": (x, bias)})
    assert np.allclose(calls["torch.compile, out=, no tanh"]().numpy(), POLYNOMIAL, atol=1e-5)
    assert np.array_equal(calls["torch copy, same bytes"]().numpy(), X)


def test_the_legacy_operator_is_a_close_tanh_in_every_framework() -> None:
    v = np.linspace(-3, 3, 101, dtype=np.float32)
    assert np.max(np.abs(fusion.table_tanh_np(v) - np.tanh(v))) < 1e-4
    assert torch.allclose(fusion.legacy_tanh_torch(torch.from_numpy(v)), torch.tanh(torch.from_numpy(v)), atol=1e-4)
    pytest.importorskip("jax")
    x, bias = interop.to_framework("jax", X, B)
    assert np.allclose(np.asarray(fusion.chain_with_callback_jax(x, bias)), REFERENCE, atol=1e-4)


def test_size_sweep_compiles_each_size_once_and_matches_the_reference() -> None:
    x, bias = interop.to_framework("torch", X, B)
    found = fusion.size_sweep({"torch": (x, bias)}, [4, 16], REFERENCE, min_time=0.002)
    assert found.equal == {"torch": True} and found.compiles == {"torch": 2}
    assert len(found.speedups["torch"]) == 2 and all(s > 0 for s in found.speedups["torch"])
