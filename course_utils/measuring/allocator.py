"""The C allocator's state, which decides what an eager op's fresh output costs on a CPU.

glibc serves a block over its mmap threshold (128 KiB in a new process) with fresh pages and returns them when the
block is freed; freeing one such block raises the threshold to its size (up to 32 MiB), so from then on blocks of
that size stay in the heap and come back without page faults. A long-running process is in that state.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated, Any

from course_utils import declare, memory

PAGE = 4096
WARM_BYTES = 31 * 2**20  # under the 32 MiB up to which glibc's threshold follows a freed block


@declare.checked
def warm_allocator(nbytes: Annotated[int, declare.Range(PAGE, 2**31)] = WARM_BYTES) -> None:
    """Allocate, touch and free one ``nbytes`` block (torch, CPU), as a long-running process has done: glibc then
    keeps blocks up to that size in its heap. Harmless elsewhere: it only allocates and frees."""
    import torch

    block = torch.empty(nbytes // 4, dtype=torch.float32)
    block.fill_(0.0)
    del block


@declare.checked
def outputs_worth(fn: Callable[..., Any], *args: Any, output_bytes: declare.PositiveInt) -> float:
    """Page faults per call of ``fn(*args)`` in outputs' worth (``output_bytes`` in 4 KiB pages; nan where the OS
    does not count faults)."""
    return memory.page_faults(fn, *args) / max(1, math.ceil(output_bytes / PAGE))


@declare.checked
def tensor_bytes(x: Any) -> int:
    """Bytes of one float32 array shaped like ``x`` (any framework's tensor)."""
    return 4 * max(1, int(math.prod(tuple(x.shape))))
