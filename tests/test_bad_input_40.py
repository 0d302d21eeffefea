"""Issue 40, item 1: the wrong answers a bad-input run found in the lesson packages, each refused (or bounded) at
the call with an error that names the argument and the rule. (The core ones are in tests/test_core_bad_input.py.)"""

from __future__ import annotations

import math

import numpy as np
import pytest
from badinput import rejects

from course_utils import beyond, distributed, graphs, measuring, migrate, pipeline, precision, profile


def _refused(call, argument: str, *words: str) -> None:
    """``call()`` raises TypeError or ValueError naming ``argument`` and saying each of ``words`` (the rule)."""
    with pytest.raises((TypeError, ValueError)) as caught:
        call()
    for word in (argument, *words):
        assert word in str(caught.value), f"{word!r} is not in: {caught.value}"


@pytest.mark.parametrize(("waits", "computes", "words"), [
    ([math.nan, 1.0], [1.0, 1.0], ("finite",)),
    ([0.0, 0.0], [0.0, 0.0], ("no busy share",)),
    ([1.0], [1.0], ("at least 2",)),
    ([1.0, 1.0], [1.0, 1.0, 1.0], ("same length",)),
    ([1.0, -1.0], [1.0, 1.0], (">= 0",)),
])
def test_reference_utilisation_refuses_what_has_no_share(waits, computes, words) -> None:
    _refused(lambda: pipeline.exercises.reference_utilisation(waits, computes), "waits", *words)


def test_reference_utilisation_still_answers_arrays() -> None:
    assert pipeline.exercises.reference_utilisation(np.array([9.0, 1.0]), np.array([5.0, 3.0])) == 0.75


def test_augment_params_are_typed() -> None:
    _refused(lambda: pipeline.dataset.AugmentParams("x", 0, False, 1.0, 1.0), "dy", "integer")
    _refused(lambda: pipeline.dataset.AugmentParams(0, 0, "no", 1.0, 1.0), "flip", "True or False")
    assert pipeline.dataset.AugmentParams(np.int64(1), 0, False, 1.0, 1.0).dy == 1


def test_start_forkserver_refuses_a_module_it_cannot_import() -> None:
    _refused(lambda: pipeline.start_forkserver(["nonexistent_module_xyz"]), "preload", "nonexistent_module_xyz")
    _refused(lambda: pipeline.start_forkserver(["no_such_parent.child"]), "preload", "importable")


def test_fingerprint_refuses_what_is_not_an_array_of_numbers() -> None:
    rejects(lambda: pipeline.dataset.fingerprint(object()), "batch")
    rejects(lambda: pipeline.dataset.fingerprint((np.ones(2), object())), "batch")


def test_memory_stack_plot_refuses_negative_bytes() -> None:
    _refused(lambda: precision.memory_stack_plot({"a": {"w": -1.0}}), "breakdowns['a']['w']", ">= 0")
    _refused(lambda: precision.memory_stack_plot({}), "breakdowns", "empty")


def test_matmul_libraries_refuses_a_framework_named_twice() -> None:
    _refused(lambda: measuring.matmul_libraries(["torch", "torch"]), "frameworks", "repeat")


@pytest.mark.parametrize("host", ["a b; rm -rf ~", "", "-host", "host:80"])
def test_node_command_refuses_a_host_that_is_not_one(host) -> None:
    _refused(lambda: beyond.multinode.node_command("ddp_train.py", nnodes=1, node_rank=0, nproc_per_node=1,
                                                   port=29500, host=host), "host", "host name or IP address")


def test_node_command_takes_names_and_addresses() -> None:
    for host in ("127.0.0.1", "node-1.cluster", "[::1]"):
        line = beyond.multinode.node_command("ddp_train.py", nnodes=1, node_rank=0, nproc_per_node=1, port=29500,
                                             host=host)
        assert f"--rdzv-endpoint={host}:29500" in line


def test_make_loader_bounds_the_batch_size() -> None:
    _refused(lambda: migrate.make_loader(list(range(8)), 10**9), "batch_size", "[1, 4096]")


def test_cumulative_time_is_bounded_before_allocating() -> None:
    _refused(lambda: graphs.cumulative_time(1.0, 0.1, range(10**12)), "calls", "at most 1,000,000")
    assert graphs.cumulative_time(1.0, 0.5, [1, 3]).tolist() == [1.0, 2.0]


def test_plots_whose_series_lengths_differ_name_the_series() -> None:
    _refused(lambda: precision.accumulation_plot([10, 100], {"bf16": [0.1]}), "errors['bf16']", "same length")
    _refused(lambda: precision.lines_plot([1.0, 2.0], {"loss": [1.0, 2.0, 3.0]}, xlabel="x", ylabel="y", title="t"),
             "series['loss']", "same length")


def _cost(sweep) -> distributed.comms.AllReduceCost:
    fits = tuple(distributed.comms.AllReduceModel(bw, 5e-5, 2) for bw in (1e9, 1.1e9))
    return distributed.comms.AllReduceCost(distributed.comms.combine(fits), fits, sweep, 2, "now", "measured", "k")


def test_allreduce_fit_plot_names_a_sweep_whose_lengths_differ() -> None:
    _refused(lambda: distributed.allreduce_fit_plot(_cost(((4096, 65536), (1e-4,)))), "cost.sweep", "length")
    good = _cost(((4096, 65536), (1e-4, 2e-4)))
    _refused(lambda: distributed.allreduce_fit_plot(good, {4: _cost(((4096,), ()))}), "others[4].sweep")


def test_scaling_plot_names_a_device_count_below_one() -> None:
    _refused(lambda: distributed.scaling_plot(4e6, 0.03, {"link": (1e10, 5e-6)}, devices=[0]), "devices[0]", "in [1,")


@pytest.mark.parametrize("content", [b"def f(:\n", b"\x00\xff\xfe binary"])
def test_worker_source_names_a_file_that_is_not_python(tmp_path, content) -> None:
    script = tmp_path / "broken.py"
    script.write_bytes(content)
    _refused(lambda: distributed.worker_source(script, only=["f"]), "broken.py", "Python source")


def test_select_refuses_a_pattern_that_is_not_one() -> None:
    trace = profile.Trace("torch", None, (profile.Event("op", "cpu_op", "main", 0.0, 1e-6),))
    _refused(lambda: trace.select("["), "name", "regular expression")
    _refused(lambda: trace.count(thread="("), "thread", "regular expression")


def test_compile_or_fallback_names_a_function_or_compiler_that_returns_none() -> None:
    _refused(lambda: graphs.compile_or_fallback(lambda x: None, (np.ones(2),), compiler=lambda f: f,
                                                framework="jax"), "fn", "return arrays")
    _refused(lambda: graphs.compile_or_fallback(lambda x: x, (np.ones(2),), compiler=lambda f: None,
                                                framework="jax"), "compiler", "return the compiled function")


def test_amp_agreement_names_a_factory_that_returns_none() -> None:
    torch = pytest.importorskip("torch")
    batch = (torch.ones(4, 3), torch.zeros(4, dtype=torch.long))
    _refused(lambda: migrate.amp_agreement(lambda: None, batch, torch.bfloat16), "make_model", "Module")
