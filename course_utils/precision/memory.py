"""Notebook 03's memory accounting: bytes per parameter of weights, gradients and Adam state under fp32, mixed
(fp32 master weights) and pure-bf16 training (computed, the standard ZeRO accounting).

The measurements (peak RSS, CUDA peak, XLA ``memory_analysis``, saved for backward, held state) live in the core
``course_utils.memory``; their names are re-exported here for the package's other files.
"""

from __future__ import annotations

from course_utils import validate

__all__ = ["TRAINING_SCHEMES", "training_memory"]

# Bytes per parameter of each piece of training state, the standard accounting (ZeRO, Rajbhandari et al. 2020).
TRAINING_SCHEMES: dict[str, dict[str, int]] = {
    "fp32 + Adam": {"fp32 weights": 4, "fp32 gradients": 4, "Adam moments (fp32)": 8},
    "mixed + Adam, fp32 master": {"16-bit weights": 2, "16-bit gradients": 2, "fp32 master weights": 4,
                                  "Adam moments (fp32)": 8},
    "pure bf16 + Adam": {"16-bit weights": 2, "16-bit gradients": 2, "Adam moments (bf16)": 4},
}


def training_memory(n_params: int, scheme: str) -> dict[str, int]:
    """Bytes of weights, gradients and Adam state for ``n_params`` parameters under ``scheme`` (computed)."""
    validate.non_negative("n_params", n_params, integer=True)
    validate.instance("scheme", scheme, str)
    validate.choice("scheme", scheme, TRAINING_SCHEMES)
    return {k: v * int(n_params) for k, v in TRAINING_SCHEMES[scheme].items()}
