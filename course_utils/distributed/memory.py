"""Model-state bytes per device under DDP and ZeRO stages 1-3 (computed, not measured)."""

from __future__ import annotations

from course_utils import validate


def memory_per_device(params: float, n: int, stage: int = 0, *, weight_bytes: float = 2, grad_bytes: float = 2,
                      optimizer_bytes: float = 12) -> float:
    """Bytes per device for weights + gradients + optimizer state under ZeRO ``stage`` 0-3 (3 = FSDP).

    Defaults: mixed-precision Adam, 16 bytes per parameter in all. Activations are not included: they depend
    on the batch, not on the sharding.
    """
    params = validate.non_negative("params", params)
    n = validate.number("n", n, low=1, integer=True)
    stage = validate.choice("stage", validate.number("stage", stage, integer=True), (0, 1, 2, 3))
    weight_bytes = validate.non_negative("weight_bytes", weight_bytes)
    grad_bytes = validate.non_negative("grad_bytes", grad_bytes)
    optimizer_bytes = validate.non_negative("optimizer_bytes", optimizer_bytes)
    opt = optimizer_bytes / (n if stage >= 1 else 1)
    grad = grad_bytes / (n if stage >= 2 else 1)
    weight = weight_bytes / (n if stage >= 3 else 1)
    return float(params * (opt + grad + weight))


def largest_model(device_bytes: float, n: int, stage: int = 0) -> float:
    """The most parameters whose model state fits in ``device_bytes`` per device (computed; no activations)."""
    device_bytes = validate.positive("device_bytes", device_bytes)
    return device_bytes / memory_per_device(1.0, n, stage)
