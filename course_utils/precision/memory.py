"""Bytes per parameter of weights, gradients and Adam state under fp32, mixed (fp32 master weights) and pure-bf16
training (computed, the ZeRO accounting); the measurements live in the core ``course_utils.memory``."""

from __future__ import annotations

from typing import Annotated, Literal

from course_utils import declare

# Bytes per parameter of each piece of training state, the standard accounting (ZeRO, Rajbhandari et al. 2020).
TRAINING_SCHEMES: dict[str, dict[str, int]] = {
    "fp32 + Adam": {"fp32 weights": 4, "fp32 gradients": 4, "Adam moments (fp32)": 8},
    "mixed + Adam, fp32 master": {"16-bit weights": 2, "16-bit gradients": 2, "fp32 master weights": 4,
                                  "Adam moments (fp32)": 8},
    "pure bf16 + Adam": {"16-bit weights": 2, "16-bit gradients": 2, "Adam moments (bf16)": 4},
}


@declare.checked
def training_memory(n_params: Annotated[int, declare.Range(0, 10**15)],
                    scheme: Literal["fp32 + Adam", "mixed + Adam, fp32 master", "pure bf16 + Adam"]) -> dict[str, int]:
    """Bytes of weights, gradients and Adam state for ``n_params`` parameters under ``scheme`` (computed)."""
    return {k: v * n_params for k, v in TRAINING_SCHEMES[scheme].items()}
