"""Two models for ``assess``, written as a user writes theirs (a module with ``make_model`` and ``make_batches``
functions), sized by ``COURSE_SIZE``:

- ``cnn`` / ``cnn_batches``: the course CNN (``models.torch_cnn``: three 3x3 convolutions, global pooling, a linear
  head) on image patches of notebook 04's dataset (``pipeline.SyntheticImages``);
- ``transformer`` / ``token_batches``: one pre-norm transformer block (causal self-attention through
  ``scaled_dot_product_attention``, a GELU MLP) with token and position embeddings and a vocabulary head, trained
  to predict the next token of random sequences.

    python -m course_utils.migrate assess --model course_utils.migrate.examples:cnn \\
        --batches course_utils.migrate.examples:cnn_batches --out build/assess/cnn
"""

from __future__ import annotations

from typing import Any

from course_utils import env, models, pipeline

BATCHES = 4  # distinct batches, read again in order (an epoch) for as many steps as a measurement takes


def _image_size() -> dict[str, int]:
    return {"size": 64, "batch": env.pick(ci=32, cpu=32, gpu=128), "work": 0}  # data are not measured: make them cheap


def cnn() -> Any:
    """The course CNN, 10 classes."""
    return models.torch_cnn(classes=10)


def cnn_batches() -> list[tuple[Any, Any]]:
    """``BATCHES`` batches of (images NCHW float32, labels int64) from ``pipeline.SyntheticImages``."""
    import torch

    size = _image_size()
    data = pipeline.SyntheticImages(BATCHES * size["batch"], size=size["size"], classes=10, work=size["work"])
    out = []
    for i in range(BATCHES):
        x, y = data.batch(range(i * size["batch"], (i + 1) * size["batch"]))
        out.append((torch.from_numpy(x), torch.from_numpy(y).long()))
    return out


def _token_size() -> dict[str, int]:
    return {"vocab": env.pick(ci=256, cpu=256, gpu=4096), "dim": env.pick(ci=64, cpu=128, gpu=512),
            "heads": env.pick(ci=4, cpu=4, gpu=8), "length": env.pick(ci=64, cpu=128, gpu=512),
            "batch": env.pick(ci=16, cpu=16, gpu=32)}


def transformer() -> Any:
    """One pre-norm transformer block between token embeddings and a vocabulary head."""
    import torch
    import torch.nn.functional as F

    size = _token_size()

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

    return Block(size["vocab"], size["dim"], size["heads"], size["length"])


def token_batches() -> list[tuple[Any, Any]]:
    """``BATCHES`` batches of (tokens, next tokens), int64 (batch x length), from a fixed random generator."""
    import torch

    size = _token_size()
    generator = torch.Generator().manual_seed(0)
    out = []
    for _ in range(BATCHES):
        sequence = torch.randint(0, size["vocab"], (size["batch"], size["length"] + 1), generator=generator)
        out.append((sequence[:, :-1].contiguous(), sequence[:, 1:].contiguous()))
    return out
