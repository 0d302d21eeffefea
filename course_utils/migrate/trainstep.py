"""The pieces of ``assess``'s training step shared by the parent's probe and the fresh processes: the default loss,
moving a batch to the device, calling the model on its inputs, and the optimizer named in the config."""

from __future__ import annotations

from typing import Any

from course_utils import validate

OPTIMIZERS = ("sgd", "adam", "adamw")


def default_loss(outputs: Any, targets: Any) -> Any:
    """Cross-entropy; outputs with the classes last (tokens: batch x length x vocabulary) are flattened first."""
    import torch.nn.functional as F

    if outputs.dim() > 2 and outputs.dim() == targets.dim() + 1 and outputs.shape[:-1] == targets.shape:
        outputs, targets = outputs.reshape(-1, outputs.shape[-1]), targets.reshape(-1)
    return F.cross_entropy(outputs, targets)


def to_device(value: Any, device: Any) -> Any:
    """Tensors in ``value`` (a tensor, or lists, tuples and dicts of them) moved to ``device``."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device, non_blocking=True)
    if isinstance(value, (list, tuple)):
        return type(value)(to_device(v, device) for v in value)
    if isinstance(value, dict):
        return {k: to_device(v, device) for k, v in value.items()}
    return value


def call(model: Any, inputs: Any) -> Any:
    """``model(inputs)``; a tuple or list of inputs is passed as positional arguments, a dict as keywords."""
    if isinstance(inputs, (list, tuple)):
        return model(*inputs)
    if isinstance(inputs, dict):
        return model(**inputs)
    return model(inputs)


def optimizer_for(params: Any, name: str, lr: float) -> Any:
    """``torch.optim.SGD``, ``Adam`` or ``AdamW`` over ``params`` at learning rate ``lr``."""
    import torch

    name = validate.choice("optimizer", name, OPTIMIZERS)
    return {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[name](
        params, lr=validate.positive("lr", lr))
