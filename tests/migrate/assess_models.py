"""Tiny models and batches for the assess tests, written as a user writes theirs ('module:function' factories).

Importable as ``assess_models`` (tests/migrate is on sys.path under pytest; the measuring processes get the
parent's sys.path)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import torch

SLEEP_MARKER = "assess-test-grandchild"


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))


def mlp_batches():
    g = torch.Generator().manual_seed(0)
    return [(torch.randn(4, 8, generator=g), torch.randint(0, 3, (4,), generator=g)) for _ in range(2)]


class Tokens(torch.nn.Module):
    """Embedding, one attention, a vocabulary head: a tiny sequence model of a different kind than the MLP."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(16, 8)
        self.qkv = torch.nn.Linear(8, 24)
        self.head = torch.nn.Linear(8, 16)

    def forward(self, tokens):
        q, k, v = self.qkv(self.embed(tokens)).chunk(3, dim=-1)
        return self.head(torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True))


def tokens():
    torch.manual_seed(0)
    return Tokens()


def token_batches():
    g = torch.Generator().manual_seed(0)
    seq = torch.randint(0, 16, (2, 4, 7), generator=g)
    return [(s[:, :-1], s[:, 1:]) for s in seq]


class Drifts(torch.nn.Module):
    """Compiled, it scales its output (``is_compiling`` is True while Dynamo traces), so its losses drift from
    eager's; and it branches on a tensor's value, a graph break."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 3)

    def forward(self, x):
        y = self.lin(x)
        if torch.compiler.is_compiling():
            y = y * 1.5
        if y.mean() > 100:  # data-dependent: a graph break
            return y * 2
        return y


def drifts():
    torch.manual_seed(0)
    return Drifts()


def raises():
    raise ValueError("my own message from make_model")


def not_a_module():
    return [1, 2, 3]


def no_batches():
    return []


def not_pairs():
    return [torch.zeros(3)]


NOT_CALLABLE = 42


def hangs():
    time.sleep(120)
    return mlp()


def sleeper():
    """In a measuring process: start a grandchild, say so through the file in ASSESS_TEST_READY, then wait."""
    if Path(sys.argv[0]).name == "assess_worker.py":
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", SLEEP_MARKER])
        Path(os.environ["ASSESS_TEST_READY"]).write_text(str(os.getpid()))
        time.sleep(300)
    return mlp()


def fails_in_worker():
    """Builds in the checks before measuring; raises in a measuring process (a failure only a worker meets)."""
    if Path(sys.argv[0]).name == "assess_worker.py":
        raise RuntimeError("assess-test: out of memory in the measuring process")
    return mlp()


class Gru(torch.nn.Module):
    """A GRU classifier: Dynamo does not trace nn.GRU, so torch.compile runs its whole forward eager."""

    def __init__(self) -> None:
        super().__init__()
        self.gru = torch.nn.GRU(8, 8, batch_first=True)
        self.head = torch.nn.Linear(8, 3)

    def forward(self, x):
        y, _ = self.gru(x)
        return self.head(y[:, -1])


def gru():
    torch.manual_seed(0)
    return Gru()


def sequence_batches():
    g = torch.Generator().manual_seed(0)
    return [(torch.randn(4, 5, 8, generator=g), torch.randint(0, 3, (4,), generator=g)) for _ in range(2)]


def dropout():
    """An MLP with dropout: its eager and compiled losses differ unless the random state is matched."""
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Dropout(0.3), torch.nn.Linear(16, 3))


class Pairs(torch.utils.data.Dataset):
    """The MLP's samples one by one, for a DataLoader."""

    def __len__(self):
        return 16

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(8, generator=g), int(torch.randint(0, 3, (), generator=g))


def mlp_loader(workers=1):
    """A shuffling DataLoader with its own worker processes, as a training script writes it."""
    return torch.utils.data.DataLoader(Pairs(), batch_size=4, shuffle=True, num_workers=workers,
                                       persistent_workers=workers > 0, multiprocessing_context="spawn" if workers
                                       else None)


def compile_fixed(model):
    """The user's own compile call: static shapes."""
    return torch.compile(model, dynamic=False)


class Stack(torch.nn.Module):
    """Three repeated blocks in a ModuleList, the shape a regional compile compiles block by block."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
                                          for _ in range(3))
        self.head = torch.nn.Linear(8, 3)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


def stack():
    torch.manual_seed(0)
    return Stack()
