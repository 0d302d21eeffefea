"""Two models for ``assess``, written as a user writes theirs (a module with ``make_model`` and ``make_batches``
functions); their sizes are arguments (notebook 07's size table; ``--model-arg``/``--batches-arg`` on the command
line), with a laptop's sizes as defaults:

- ``cnn`` / ``cnn_batches``: the course CNN (``models.torch_cnn``) on image patches of ``pipeline.SyntheticImages``;
- ``transformer`` / ``token_batches``: one pre-norm transformer block (causal ``scaled_dot_product_attention``, a
  GELU MLP) between token embeddings and a vocabulary head, trained to predict the next token.

``recipe`` makes a function a notebook cell writes importable by ``assess``'s fresh processes (its compile call).
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Annotated, Any

from course_utils import declare, env, models, pipeline
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
