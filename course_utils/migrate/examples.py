"""The user's side of ``assess``: two models written as a user writes theirs, ``recipe``, and the checks and probe of
the user's 'package.module:function' paths (errors quote the user's own message)."""

from __future__ import annotations

import importlib
import math
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import Annotated, Any

from course_utils import calls, declare, env, fresh, models, pipeline, validate
from course_utils.declare import Range

BATCHES = 4  # distinct batches, read again in order (an epoch) for as many steps as a measurement takes
Size = Annotated[int, Range(1, 65_536)]


@declare.checked
def cnn() -> Any:
    """The course CNN, 10 classes."""
    return models.torch_cnn(classes=10)


@declare.checked
def cnn_batches(batch: Annotated[int, Range(1, 4096)] = 32, size: Annotated[int, Range(8, 1024)] = 64
                ) -> list[tuple[Any, Any]]:
    """``BATCHES`` batches of (images NCHW float32, labels int64); the data are not measured, so cheap to make."""
    import torch

    data = pipeline.SyntheticImages(BATCHES * batch, size=size, classes=10, work=0)
    out = []
    for i in range(BATCHES):
        x, y = data.batch(range(i * batch, (i + 1) * batch))
        out.append((torch.from_numpy(x), torch.from_numpy(y).long()))
    return out


@declare.checked
def transformer(vocab: Size = 256, dim: Size = 128, heads: Annotated[int, Range(1, 256)] = 4,
                length: Size = 128) -> Any:
    """One pre-norm transformer block between token embeddings and a vocabulary head."""
    import torch
    import torch.nn.functional as F

    if dim % heads:
        raise ValueError(f"dim must be a multiple of heads; got dim={dim}, heads={heads}")

    class Block(torch.nn.Module):
        def __init__(self, vocab: int, dim: int, heads: int, length: int) -> None:
            super().__init__()
            self.heads = heads
            self.embed = torch.nn.Embedding(vocab, dim)
            self.position = torch.nn.Parameter(0.02 * torch.randn(length, dim))
            self.norm1, self.norm2, self.norm3 = (torch.nn.LayerNorm(dim) for _ in range(3))
            self.qkv, self.proj = torch.nn.Linear(dim, 3 * dim), torch.nn.Linear(dim, dim)
            self.mlp = torch.nn.Sequential(torch.nn.Linear(dim, 4 * dim), torch.nn.GELU(),
                                           torch.nn.Linear(4 * dim, dim))
            self.head = torch.nn.Linear(dim, vocab)

        def forward(self, tokens: Any) -> Any:
            batch, length = tokens.shape
            x = self.embed(tokens) + self.position[:length]
            q, k, v = self.qkv(self.norm1(x)).view(batch, length, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
            attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(attended.transpose(1, 2).reshape(batch, length, -1))
            x = x + self.mlp(self.norm2(x))
            return self.head(self.norm3(x))

    return Block(vocab, dim, heads, length)


@declare.checked
def token_batches(vocab: Size = 256, length: Size = 128, batch: Annotated[int, Range(1, 4096)] = 16
                  ) -> list[tuple[Any, Any]]:
    """``BATCHES`` batches of (tokens, next tokens), int64 (batch x length), from a fixed random generator."""
    import torch

    generator = torch.Generator().manual_seed(0)
    out = []
    for _ in range(BATCHES):
        sequence = torch.randint(0, vocab, (batch, length + 1), generator=generator)
        out.append((sequence[:, :-1].contiguous(), sequence[:, 1:].contiguous()))
    return out


@declare.checked
def recipe(name: Annotated[str, declare.Matches(r"[a-z_][a-z0-9_]*", "a module name")], source: declare.Text
           ) -> ModuleType:
    """``source`` written to ``build/recipes/<name>.py`` and imported from there (the folder put on ``sys.path``,
    which ``assess`` passes to its fresh processes): a cell's own function, importable by name."""
    folder = env.build_dir("recipes")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(source.strip() + "\n")
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    importlib.invalidate_caches()
    return importlib.reload(sys.modules[name]) if name in sys.modules else importlib.import_module(name)


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


def blocks(model: Any) -> tuple[str, Any]:
    """(name, module) of the model's largest ``torch.nn.ModuleList``: a regional compile's blocks; else ValueError."""
    import torch

    found = [(n, m) for n, m in model.named_modules() if isinstance(m, torch.nn.ModuleList) and len(m)]
    if not found:
        raise ValueError("regional: the model holds no torch.nn.ModuleList of repeated blocks to compile one by one; "
                         "compile it whole (leave out --regional)")
    return max(found, key=lambda x: len(x[1]))


def call_factory(name: str, path: str, args: dict[str, Any] | None = None) -> Any:
    """Call the user's factory with ``args``; an exception in it is reported with its own message."""
    try:
        return fresh.function(name, path)(**(args or {}))
    except TimeoutError:
        raise
    except Exception as exc:  # the user's code: show its own message (ours already names the argument)
        if isinstance(exc, (TypeError, ValueError)) and str(exc).startswith(f"{name}:"):
            raise
        raise ValueError(f"{name}: {path}() raised {type(exc).__name__}: {exc}") from exc


@declare.checked
@dataclass(frozen=True)
class Probe:
    """What one eager training step on the first batch showed: FLOPs counted, parameters, the batch's shapes."""

    flops_per_step: float
    parameters: int
    batch: str
    loss: float
    blocks: str = ""  # regional compile: the ModuleList compiled block by block, and its length


def _shapes(value: Any) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        return f"{tuple(value.shape)} {str(value.dtype).removeprefix('torch.')}"
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(_shapes(v) for v in value) + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_shapes(v)}" for k, v in value.items()) + "}"
    return type(value).__name__


def user_model(path: str, args: dict[str, Any] | None = None) -> Any:
    """``make_model(**args)``, refused unless it is a ``torch.nn.Module`` with trainable parameters."""
    import torch

    model = call_factory("model", path, args)
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model: {path}() returned {type(model).__name__}, not a torch.nn.Module")
    if not any(p.requires_grad for p in model.parameters()):
        raise ValueError(f"model: {path}() returned a module with no trainable parameters")
    return model


def first_batch(path: str, args: dict[str, Any] | None = None) -> Any:
    """The first (inputs, targets) pair of ``make_batches(**args)``."""
    batches = call_factory("batches", path, args)
    if isinstance(batches, (str, bytes, dict)) or not hasattr(batches, "__iter__"):
        raise TypeError(f"batches: {path}() must return an iterable of (inputs, targets) such as a list or a "
                        f"DataLoader; got {type(batches).__name__}")
    try:
        batch = next(iter(batches))
    except StopIteration:
        raise ValueError(f"batches: {path}() yielded no batch") from None
    except TimeoutError:
        raise
    except Exception as exc:
        raise ValueError(f"batches: reading the first batch of {path}() raised {type(exc).__name__}: {exc}") from exc
    if isinstance(batch, (str, bytes)) or not isinstance(batch, (list, tuple)) or len(batch) != 2:
        raise TypeError(f"batches: each batch must be an (inputs, targets) pair; the first is {type(batch).__name__} "
                        f"{_shapes(batch)}")
    return batch


def cpu_attention_flops() -> dict[Any, Any]:
    """FLOP formulas for the CPU's attention kernels, which torch's counter does not know (it counted 0 FLOPs for
    ``scaled_dot_product_attention`` on a CPU): the formulas it applies to the GPU's attention kernels."""
    import torch
    from torch.utils import flop_counter

    aten = torch.ops.aten

    def forward(query: Any, key: Any, value: Any, *args: Any, **kwargs: Any) -> int:
        return flop_counter.sdpa_flop_count(query, key, value)

    def backward(grad_out: Any, query: Any, key: Any, value: Any, *args: Any, **kwargs: Any) -> int:
        return flop_counter.sdpa_backward_flop_count(grad_out, query, key, value)

    return {aten._scaled_dot_product_flash_attention_for_cpu: forward,
            aten._scaled_dot_product_flash_attention_for_cpu_backward: backward}


def probe(model_path: str, batches_path: str, loss_path: str | None, device: Any, *, timeout: float = 600.0,
          model_args: dict[str, Any] | None = None, batches_args: dict[str, Any] | None = None,
          regional: bool = False) -> Probe:
    """One eager training step on the first batch on ``device`` within ``timeout``, FLOPs counted (forward and
    backward, not the optimizer); ``regional``: the model must hold repeated blocks (``blocks``)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    with calls.time_limit(timeout, f"model/batches/loss: {model_path}(), {batches_path}() and one eager training step"):
        model = user_model(model_path, model_args)
        where = blocks(model) if regional else None
        batch = first_batch(batches_path, batches_args)
        loss_fn = default_loss if loss_path is None else fresh.function("loss", loss_path)
        model = model.to(device)
        inputs, targets = (to_device(v, device) for v in batch)
        try:
            with FlopCounterMode(display=False, custom_mapping=cpu_attention_flops()) as counter:
                loss = loss_fn(call(model, inputs), targets)
                loss.backward()
        except TimeoutError:
            raise
        except Exception as exc:  # the user's model or loss on the user's batch
            raise ValueError(f"model/batches/loss: one eager training step on the first batch {_shapes(batch)} raised "
                             f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from exc
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
            raise ValueError(f"loss: must return a scalar tensor; got {_shapes(loss)}")
        value = float(loss.detach())
        if not math.isfinite(value):
            raise ValueError(f"loss: the first step's loss is {value}; the model, batches or loss give no finite loss")
        params = sum(p.numel() for p in model.parameters())
        return Probe(float(counter.get_total_flops()), int(params), _shapes(batch), value,
                     "" if where is None else f"{where[0] or 'the model'} ({len(where[1])} blocks)")


def check_out(name: str, value: Any) -> Any:
    """The output folder: refused where it holds files of something else, or where its parent (or nearest existing
    ancestor) takes no new file: the report is written beside ``out`` and moved into place, so this is checked first."""
    import os
    import tempfile
    from pathlib import Path

    path = Path(validate.instance(name, value, (str, Path))).expanduser().resolve()
    if path.exists() and not path.is_dir():
        raise ValueError(f"{name}: {str(path)!r} is a file, not a folder")
    if path.exists() and any(path.iterdir()) and not (path / "report.json").exists():
        raise ValueError(f"{name}: {str(path)!r} holds other files; give an empty or new folder (a previous report "
                         "folder is replaced)")
    here = path.parent
    while not here.exists() and here != here.parent:
        here = here.parent
    if not here.is_dir():
        raise ValueError(f"{name}: {str(here)!r} is a file, so the report folder cannot be made under it")
    try:
        handle, probe = tempfile.mkstemp(prefix=".assess-write-check-", dir=here)
        os.close(handle)
        os.remove(probe)
    except OSError as exc:
        raise ValueError(f"{name}: cannot write in {str(here)!r} ({exc.strerror or exc}); give a folder you can "
                         "write") from None
    return path
