"""course_utils.graphs: eager against compiled in turns, the compile caches, the XLA gap, and the shape-generic
graph's cost and its candidate cause: each text follows the numbers in every branch."""

from __future__ import annotations

import pytest

from course_utils import compiled, graphs, timing


def _m(seconds: float, first_call: float | None = None) -> timing.Measurement:
    return timing.Measurement("m", (seconds * 0.95, seconds, seconds * 1.05), first_call=first_call)


def test_beat_text_requires_quartiles_apart() -> None:
    eager = {"torch": _m(140e-6), "jax": _m(300e-6), "tensorflow": _m(404e-6)}
    compiled = {"torch": _m(60e-6), "jax": _m(28e-6), "tensorflow": _m(390e-6)}
    text = graphs.beat_text(eager, compiled)
    assert "The compiled call beat its eager counterpart beyond the noise" in text and "in torch, jax." in text
    assert "Within the noise of eager: tensorflow" in text and "Slower" not in text
    slow = graphs.beat_text({"torch": _m(1e-3)}, {"torch": _m(2e-3)})
    assert "Slower than eager beyond the noise: torch" in slow and "not established" in slow
    assert graphs.beat_text({"torch": _m(2e-3)}, {"torch": _m(1e-3)}).startswith("Every compiled call")


def test_timed_pair_labels_and_keeps_first_calls() -> None:
    eager, compiled = graphs.timed_pair(abs, abs, (-1.0,), label="py", min_time=0.004, rounds=2)
    assert (eager.label, compiled.label) == ("py eager", "py compiled")
    assert eager.first_call is not None and compiled.first_call is not None


def test_xla_gap_text_states_the_gap_and_what_is_not_established() -> None:
    jax, tf = _m(27.9e-6), _m(390e-6)
    plain = graphs.xla_gap_text(jax, tf, 65536)
    assert "14.0x JAX's 27.9 µs" in plain and "not established by this run" in plain and "candidate" in plain
    probed = graphs.xla_gap_text(jax, tf, 65536, probes=(_m(5.75e-6), _m(94.8e-6)))
    assert "a per-call difference of 89 µs, 25% of the 362 µs gap (computed)" in probed
    assert "the rest is not established" in probed
    assert "accounts for most" in graphs.xla_gap_text(jax, tf, 65536, probes=(_m(5e-6), _m(360e-6)))
    assert graphs.xla_gap_text(jax, _m(40e-6), 65536) == ""  # within 2x


def test_first_compile_text_separates_the_once_per_process_part() -> None:
    text = graphs.first_compile_text(1.41, {"hits": 1, "misses": 0}, 0.047, {"hits": 1, "misses": 0})
    assert "1 hit(s) and no miss" in text and "took **47 ms**" in text and "(97%)" in text
    assert "does not separate the two" in text
    cold = graphs.first_compile_text(1.0, {"hits": 0, "misses": 1}, 0.8, {"hits": 0, "misses": 0})
    assert "1 miss(es)" in cold and "neither a hit nor a miss" in cold and "mostly per graph" in cold


def test_cache_counts_and_compile_again() -> None:
    torch = pytest.importorskip("torch")
    before = compiled.inductor_cache_counts()
    seconds, counts = graphs.compile_again(lambda x: torch.sin(x) + 1, (torch.ones(8),))
    assert seconds > 0 and set(counts) == {"hits", "misses"}
    assert compiled.inductor_cache_counts(since=before) == counts  # the only compile in between


def _variants(static: float, dynamic: float, marked: float, reused: float | None = None) -> dict:
    found = {k: graphs.Variant(k, _m(s), 1) for k, s in ((graphs.STATIC, static), (graphs.DYNAMIC, dynamic),
                                                          (graphs.MARKED, marked))}
    if reused is not None:
        found[graphs.REUSED] = graphs.Variant(graphs.REUSED, _m(reused), 1)
    return found


def test_dynamic_text_counts_a_faster_reused_function() -> None:
    text = graphs.dynamic_text(_variants(17.3e-6, 17.5e-6, 17.4e-6, 14e-6), 65536)
    assert "(beyond the noise): after a length changes" in text
    assert "`reused from another size (default)` ran faster than the static graph" in text
    assert "not established" in text


def test_static_again_text_follows_the_noise() -> None:
    assert "within the noise of each other" in graphs.static_again_text(_m(12e-6), _m(12.2e-6), 16)
    moved = graphs.static_again_text(_m(17.3e-6), _m(12e-6), 16)
    assert "differs beyond its quartiles" in moved and "not established" in moved


def test_dynamic_summary_follows_both_sizes() -> None:
    none = graphs.dynamic_summary(_variants(17e-6, 17.2e-6, 17e-6), 16, _m(760e-6), _m(770e-6), 2**20)
    assert "no cost beyond the noise at either size" in none
    big = graphs.dynamic_summary(_variants(17e-6, 17.2e-6, 17e-6), 16, _m(760e-6), _m(1.54e-3), 2**20)
    assert "2.03x at 1,048,576 elements (beyond the noise): a real cost at 1,048,576 elements" in big
    assert "not established by this run" in big
    check = graphs.ThreadCheck(2, 1, 0, _m(1.7e-3), _m(1.72e-3))
    shown = graphs.dynamic_summary(_variants(17e-6, 17.2e-6, 17e-6), 16, _m(760e-6), _m(1.54e-3), 2**20, check)
    assert "holds 1 OpenMP parallel region(s), the shape-generic one 0" in shown and "parallel loop" in shown
    small = graphs.dynamic_summary(_variants(17e-6, 30e-6, 17e-6), 16, _m(760e-6), _m(770e-6), 2**20)
    assert "a real cost at 16 elements" in small and "OpenMP" not in small


def test_thread_text_branches() -> None:
    assert "not established" in graphs.thread_text(None)
    still = graphs.thread_text(graphs.ThreadCheck(2, 1, 0, _m(1.0e-3), _m(1.5e-3)))
    assert "differ even on one thread" in still and "not established" in still
    same = graphs.thread_text(graphs.ThreadCheck(2, 1, 1, _m(1.0e-3), _m(1.5e-3)))
    assert "threads are not the difference" in same and "not established" in same


def test_thread_check_reads_the_code_and_restores_threads() -> None:
    torch = pytest.importorskip("torch")
    from course_utils import models

    threads = torch.get_num_threads()
    check = graphs.thread_check(models.chain_for("torch"), (torch.ones(64), torch.ones(64)), min_time=0.004)
    assert check is not None and check.static_regions >= 0 and check.static_one.median > 0
    assert torch.get_num_threads() == threads


@pytest.mark.parametrize(("call", "name"), [
    (lambda: graphs.beat_text({}, {}), "eager"),
    (lambda: graphs.timed_pair(None, abs, (1,), label="x"), "eager"),
    (lambda: graphs.timed_pair(abs, abs, (1,), label=""), "label"),
    (lambda: graphs.xla_gap_text(None, _m(1.0), 4), "jax_call"),
    (lambda: graphs.xla_gap_text(_m(1.0), _m(1.0), 0), "size"),
    (lambda: graphs.first_compile_text(-1.0, {}, 1.0, {}), "first"),
    (lambda: graphs.first_compile_text(1.0, None, 1.0, {}), "first_cache"),
    (lambda: graphs.static_again_text(None, _m(1.0), 16), "first"),
    (lambda: graphs.dynamic_summary({}, 16, _m(1.0), _m(1.0), 64), "found"),
    (lambda: graphs.thread_text(3), "check"),
    (lambda: graphs.thread_check(None, ()), "chain"),
])
def test_bad_input_names_the_argument(call, name: str) -> None:
    with pytest.raises((TypeError, ValueError), match=name):
        call()
