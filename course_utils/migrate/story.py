"""Notebook 07's paragraphs that arrange several findings, and ``assess``'s blockers: each reads outcomes only."""

from __future__ import annotations

from course_utils import display
from course_utils.findings import Finding

COMPILES = ("`torch.compile` of the model compiles forward and backward and leaves the optimizer step eager; "
            "`jax.jit` and `tf.function(jit_compile=True)` compile the whole step, and each framework brings its own "
            "convolution kernels.")


def ladder_story(v_cheap: Finding, v_order: Finding) -> display.Prose:
    """Compile first against compile last, then what comes first in a plan (a paragraph each)."""
    return display.prose(v_order.sentence, v_cheap.sentence)


def frameworks_story(v_jax: Finding) -> display.Prose:
    """The seed's JAX claim, then what each framework's compiler covers."""
    return v_jax.prose(COMPILES)


def blockers(parity: Finding, fallback: Finding) -> list[str]:
    """What must be fixed before any migration, whatever the speed says: parity and the fallback, where they failed."""
    return [f.sentence for f in (parity, fallback) if f.failed]
