"""Notebook 02's predictions, each declared once: one sentence per outcome its checks can reach. The notebook scores
them (``cu.fusion.findings.CHAIN.score(...)``) and shows ``v.prose()``; the core words every number and direction."""

from __future__ import annotations

from course_utils.findings import Template

RIDGE = Template(
    "fusion.ridge", ("above",),
    held="A kernel must do about {ridge} FLOPs per byte it moves before arithmetic, not memory, limits it: every "
         "elementwise op is memory-bound by this measure, and a square fp32 matmul (n/6 FLOP/byte) crosses the ridge "
         "at n ≈ {matmul_n} (section 6).",
    below="{failed} lies under 1 FLOP/byte: even a low-intensity kernel can be compute-bound on this machine, so "
          "measure before assuming.",
    undecided="{undecided} sits on 1 FLOP/byte: this run cannot tell memory-bound from compute-bound there.")

CHAIN = Template(
    "fusion.chain", ("within",),
    held="Fusion paid in every framework, and no speed-up went beyond the {ratio} bytes ratio. A speed-up under "
         "the ratio means the fused kernel reached a smaller share of the memory roof than its eager version (the "
         "table's % of bandwidth): it did not run as much faster as its bytes allow. Section 5 looks for what else a "
         "fused kernel pays.",
    above="{failed} ran faster than the {ratio} bytes ratio allows: the eager run paid more than its bytes (a "
          "smaller share of the roof than the fused one), so the ratio was no ceiling there. Section 3 measures what "
          "eager pays besides bytes.",
    below="{failed} ran slower fused than eager: there fusion cost time, which this run does not explain.",
    undecided="For {undecided} the interval reaches across 1x or across the {ratio} bytes ratio: this run "
              "cannot tell on which side it lies.")

ALLOCATION = Template(
    "fusion.allocation", ("above", "within"),
    held="A fresh output cost about the page-fault probe's price for its {pages} pages, {price}: faults and "
         "zero-filling, paid inside the kernel, which a reused buffer does not pay.",
    above="{failed} came out above its bound: a fresh output cost more than twice the probe's {price} for its "
          "{pages} pages. The probe times one thread faulting in an array it had already mapped; candidates for the "
          "rest, none timed apart here: mapping, unmapping and freeing the buffer on every call (`mmap`, `munmap`), "
          "and faults taken from several threads at once, which contend for the process's page tables.",
    below="{failed} came out below its bound: the page counts above show whether this call touched fresh pages at "
          "all. Candidates where a fresh output costs under half the probe's {price} for its {pages} pages, none "
          "timed apart here: huge pages backing the buffer (one fault per 2 MiB, not per 4 KiB), and faults taken in "
          "parallel by several threads, each paying a share of the time.",
    undecided="{undecided}: the interval reaches across its bound, so this run cannot tell whether a fresh output "
              "costs its page faults here.",
    untested="The price of a fresh output was not tested here: {why}.")

BUFFER = Template(
    "fusion.buffer", ("above", "within"),
    held="The buffer paid exactly where fresh pages were being paid for, and stayed within the 10% margin where "
         "they were not: a reused buffer removes the page faults, nothing else.",
    above="{failed}, whose fresh output took no page faults, still ran more than 10% faster into the buffer: the "
          "buffer saves something besides page faults there, not established by this run.",
    below="{failed} ran slower into the buffer than with a fresh output: what else the buffered version costs there, "
          "a copy or a slower store, is not established by this run.",
    undecided="For {undecided} the interval reaches across its bound (1x where the fresh output faulted, the 10% "
              "margin where it did not): this run cannot tell whether the buffer paid there.")

KERNELS = Template(
    "fusion.kernels", ("equal",),
    held="The {n_ops} eager kernels became one in each compiler. Inductor's `{first_kernel}` names the op types it "
         "fused; XLA's `kLoop` is a loop fusion.",
    above="{failed} split the chain into several kernels: the launch code and HLO above show where.",
    below="{failed} shows no fused kernel for the chain: the launch code and HLO above show what ran instead.")

ROOF = Template(
    "fusion.roof", ("within", "above"),
    held="**On the roof**, as far as a copy of the same bytes shows the roof in this run, and `tanh` costs time on "
         "top: a fresh output and the arithmetic of `tanh` are what a fused kernel pays besides its bytes, and the "
         "bytes ratio of section 2 counts neither. Going further measures the vector units' rates.",
    above="{failed} ran more than 1.25x faster than the copy of the same bytes: the copy is no roof for it here, "
          "which this run does not explain.",
    below="{failed} came out below its bound: either the polynomial ran more than 1.25x slower than its copy (its "
          "arithmetic or its stores cost time even without `tanh`) or `tanh` added no time.",
    undecided="For {undecided} the interval reaches across its bound: this run cannot tell whether that chain sits "
              "on its roof, or what its `tanh` costs.")

#: the paragraph after section 5's verdict, whatever its outcome: the working set against the last-level cache
WORKING_SET = ("Every variant here moves {working} in and out, against a last-level cache of {cache}: where the data "
               "fits, the roof it meets is the cache's as much as memory's.")

_WHICH = (", measured at another moment of this run; one of the two is off by more than the margin, and this run "
          "does not establish which.")
SWEEP = Template(
    "fusion.sweep", ("within",),
    held="The sweep's largest matmul and torch's probe of the same size ran at the same rate within 20%: the sweep "
         "and the machine figures agree.",
    above="{failed}: the same matmul ran faster than torch's probe" + _WHICH,
    below="{failed}: the same matmul ran slower than torch's probe" + _WHICH,
    undecided="{undecided} sits on an edge of the margin: this run cannot tell whether the two rates agree.")

EPILOGUE = Template(
    "fusion.epilogue", ("above",),
    held="Fusing the epilogue paid in every framework; the matmul itself is untouched: fusion is a lever for the "
         "memory-bound work around a matmul, not for the matmul.",
    below="{failed}: the fused epilogue ran slower than the eager one; why is not established by this run.",
    undecided="{undecided}: this run does not separate the two epilogues there.")

CUSTOM_OP = Template(
    "fusion.custom_op", ("true", "equal"),
    held="Dynamo split the legacy chain at {breaks} breaks (first reason: *{reason}*); registered as a custom op it "
         "compiles to **one graph** with two fused kernels around the opaque call. That one graph is what "
         "registration buys for certain; its speed-up over the broken version: {gain}.",
    failed="{failed}: Dynamo traced the legacy chain without splitting it here, so there was no break to remove.",
    above="{failed} came out above the prediction: the graph counts and the launch code above show where the "
          "registered chain was split further.",
    below="{failed} came out below the prediction: the counts above show which graphs or kernels are missing.")

ATTENTION = Template(
    "fusion.attention", ("above", "below"),
    held="FlexAttention never held the whole score matrix in memory, and it ran faster than the unfused version, "
         "eager and compiled. "
         "That it skips the masked blocks is its design, not something this run observed: the block mask says which "
         "blocks exist, and the table above counts the bytes of those it visits.",
    above="{failed} came out above its bound: FlexAttention's peak did not stay under one score matrix here.",
    below="{failed} came out below its bound: the unfused version's peak stayed under one score matrix, or "
          "FlexAttention ran slower than an unfused version.",
    undecided="{undecided}: the interval reaches across 1x, so this run cannot tell which version is faster.",
    untested="Peak memory was not tested here: {why}.")

BUSY = Template(
    "fusion.busy", ("above",),
    held="Busy time: {busy}, above 80%; the same kernels moved their bytes at {shares} of the memory roof.",
    below="Busy time: {busy}; the same kernels moved their bytes at {shares} of the memory roof.",
    undecided="Busy time: {busy}; {undecided} sits on 80%.",
    untested="Busy time of three back-to-back calls: {busy}. The same default kernels moved their bytes at {shares} "
             "of the memory roof (section 2). A kernel of milliseconds between calls of microseconds keeps busy time "
             "near 100% whether it runs on its roof or far below it: busy time does not separate the two, a share "
             "of a roof does. So the seed's 80%+ is not testable with these kernels, and a busy-time figure alone "
             "says little about speed.")

VECTOR_ROOF = Template(
    "fusion.vector_roof", ("above", "below"),
    held="Each chain took between its roof and its parts added up: the two limits explain its time.",
    above="Outside the model in {failed}: each took longer than its parts added up, so rates measured in cache at "
          "another moment do not predict that chain within these bounds.",
    below="Outside the model in {failed}: each ran faster than its roof allows, so rates measured in cache at another "
          "moment do not predict that chain within these bounds.",
    undecided="{undecided} sits on its bound: this run cannot tell whether the model holds there.")

SIZES = Template(
    "fusion.sizes", ("above",),
    held="At the smallest size eager pays dispatch per op and the fused chain pays it once: fusion gained at least as "
         "much there as at the full size.",
    below="Fusion gained less at the smallest size than at the full size ({full}) in {failed}. There one compiled "
          "call's fixed cost weighs against {n_ops} eager ops' dispatch; at the smallest size {smallest}. What else "
          "the fused call paid is not established by this run.",
    undecided="{undecided} gained the same at both sizes: this run cannot rank them.")
