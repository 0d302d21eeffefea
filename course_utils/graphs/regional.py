"""Compile time as a cost you can cut: ``stack(depth, width)``, a residual MLP of identical blocks (a transformer's
layer stack without attention), which the notebook compiles whole, by region (``block.compile()``) and with a
``nested_compile_region``; ``first_call_seconds`` times each first call with Inductor's caches off."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from typing import Annotated, Any

from course_utils import calls, declare, timing
from course_utils.declare import NonEmpty, Range
from course_utils.graphs.fallback import max_abs_diff

MAX_DEPTH, MAX_WIDTH = 64, 4096


def _call(block: Any, x: Any) -> Any:
    return block(x)


@declare.checked
def stack(depth: Annotated[int, Range(1, MAX_DEPTH)] = 4, width: Annotated[int, Range(1, MAX_WIDTH)] = 32, *,
          block_call: Callable[[Any, Any], Any] | None = None, seed: Annotated[int, Range(0, 2**32 - 1)] = 0) -> Any:
    """A ``torch.nn.Module`` of ``depth`` identical residual blocks (``.blocks``) and a linear head to 10 classes;
    ``block_call(block, x)`` is how ``forward`` calls each block (a ``nested_compile_region`` function, say)."""
    import torch
    from torch import nn

    call = _call if block_call is None else block_call

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


@declare.checked
def first_call_seconds(fn: Callable[..., Any], *args: Any, timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> float:
    """Seconds of ``fn(*args)``'s first call (its compile), synchronised, with Inductor's caches off
    (``force_disable_caches``) so that it pays its whole compile whatever an earlier run left on disk."""
    from torch._inductor import config

    limit = calls.time_limit(timeout, calls.describe(fn))
    with config.patch(force_disable_caches=True), limit, warnings.catch_warnings():
        # "dynamo_pgo force disabled by torch.compiler.config.force_disable_caches": that is the point here
        warnings.filterwarnings("ignore", message=".*force_disable_caches.*")
        start = time.perf_counter()
        timing.sync(fn(*args))
        return time.perf_counter() - start


@declare.checked
def forward_step(model: Callable[..., Any]) -> Callable[[Any], Any]:
    """``step(x)``: a forward pass of ``model`` under ``torch.no_grad``, what the regional section times."""
    import torch

    def step(x: Any) -> Any:
        with torch.no_grad():
            return model(x)

    return step


@declare.checked
def call_times(steps: Annotated[dict[str, Callable[[Any], Any]], NonEmpty], x: Any, *,
               rounds: Annotated[int, Range(2, 100)] = 6, min_time: Annotated[float, Range(0, 60, low_open=True)] = 0.3,
               timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> dict[str, timing.Measurement]:
    """Each step's time per call on ``x`` in ``rounds`` alternating rounds; each is called once first (untimed)."""
    for step in steps.values():
        with calls.time_limit(timeout, calls.describe(step)):
            timing.sync(step(x))
    with calls.time_limit(timeout, calls.describe(next(iter(steps.values())))):
        return timing.interleaved({name: (lambda s=step: s(x)) for name, step in steps.items()}, rounds=rounds,
                                  min_time=min_time)


@declare.checked
def same_outputs(reference: Callable[[Any], Any], others: Annotated[Sequence[Callable[[Any], Any]], NonEmpty],
                 x: Any) -> float:
    """The largest absolute difference between ``reference(x)`` and each of ``others(x)``."""
    expected = reference(x)
    return max(max_abs_diff(expected, other(x)) for other in others)
