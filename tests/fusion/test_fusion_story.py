"""course_utils.fusion.story: every branch of every sentence notebook 02 tells, from made-up verdicts and
measurements (no timing runs here), each paragraph at most 120 words."""

from __future__ import annotations

import pytest

from course_utils import compiled, display, intervals, machine, probes, roofline, timing
from course_utils.fusion import story
from course_utils.fusion import story_words as w
from course_utils.fusion.attention import AttentionBytes
from course_utils.fusion.sweep import SizeSweep
from course_utils.fusion.traffic import compare_to_prediction, trace_traffic
from course_utils.fusion.vector_roof import ChainRoof, VectorRoof

torch = pytest.importorskip("torch")

HELD = display.Verdict("held", "numbers")
FAILED = display.Verdict("failed", "numbers", "what happened instead")
UNTESTED = display.Verdict("not tested", "", "no such device here")
MS = 1e-3


def text(prose: display.Prose) -> str:
    assert isinstance(prose, display.Prose)
    assert prose.longest_paragraph <= display.MAX_PARAGRAPH_WORDS, prose.text
    return prose.text


def gain(ratio: float, low: float, high: float, name: str = "x") -> intervals.Speedup:
    return intervals.Speedup("base", name, ratio, low, high, 4, "rounds")


FASTER, SLOWER, NOISE = gain(3.0, 2.5, 3.5), gain(0.5, 0.4, 0.6), gain(1.05, 0.9, 1.2)


def m(label: str, *times_ms: float) -> timing.Measurement:
    return timing.Measurement.from_times(label, [t * MS for t in times_ms])


def figures(*, torch_flops: float = 4e11, device: str = "cpu") -> machine.MachineFigures:
    roofs = {"torch": roofline.Machine("torch", device, {"triad": 5e10}, {"matmul fp32 n=1024": torch_flops}),
             "jax": roofline.Machine("jax", device, {"triad": 4e10}, {"matmul fp32 n=1024": 4e11})}
    return machine.MachineFigures("k", roofs, 2e-10, {"torch": 2e-5, "jax": 8e-6}, "2026-12-03T10:00:00", "measured")


TRAFFIC = trace_traffic(lambda x, b: (x + b) * 2 + 1, ((64, 32), "float32"), ((32,), "float32"))
TABLE = compare_to_prediction(TRAFFIC, figures().best, unfused={"torch eager": 1e-3, "jax op-by-op": 2e-3},
                              fused={"torch.compile": 1e-4, "jax.jit": 2e-4})
GAINS = {"torch": FASTER, "jax": FASTER}


# ---------------------------------------------------------------------------------------------------------
# section 1


@pytest.mark.parametrize(("v", "said"), [(HELD, "every elementwise op is memory-bound"),
                                         (FAILED, "can be compute-bound"), (UNTESTED, "was not tested here")])
def test_roofline_reads_the_verdict(v: display.Verdict, said: str) -> None:
    found = text(story.roofline(v, figures(), probes.ProbeSize(2**30, 2**25, 2**27)))
    assert said in found and "ridge point" in found.lower()


def test_roofline_says_what_the_probes_streamed() -> None:
    main = text(story.roofline(HELD, figures(), probes.ProbeSize(2**28, 2**25, 2**27)))
    assert "8x the 32 MiB last-level cache" in main and "main memory." in main
    cached = text(story.roofline(HELD, figures(), probes.ProbeSize(2**28, 480 * 2**20, 2**31, "ci size")))
    assert "(capped at this course size)" in cached and "a blend of cache and memory bandwidth" in cached
    unknown = text(story.roofline(HELD, figures(), probes.ProbeSize(2**28, 0, 2**26)))
    assert "reports no cache size" in unknown
    gpu = text(story.roofline(HELD, figures(device="cuda:0"), probes.ProbeSize(2**30, 2**25, 2**30)))
    assert "On cuda:0" in gpu and "device memory" in gpu


# ---------------------------------------------------------------------------------------------------------
# section 2


def test_chain_gains_held_says_the_fused_kernels_stayed_under_the_ratio() -> None:
    found = text(story.chain_gains(HELD, GAINS, TRAFFIC, TABLE, over_ratio=[], not_faster=[]))
    assert "no speed-up went beyond the bytes ratio" in found and "torch.compile 3x" in found


def test_chain_gains_names_what_beat_the_ratio_and_what_was_not_faster() -> None:
    over = text(story.chain_gains(FAILED, GAINS, TRAFFIC, TABLE, over_ratio=["torch"], not_faster=[]))
    assert "torch.compile ran faster than the" in over and "Section 3" in over and "not faster" not in over
    slow = text(story.chain_gains(FAILED, {"torch": FASTER, "jax": NOISE}, TRAFFIC, TABLE, over_ratio=[],
                                  not_faster=["jax"]))
    assert "jax.jit was not faster than eager" in slow and "ran faster than the" not in slow
    both = text(story.chain_gains(FAILED, {"torch": FASTER, "jax": NOISE}, TRAFFIC, TABLE, over_ratio=["torch"],
                                  not_faster=["jax"]))
    assert "torch.compile ran faster" in both and "jax.jit was not faster" in both
    assert "was not tested here" in text(story.chain_gains(UNTESTED, GAINS, TRAFFIC, TABLE, over_ratio=[],
                                                           not_faster=[]))


# ---------------------------------------------------------------------------------------------------------
# section 3

FAULTS = {"torch eager chain": 11 * 8192, "torch.compile chain": 8192, "torch.add, out= buffer": 0}


@pytest.mark.parametrize(("v", "said"), [(HELD, "`mmap`, `munmap`"), (FAILED, "cost less than the probe's price"),
                                         (UNTESTED, "was not tested here")])
def test_allocation_reads_the_verdict(v: display.Verdict, said: str) -> None:
    found = text(story.allocation(v, FASTER, extra=9 * MS, fault_cost=2 * MS, faults=FAULTS, pages=8192, n_ops=11))
    assert said in found and "11.0 outputs' worth" in found


def test_allocation_says_whether_eager_paid_fresh_pages_per_op() -> None:
    paid = text(story.allocation(HELD, FASTER, extra=9 * MS, fault_cost=2 * MS, faults=FAULTS, pages=8192, n_ops=11))
    assert "it pays fresh pages per op" in paid and "4.5x that" in paid
    reused = dict(FAULTS, **{"torch eager chain": 0})
    found = text(story.allocation(HELD, FASTER, extra=9 * MS, fault_cost=0, faults=reused, pages=8192, n_ops=11))
    assert "mostly reused its pages" in found and "infx" in found


def test_remedies_read_the_verdict_and_name_a_framework_without_faults() -> None:
    gains = {"torch": FASTER, "tensorflow": NOISE}
    fresh, into = {"torch": 1.0, "tensorflow": 0.0}, {"torch": 0.0, "tensorflow": 0.0}
    held = text(story.remedies(HELD, gains, faulted=["torch"], fresh_faults=fresh, into_faults=into))
    assert "exactly where fresh pages" in held and "tensorflow, whose fresh outputs landed" in held
    assert "within the noise" in held and "3x faster" in held
    alone = text(story.remedies(HELD, {"torch": FASTER}, faulted=["torch"], fresh_faults=fresh, into_faults=into))
    assert "whose fresh outputs" not in alone
    assert "not established" in text(story.remedies(FAILED, gains, faulted=["torch"], fresh_faults=fresh,
                                                    into_faults=into))
    assert "was not tested here" in text(story.remedies(UNTESTED, gains, faulted=[], fresh_faults=fresh,
                                                        into_faults=into))


# ---------------------------------------------------------------------------------------------------------
# sections 4 and 5


@pytest.mark.parametrize(("v", "said"), [(HELD, "names the op types"), (FAILED, "where the chain was split"),
                                         (UNTESTED, "was not tested here")])
def test_kernels_read_the_verdict(v: display.Verdict, said: str) -> None:
    found = text(story.kernels(v, {"torch.compile": 1, "jax.jit": 1}, n_ops=11, first_kernel="cpp_fused_0"))
    assert said in found and "TORCH_LOGS=output_code" in found


ROOF_TABLE = compare_to_prediction(TRAFFIC, figures().best, fused={"torch copy, same bytes": 1e-4,
                                                                   "torch.compile, out=, no tanh": 1.1e-4})


@pytest.mark.parametrize(("v", "said"), [(HELD, "**On the roof**"), (FAILED, "Not every polynomial"),
                                         (UNTESTED, "was not tested here")])
def test_on_roof_reads_the_verdict(v: display.Verdict, said: str) -> None:
    found = text(story.on_roof(v, {"torch": NOISE}, {"torch": FASTER}, table=ROOF_TABLE, chain_gains={"torch": FASTER},
                               ratio=13.0, working_set=2**26, llc=2**25))
    assert said in found and "3x faster" in found and "13.0x" in found and "served from cache" in found


# ---------------------------------------------------------------------------------------------------------
# section 6

POINTS = [roofline.Point(f"mm n={n}", 2 * n**3, 12 * n * n, 2 * n**3 / 2e11) for n in (16, 1024)]


@pytest.mark.parametrize(("v", "said"), [(HELD, "agree"), (FAILED, "does not establish which"),
                                         (UNTESTED, "was not tested here")])
def test_matmul_sweep_reads_the_verdict(v: display.Verdict, said: str) -> None:
    found = text(story.matmul_sweep(v, POINTS, figures(), to_probe=0.95, cpu="Intel Xeon"))
    assert said in found and "n ≈" in found


def test_matmul_sweep_sets_torchs_probe_against_the_best() -> None:
    amd = text(story.matmul_sweep(HELD, POINTS, figures(torch_flops=2e11), to_probe=1.0, cpu="AMD EPYC"))
    assert "50% of the best framework's" in amd and "MKL_VERBOSE=1" in amd
    intel = text(story.matmul_sweep(HELD, POINTS, figures(torch_flops=2e11), to_probe=1.0, cpu="Intel Xeon"))
    assert "50% of the best" in intel and "MKL" not in intel
    close = text(story.matmul_sweep(HELD, POINTS, figures(), to_probe=1.0, cpu="AMD EPYC"))
    assert "reached within 1.25x of the best" in close


@pytest.mark.parametrize(("v", "said"), [(HELD, "paid in every framework"), (FAILED, "does not separate"),
                                         (UNTESTED, "was not tested here")])
def test_epilogue_reads_the_verdict(v: display.Verdict, said: str) -> None:
    found = text(story.epilogue(v, {"torch": FASTER, "jax": NOISE}, {"torch": gain(1.2, 1.1, 1.3), "jax": NOISE},
                                extern=["mm"], kernels=["cpp_fused_0"], xla="YNNPACK"))
    assert said in found and "1.2x in torch (beyond the noise)" in found and "1.05x in jax (within the noise)" in found


def test_epilogue_without_jax_says_nothing_of_xla() -> None:
    found = text(story.epilogue(HELD, {"torch": FASTER}, {"torch": NOISE}, extern=[], kernels=["a", "b"], xla=None))
    assert "XLA" not in found and "no library" in found and "2 generated kernels" in found


# ---------------------------------------------------------------------------------------------------------
# sections 7 and 8


class Breaks:
    graph_count, break_count, reasons = 4, 3, ("Unsupported ndarray attribute access",)


HLO = compiled.hlo_summary("HloModule m\n\nENTRY %main (x: f32[2]) -> f32[2] {\n"
                           "  %f = f32[2]{0} fusion(%x), kind=kLoop, calls=%c\n"
                           "  %cb = f32[2]{0} custom-call(%f), custom_call_target=\"cb\"\n"
                           "  ROOT %g = f32[2]{0} fusion(%cb), kind=kLoop, calls=%d\n}\n")


@pytest.mark.parametrize(("v", "said"), [(HELD, "**one graph**"), (FAILED, "differ from the prediction"),
                                         (UNTESTED, "was not tested here")])
def test_custom_op_reads_the_verdict(v: display.Verdict, said: str) -> None:
    found = text(story.custom_op(v, Breaks(), NOISE, kernels=2, callback=HLO, tf_refusal="InvalidArgumentError"))
    assert said in found and "**4 graphs**" in found and "2 fusions around 1 host callback" in found
    assert "InvalidArgumentError" in found


@pytest.mark.parametrize(("g", "said"), [(FASTER, "saved the glue"), (SLOWER, "slower beyond the noise"),
                                         (NOISE, "dominates the time")])
def test_custom_op_reads_the_interval(g: intervals.Speedup, said: str) -> None:
    found = text(story.custom_op(HELD, Breaks(), g, kernels=2, callback=None, tf_refusal=None))
    assert said in found and "JAX" not in found and "TensorFlow" not in found


def test_custom_op_wants_a_graph_break_count() -> None:
    with pytest.raises(TypeError, match="breaks"):
        story.custom_op(HELD, object(), NOISE, kernels=2, callback=None, tf_refusal=None)


COUNTS = AttentionBytes(16 * 2**20, 4 * 2**20, 6 * 2**20, 36, 64)
ATTENTION = trace_traffic(lambda q, k: torch.softmax(q @ k.transpose(-2, -1), -1), ((1, 4, 1024, 64), "float32"),
                          ((1, 4, 1024, 64), "float32"))
PEAKS = {"FlexAttention, compiled": 2**20, "unfused attention": 40 * 2**20}


@pytest.mark.parametrize(("v", "said"), [(HELD, "never reached memory"), (FAILED, "The prediction failed"),
                                         (UNTESTED, "was not tested here")])
def test_attention_reads_the_verdict(v: display.Verdict, said: str) -> None:
    found = text(story.attention(v, FASTER, peaks=PEAKS, counts=COUNTS, traffic=ATTENTION, xla_plan=None,
                                 jax_gain=None))
    assert said in found and "36 of 64 block pairs" in found and "XLA" not in found


def test_attention_says_whether_xla_wrote_the_scores() -> None:
    wrote = text(story.attention(HELD, FASTER, peaks=PEAKS, counts=COUNTS, traffic=ATTENTION,
                                 xla_plan={"temp": 32 * 2**20}, jax_gain=FASTER))
    assert "2.0 score matrices" in wrote and "writes the scores to memory" in wrote and "3x faster" in wrote
    kept = text(story.attention(HELD, FASTER, peaks=PEAKS, counts=COUNTS, traffic=ATTENTION,
                                xla_plan={"temp": 2**20}, jax_gain=None))
    assert "did not keep the whole matrix" in kept and "unfused torch" not in kept


# ---------------------------------------------------------------------------------------------------------
# Going further


def test_busy_time_says_why_it_cannot_be_tested_and_what_a_roof_share_says() -> None:
    found = text(story.busy_time(UNTESTED, {"torch.compile": 0.987}, TABLE))
    assert "98.7%" in found and "not testable" in found and "torch.compile 15%" not in found
    assert "Scored above" in text(story.busy_time(HELD, {"torch.compile": 0.987}, TABLE))


ROOFS = {"torch": VectorRoof(2.4e11, 1.6e9, 2**20, "torch", 3e-8, None, 3e-5),
         "jax": VectorRoof(2e11, 7e9, 2**20, "jax", 3e-7, None, 1.6e-5)}


@pytest.mark.parametrize(("v", "said"), [(HELD, "the two limits explain"), (FAILED, "Outside the model"),
                                         (UNTESTED, "was not tested here")])
def test_vector_roof_reads_the_verdict(v: display.Verdict, said: str) -> None:
    limits = {"torch": ChainRoof(22e-3, 5e-3), "jax": ChainRoof(4e-3, 5e-3)}
    found = text(story.vector_roof(v, ROOFS, limits, call_cost={"torch": 2e-5, "jax": 8e-6}))
    assert said in found and "compute-bound on a CPU" in found and "30 µs" in found and "20 µs" in found


def test_vector_roof_without_an_arithmetic_limit_does_not_call_it_compute_bound() -> None:
    limits = {"torch": ChainRoof(2e-3, 5e-3), "jax": ChainRoof(1e-3, 5e-3)}
    assert "compute-bound" not in text(story.vector_roof(HELD, ROOFS, limits, call_cost={}))


SWEEP = SizeSweep((4, 64), {"torch": [m("e", 0.03), m("e", 0.1)]}, {"torch": [m("f", 0.02), m("f", 0.02)]},
                  {"torch": True}, {"torch": 2})


@pytest.mark.parametrize(("v", "said"), [(HELD, "fusion gained most there"), (FAILED, "7.3 eager ops' worth"),
                                         (UNTESTED, "was not tested here")])
def test_size_sweep_reads_the_verdict(v: display.Verdict, said: str) -> None:
    found = text(story.size_sweep(v, SWEEP, lost=["torch"], n_ops=11, call_cost={"torch": 1.5e-5}))
    assert said in found and "1.5x → 5x" in found


def test_size_sweep_without_a_call_cost_leaves_it_out() -> None:
    found = text(story.size_sweep(FAILED, SWEEP, lost=["torch"], n_ops=11, call_cost={}))
    assert "machine figures" not in found and "20 µs" in found and "larger than one eager op's" in found


def test_size_sweep_does_not_blame_the_call_cost_for_a_call_far_above_it() -> None:
    found = text(story.size_sweep(FAILED, SWEEP, lost=["torch"], n_ops=11, call_cost={"torch": 1e-6}))
    assert "20x what a compiled call costs" in found and "not established" in found and "larger than" not in found


def test_size_sweep_says_when_the_fused_call_was_cheaper_than_one_eager_op() -> None:
    cheap = SizeSweep((4, 64), {"torch": [m("e", 0.3), m("e", 1.0)]}, {"torch": [m("f", 0.02), m("f", 0.02)]},
                      {"torch": True}, {"torch": 2})
    found = text(story.size_sweep(FAILED, cheap, lost=["torch"], n_ops=11, call_cost={}))
    assert "0.7 eager ops' worth: less than one eager op" in found and "not established" in found


def test_autotuned_says_which_choice_won() -> None:
    template = compiled.InductorCode("cpp_fused_template_0 = async_compile.cpp_pybinding([], r'''\n''')\n"
                                     "def call(args):\n    cpp_fused_template_0(buf0)\n\n")
    assert "own GEMM template" in text(story.autotuned(template))
    library = compiled.InductorCode("cpp_fused_add_0 = async_compile.cpp_pybinding([], r'''\n''')\n"
                                    "def call(args):\n    buf0 = torch.ops.mkl._mkl_linear.default(x)\n"
                                    "    cpp_fused_add_0(buf0)\n\n")
    found = text(story.autotuned(library))
    assert "kept the library call here (`mkl._mkl_linear`)" in found and "cpp_fused_add_0" in found


# ---------------------------------------------------------------------------------------------------------
# the shared pieces, and bad arguments


def test_words_place_a_working_set_and_list_names() -> None:
    llc = 32 * 2**20
    assert "it fits" in w.working_set(16 * 2**20, llc)
    assert "2x the 32 MiB" in w.working_set(64 * 2**20, llc) and "served from cache" in w.working_set(2**26, llc)
    assert "streams from main memory" in w.working_set(256 * 2**20, llc)
    assert "no last-level cache" in w.working_set(2**20, None)
    assert w.listed([]) == "" and w.listed(["a"]) == "a" and w.listed(["a", "b", "c"]) == "a, b and c"
    assert w.outcome(SLOWER).startswith("2x slower") and w.outcome(NOISE).startswith("within the noise")


@pytest.mark.parametrize(("argument", "call"), [
    ("v", lambda: story.roofline("held", figures(), probes.ProbeSize(2**28, 2**25, 2**27))),
    ("figures", lambda: story.roofline(HELD, None, probes.ProbeSize(2**28, 2**25, 2**27))),
    ("gains", lambda: story.chain_gains(HELD, {}, TRAFFIC, TABLE, over_ratio=[], not_faster=[])),
    ("gains['torch']", lambda: story.chain_gains(HELD, {"torch": 3.0}, TRAFFIC, TABLE, over_ratio=[], not_faster=[])),
    ("over_ratio", lambda: story.chain_gains(HELD, GAINS, TRAFFIC, TABLE, over_ratio="torch", not_faster=[])),
    ("extra", lambda: story.allocation(HELD, FASTER, extra=float("nan"), fault_cost=1e-3, faults=FAULTS, pages=8,
                                       n_ops=11)),
    ("pages", lambda: story.allocation(HELD, FASTER, extra=1e-3, fault_cost=1e-3, faults=FAULTS, pages=0, n_ops=11)),
    ("faults['torch eager chain']", lambda: story.allocation(HELD, FASTER, extra=1e-3, fault_cost=1e-3, faults={},
                                                             pages=8, n_ops=11)),
    ("fresh_faults['torch']", lambda: story.remedies(HELD, {"torch": FASTER}, faulted=[], fresh_faults={},
                                                     into_faults={})),
    ("counts", lambda: story.kernels(HELD, {}, n_ops=11, first_kernel="k")),
    ("ratio", lambda: story.on_roof(HELD, {"t": NOISE}, {"t": NOISE}, table=ROOF_TABLE, chain_gains={"t": NOISE},
                                    ratio=-1, working_set=1, llc=1)),
    ("to_probe", lambda: story.matmul_sweep(HELD, POINTS, figures(), to_probe=float("inf"), cpu="x")),
    ("points", lambda: story.matmul_sweep(HELD, [], figures(), to_probe=1.0, cpu="x")),
    ("kernels", lambda: story.epilogue(HELD, GAINS, GAINS, extern=[], kernels="k", xla=None)),
    ("peaks['FlexAttention, compiled']", lambda: story.attention(HELD, FASTER, peaks={}, counts=COUNTS,
                                                                 traffic=ATTENTION, xla_plan=None, jax_gain=None)),
    ("busy['a']", lambda: story.busy_time(UNTESTED, {"a": 1.5}, TABLE)),
    ("limits['torch']", lambda: story.vector_roof(HELD, ROOFS, {}, call_cost={})),
    ("call_cost['torch']", lambda: story.size_sweep(HELD, SWEEP, lost=[], n_ops=11, call_cost={"torch": -1.0})),
    ("module", lambda: story.autotuned("def call(args): pass")),
])
def test_bad_arguments_are_refused_naming_them(argument: str, call) -> None:
    with pytest.raises((TypeError, ValueError)) as caught:
        call()
    assert argument in str(caught.value)
