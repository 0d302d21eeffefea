"""Notebook 00's predictions, each declared once: one sentence per outcome its checks can reach. The notebook scores
them (``DISPATCH.score(...)``) and shows ``v.prose()``; the core writes every number and direction word."""

from __future__ import annotations

from course_utils.findings import Template

DISPATCH = Template(
    "measuring.dispatch", ("above", "within"),
    held="Each call that returns before its result exists came back in under a third of the time its result took: a "
         "clock read at return measures the queueing, not the work. Each call that computes first read the same on "
         "both clocks, within 10%.",
    above="{failed}: the clock at ready ran more than 10% past the clock at return, though on a CPU this call "
          "computes before returning: what ran between the return and the ready clock (the wait call itself, or "
          "work left running) took more than a tenth of the call.",
    below="{failed}: the time until ready over the time until return came out below the predicted range: the call "
          "spent more than a third of its time before returning, so a clock read at return missed less of the work "
          "than the dispatch model predicts.",
    undecided="{undecided}: the interval straddles its bound, so this run cannot tell on which side the ratio lies.",
    untested="{why}: every call here computes before it returns, so both clocks read the work; on JAX or a GPU the "
             "trap shows.")

_CACHE = (" torch.compile's cache on disk: {cache} (warm: every graph was found in the cache an earlier run left; "
          "cold: code generated in this run; unknown: no compile counted); notebook 01 measures a cold cache against "
          "a warm one.")
FIRST_CALL = Template(
    "measuring.first_call", ("above",),
    held="The first compiled call, reported apart and never averaged in, cost at least 3x a steady call in every "
         "framework, and afterwards every compiled chain beat its own eager one." + _CACHE,
    below="Below the prediction: {failed}. A first call under 3x a steady one means compiling cost little next to "
          "one call of this size; a compiled chain slower than its own eager one means compiling did not pay on this "
          "chain here." + _CACHE,
    undecided="{undecided}: on its bound, or its interval across it, so this run cannot tell which side of the bound "
              "it lies on." + _CACHE)

SWEEP = Template(
    "measuring.sweep", ("true", "above"),
    held="Every variant bent inside the sweep and climbed with a top slope of 0.7 or more: below its bend the call's "
         "overhead sets the time, past it the bytes do.",
    failed="{failed}: false, so each such variant never reached twice its floor inside the sweep: at every size "
           "measured its call's overhead outweighed its bytes.",
    below="{failed}: under 0.7, so twice the bytes at the top of the sweep cost less than 2^0.7 (about 1.6x) the "
          "time: the top did not show the bandwidth regime's slope (the overhead still counts there, a cache serves "
          "the data, or the timing is noisy).",
    undecided="{undecided}: this run cannot tell on which side of 0.7 the top slope lies.")

_MATMUL = (" Section 2's matmul ran at {rate}; torch's own matmul probe (the same library, at the "
           "probe's size) at {probe}; the compute roof drawn ({roof}) is {roof_rate}.")
ROOFLINE = Template(
    "measuring.roofline", ("below", "above"),
    held="A thousand times the bytes cost the add under half again its time: at that size the call's overhead "
         "dominates. The matmul reached over half of torch's own probe." + _MATMUL,
    above="{failed}: above 1.5x, so a thousand times the bytes already cost the add half again its time: at 4,096 "
          "elements the bytes count beside the call's overhead." + _MATMUL,
    below="{failed}: under half, so the same library ran section 2's product at under half the rate of its own "
          "probe." + _MATMUL,
    undecided="{undecided}: on its bound, or its interval across it, so this run cannot tell which side of the bound "
              "it lies on." + _MATMUL)

_DRIFT = (" Re-timed in the same rounds, torch's copy probe ran at {probe_rate}, and at {earlier} when the roofs "
          "were measured ({drift}x): a roof carries the moment it was measured at.")
_WHERE = (" Main memory here: the working sets {basis}; the OS reports a last-level cache of {reported}, a second "
          "fact (a VM may report its host's cache) that decides nothing here.")
MEMORY = Template(
    "measuring.memory", ("true", "within"),
    held="The probes' working set ({probe_set}) lies in main memory as the sweep found it, and the memory roof lies "
         "within 1.3x of the plateau there ({plateau}): it is main memory's speed." + _WHERE + _DRIFT,
    failed="{failed}: false, so the probes' working set ({probe_set}) lies short of main memory, which the sweep "
           "places at the working sets {basis}: the memory roof is the speed of the level that holds it, not main "
           "memory's.",
    above="The memory roof lies more than 1.3x above the main-memory plateau ({plateau}): the probes ran faster than "
          "main memory gave in the sweep's rounds (from a cache, or at a faster moment); which, this run does not "
          "establish." + _WHERE + _DRIFT,
    below="The memory roof lies more than 1.3x below the main-memory plateau ({plateau}): the probes ran slower than "
          "main memory gave in the sweep's rounds; why, this run does not establish." + _WHERE + _DRIFT,
    undecided="{undecided}: this run cannot tell whether the roof lies within 1.3x of the plateau." + _WHERE + _DRIFT,
    untested="The memory roof is not compared with main memory here: {why}." + _WHERE)
