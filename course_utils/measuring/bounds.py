"""The bounds notebook 00's helpers put on sizes: an allocation must fit the memory this machine has free now, so
that a mistyped size is refused with its argument named instead of reaching the allocator (or the swap)."""

from __future__ import annotations

MAX_ELEMENTS = 2**31  # float32 elements of one array: 8 GiB, past any machine this course runs on
MAX_WORKING_SET = 2**36  # bytes: 64 GiB


def available_memory() -> int:
    """Bytes of memory free now (psutil)."""
    import psutil

    return int(psutil.virtual_memory().available)


def fits(name: str, nbytes: int, *, share: float = 0.5) -> None:
    """Raise ValueError naming ``name`` when allocating ``nbytes`` would take more than ``share`` of the memory
    free now."""
    free = available_memory()
    if nbytes > share * free:
        raise ValueError(f"{name} asks for {nbytes / 2**30:.3g} GiB, over {share:.0%} of the {free / 2**30:.3g} GiB "
                         "this machine has free now; use a smaller size")
