"""The C allocator's state, which decides what an eager op's fresh output costs on a CPU.

glibc serves a block over its mmap threshold (128 KiB in a new process) with fresh pages from the OS and
returns them when the block is freed; it also hands the top of its heap back once more than its trim threshold
lies free there. Every page touched again is a page fault. Freeing one mmapped block raises the mmap threshold
to that block's size (up to 32 MiB) and the trim threshold to twice that, so from then on blocks of that size
stay in the heap and come back without faults. A long-running training process is in that state; a fresh one
is not, and its first eager timings pay the faults (notebook 01 measures both states side by side).
"""

from __future__ import annotations

import contextlib
import ctypes
import math
from collections.abc import Callable
from typing import Any

from course_utils import memory, validate

PAGE = 4096
WARM_BYTES = 31 * 2**20  # under the 32 MiB up to which glibc's threshold follows a freed block


def warm_allocator(nbytes: int = WARM_BYTES) -> None:
    """Allocate, touch and free one ``nbytes`` block (torch, CPU), as a long-running process has done: glibc then
    keeps blocks up to that size in its heap, so an eager op's output reuses the memory the previous op freed.
    Harmless elsewhere (another C library, a GPU): it only allocates and frees."""
    import torch

    nbytes = validate.number("nbytes", nbytes, low=PAGE, high=2**31, integer=True)
    block = torch.empty(int(nbytes) // 4, dtype=torch.float32)
    block.fill_(0.0)
    del block


def _malloc_trim() -> Callable[[], Any] | None:
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6")
        trim = libc.malloc_trim
        return lambda: trim(0)
    return None


def on_fresh_pages(fn: Callable[..., Any]) -> Callable[..., Any] | None:
    """``fn`` with glibc's ``malloc_trim(0)`` before each call: what the previous call freed goes back to the OS,
    so every call's outputs land on fresh pages (a process whose allocator trims); None without glibc."""
    validate.function("fn", fn)
    trim = _malloc_trim()
    if trim is None:
        return None

    def trimmed(*args: Any) -> Any:
        trim()
        return fn(*args)

    return trimmed


def outputs_worth(fn: Callable[..., Any], *args: Any, output_bytes: int) -> float:
    """Page faults per call of ``fn(*args)`` (``memory.page_faults``), in outputs' worth: one output's worth is
    ``output_bytes`` in 4 KiB pages (nan where the OS does not count faults)."""
    validate.positive("output_bytes", output_bytes, integer=True)
    return memory.page_faults(fn, *args) / max(1, math.ceil(output_bytes / PAGE))


def tensor_bytes(x: Any) -> int:
    """Bytes of one float32 array shaped like ``x`` (any framework's tensor)."""
    return 4 * max(1, int(math.prod(tuple(x.shape))))
