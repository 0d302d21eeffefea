"""Notebook 07's predictions and ``assess``'s report findings, each declared once: one sentence per outcome its
checks can reach. The cells (and ``report.findings``) score them on measured intervals; the core decides."""

from __future__ import annotations

from course_utils.findings import Template

_PLAN = "the migration is worth costing, after the cheap rungs."
CHEAP = Template(
    "migrate.cheap", ("above",),
    held="The cheap rungs together, {cheap}, gave more than compile on top of them, {last}: they come first in any "
         "plan.",
    below="Compile on top of the cheap rungs, {last}, gave more than the cheap rungs together, {cheap}, beyond the "
          "noise: " + _PLAN,
    undecided="This run cannot rank the cheap rungs together, {cheap}, against compile on top of them, {last}: the "
              "ratio of the two straddles 1x, and " + _PLAN)

_WAIT = "the baseline waited for data {wait} of each step"
_BARE = "; on the compute alone compile first gives {bare}."
_DIFFERS = " The credit depends on what else differs (batch, precision, the worker beside the model)."
ORDER = Template(
    "migrate.order", ("above",),
    held="**Compile, first and last.** Compile first, {first}, was credited with less than compile last, {last}: "
         + _WAIT + ", which no compiler shortens" + _BARE,
    below="**Compile, first and last.** Compile first, {first}, was credited with more than compile last, {last}, "
          "beyond the noise, although " + _WAIT + _BARE + _DIFFERS,
    undecided="**Compile, first and last.** This run cannot rank compile first, {first}, against compile last, "
              "{last}, although " + _WAIT + _BARE + _DIFFERS)

_EAGER = " Autocast is in eager PyTorch today: it needs no migration."
AMP = Template(
    "migrate.amp", ("above",),
    held="Mixed precision: {evidence}. The seed's ~30% held here across the whole interval." + _EAGER,
    below="Mixed precision: {evidence}. The whole interval lies under 1.25x: the seed's ~30% is not this hardware's."
          + _EAGER,
    undecided="Mixed precision: {evidence}. This run cannot tell whether autocast reaches the seed's ~30% here."
              + _EAGER,
    untested="This run says nothing about the seed's mixed-precision claim ({why}); the agreement check above "
             "still ran (emulated). On a GPU the tensor cores decide it, and the "
             "seed's 30% is a GPU number.")

_GAINS = "Across {processes} fresh processes each, compile bought the transformer block {block} and the CNN {cnn}"
MODELS = Template(
    "migrate.models", ("above",),
    held="**The gain differs per model.** " + _GAINS + ": the block's many small operations (layer norms, GELU, the "
         "attention's softmax) fuse, while the CNN's convolutions are library kernels either way.",
    below="**The gain differs per model, the other way.** " + _GAINS + ": the CNN gained more, beyond the noise, "
          "contrary to the prediction; the table's step times and MFU show where each model's time went.",
    undecided="**The gain per model.** " + _GAINS + ": this run cannot rank them ({processes} processes each give "
              "wide intervals; more would narrow them).")

_GAINS_SAME = ("The decision's gain, {assess} ({setup}), and the ladder's compile first on the compute alone, {bare} "
               "({bare_setup}), are this page's two figures without the loader's wait")
_GAINS_REST = (" The ladder's other figures add what the set-up adds: compile first with the wait for the loader, "
               "{first}, and compile last at the kept set-up ({kept}), {last}, which the waterfall draws.")
_SCOPE = (": besides any difference of set-up named, one process keeps its allocator, thread placement and generated "
          "code, so the decision rests on the fresh processes.")
GAINS = Template(
    "migrate.gains", ("within",),
    held="**One gain, four figures.** " + _GAINS_SAME + ", and they agree within a {margin} margin." + _GAINS_REST,
    above="**One gain, four figures.** " + _GAINS_SAME + "; fresh processes gave more, beyond a {margin} margin"
          + _SCOPE + _GAINS_REST,
    below="**One gain, four figures.** " + _GAINS_SAME + "; fresh processes gave less, beyond a {margin} margin"
          + _SCOPE + _GAINS_REST,
    undecided="**One gain, four figures.** " + _GAINS_SAME + "; at this run's spread they can neither be told apart "
              "nor declared equal within a {margin} margin, and the decision rests on the fresh processes."
              + _GAINS_REST)

DECISION = Template(
    "migrate.decision", ("above",),
    held="**Decision: migrate.** {evidence} (the bound: the break-even speed-up at these inputs). The whole interval "
         "lies above it, so the migration pays back within {horizon} months.",
    below="**Decision: do not migrate.** {evidence} (the bound: the break-even speed-up at these inputs, "
          "{break_even}). The whole interval lies below it.",
    undecided="**Decision: not decided: measure more.** {evidence} (the bound: the break-even speed-up at these "
              "inputs, {break_even}). The interval holds it, so this measurement cannot say on which side the gain "
              "lies: {next_step}.",
    untested="**No decision from this measurement:** {why}.")

QUIET = Template(
    "migrate.quiet", ("true",),
    held="The machine was quiet: {evidence} ({seen}).",
    failed="**No decision: the machine was busy:** {reason} ({seen}). Other work shared the "
           "cores, so the gain measured depends on that work; measure again on a quiet machine.")

COMPILED = Template(
    "migrate.compiled", ("true",),
    held="What was compiled, {mode}: {evidence} (Dynamo's own counter{reason}).",
    failed="**Decision: nothing to migrate: {reason}.** {failed} is false: the compiled variant ran eager, so its "
           "timings price no compiler and no speed-up is claimed. The compiler's hint is under the graph breaks "
           "below.")

PARITY = Template(
    "migrate.parity", ("true",),
    held="Parity, {precision}: {evidence}.",
    failed="Parity, {precision}: {failed} is false: a compiled model that trains differently must be fixed before "
           "any migration, whatever the speed says.")

FALLBACK = Template(
    "migrate.fallback", ("true",),
    held="A forced compile failure ({error}) rolled back to eager with torch.compiler.set_stance(\"force_eager\"): "
         "{evidence}.",
    failed="The rollback is not proven: {failed} is false ({error}); a compile that fails in production must fall "
           "back to eager before any migration.",
    untested="The rollback was not tested: {why}.")

_EXPLORE = (" While exploring, each edit compiles again: runs after an edit shorter than {seconds} are faster in "
            "eager (the seed's \"explore in eager, compile when mature\").")
RUN = Template(
    "migrate.run", ("true",),
    held="{evidence}, so compile it: at the median gain the job ends sooner compiled." + _EXPLORE,
    failed="{evidence}, so at the median gain such a job ends sooner eager." + _EXPLORE)

JAX = Template(
    "migrate.jax", ("true",),
    held="The seed's \"JAX is fastest\" held here, for this small CNN ({where}; compiled steps over PyTorch eager, "
         "ratio of medians: {ranking}).",
    failed="The seed's \"JAX is fastest\" is contradicted here, for this small CNN ({where}; compiled steps over "
           "PyTorch eager, ratio of medians: {ranking}); other devices and models were not tested by this run.",
    untested="The seed's \"JAX is fastest\" is not tested here: {why}.")

GATE_RULE = ("the gate fails only when the new interval lies wholly below the baseline's, i.e. the two intervals are "
             "disjoint with the new one lower")
_RULE = f" (the rule: {GATE_RULE})"
GATE = Template(
    "migrate.gate", ("above",),
    held="Regression gate passed: {evidence}, against {baseline}: the gain rose beyond the noise" + _RULE + ".",
    below="**Regression gate failed:** {evidence}, against {baseline}: the gain fell beyond both intervals" + _RULE
          + ".",
    undecided="Regression gate passed: {evidence}, against {baseline}: no change beyond the noise" + _RULE + ".")
