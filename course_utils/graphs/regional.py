"""Compile time as a cost you can cut: a model made of repeated blocks, compiled whole or by region.

``stack(depth, width)`` is a residual MLP of ``depth`` identical blocks (LayerNorm, Linear, GELU, Linear), the
shape of a transformer's layer stack without attention. The learner compiles it three ways in the notebook:
``torch.compile(model)`` (one graph of every block), ``block.compile()`` on each block (regional: Dynamo compiles
the block's code once and reuses it for the other, identical blocks), and ``torch.compile`` of a stack that
calls its blocks through a function marked ``torch.compiler.nested_compile_region`` (one graph, the block
compiled once and stamped out). ``first_call_seconds`` times each one's first call with Inductor's caches off,
so every variant pays its whole compile, whatever an earlier run left on disk.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from course_utils import calls, timing, validate
from course_utils.graphs.fallback import max_abs_diff

MAX_DEPTH, MAX_WIDTH = 64, 4096


def _call(block: Any, x: Any) -> Any:
    return block(x)


def stack(depth: int = 4, width: int = 32, *, block_call: Callable[[Any, Any], Any] | None = None,
          seed: int = 0) -> Any:
    """A ``torch.nn.Module``: ``depth`` identical residual blocks (``.blocks``, a ModuleList) and a linear head to
    10 classes, same weights for the same ``seed``. ``block_call(block, x)`` is how ``forward`` calls each block
    (default: ``block(x)``); pass a function marked ``torch.compiler.nested_compile_region`` to make each block a
    nested region."""
    import torch
    from torch import nn

    depth = validate.number("depth", depth, low=1, high=MAX_DEPTH, integer=True)
    width = validate.number("width", width, low=1, high=MAX_WIDTH, integer=True)
    validate.number("seed", seed, low=0, high=2**32 - 1, integer=True)
    call = _call if block_call is None else validate.function("block_call", block_call)

    class Block(nn.Module):
        """x + down(gelu(up(norm(x)))): one layer of the stack."""

        def __init__(self) -> None:
            super().__init__()
            self.norm, self.up = nn.LayerNorm(width), nn.Linear(width, 4 * width)
            self.down = nn.Linear(4 * width, width)

        def forward(self, x: Any) -> Any:
            return x + self.down(nn.functional.gelu(self.up(self.norm(x))))

    class Stack(nn.Module):
        """``depth`` blocks, then a linear head."""

        def __init__(self) -> None:
            super().__init__()
            self.blocks = nn.ModuleList(Block() for _ in range(depth))
            self.head = nn.Linear(width, 10)

        def forward(self, x: Any) -> Any:
            for block in self.blocks:
                x = call(block, x)
            return self.head(x)

    torch.manual_seed(seed)
    return Stack()


def first_call_seconds(fn: Callable[..., Any], *args: Any, timeout: float = 600.0) -> float:
    """Seconds of ``fn(*args)``'s first call (its compile, for a compiled function), synchronised, with Inductor's
    on-disk and in-memory caches switched off (``force_disable_caches``) so that it pays its whole compile even
    where an earlier run left the generated code on disk. Raises ``calls.LearnerTimeout`` after ``timeout`` s."""
    from torch._inductor import config

    validate.function("fn", fn)
    timeout = validate.seconds("timeout", timeout)
    limit = calls.time_limit(timeout, calls.describe(fn))
    with config.patch(force_disable_caches=True), limit, warnings.catch_warnings():
        # "dynamo_pgo force disabled by torch.compiler.config.force_disable_caches": that is the point here
        warnings.filterwarnings("ignore", message=".*force_disable_caches.*")
        start = time.perf_counter()
        timing.sync(fn(*args))
        return time.perf_counter() - start


def forward_step(model: Any) -> Callable[[Any], Any]:
    """``step(x)``: a forward pass of ``model`` without autograd (``torch.no_grad``), what the regional section
    compiles and times (training compiles a backward graph as well)."""
    import torch

    validate.function("model", model)

    def step(x: Any) -> Any:
        with torch.no_grad():
            return model(x)

    return step


def call_times(steps: dict[str, Callable[[Any], Any]], x: Any, *, rounds: int = 6, min_time: float = 0.3,
               timeout: float = 600.0) -> dict[str, timing.Measurement]:
    """Each step's time per call on ``x``, timed in ``rounds`` alternating rounds (``timing.interleaved``), so
    ``cu.intervals.speedup`` can pair them; every step is called once first (its compile is not timed here)."""
    validate.instance("steps", steps, dict)
    validate.non_empty("steps", steps)
    for name, step in steps.items():
        validate.function(f"steps[{name!r}]", step)
    validate.number("rounds", rounds, low=2, high=100, integer=True)
    validate.number("min_time", min_time, low=0, high=60, low_open=True)
    timeout = validate.number("timeout", timeout, low=0, high=3600, low_open=True)
    for step in steps.values():
        with calls.time_limit(timeout, calls.describe(step)):
            timing.sync(step(x))
    with calls.time_limit(timeout, calls.describe(next(iter(steps.values())))):
        return timing.interleaved({name: (lambda s=step: s(x)) for name, step in steps.items()}, rounds=rounds,
                                  min_time=min_time)


def same_outputs(reference: Callable[[Any], Any], others: Sequence[Callable[[Any], Any]], x: Any) -> float:
    """The largest absolute difference between ``reference(x)`` and each of ``others(x)``."""
    validate.function("reference", reference)
    validate.non_empty("others", others)
    expected = reference(x)
    return max(max_abs_diff(expected, other(x)) for other in others)
