"""What ``torch.compile`` compiled, from the compiler's own records (Dynamo's ``unique_graphs`` counter and each
graph break's whole reason as ``TORCH_LOGS`` logs it): a variant that captured no graph ran eager (``nn.GRU``,
``nn.LSTM``), so there is nothing to migrate."""

from __future__ import annotations

import re

_REASON = re.compile(r"Graph Break Reason: (.*?)(?:\n\s*User code traceback:|\Z)", re.S)
_WHERE = re.compile(r"in user code at (\S+)")
_DROPPED = ("For more details about this graph break",)  # a link: the report is an offline page


def break_text(message: str) -> str:
    """One graph break from Dynamo's log message: 'where: reason', the reason whole (explanation, hints, the
    debug context), without the user-code traceback, blank lines or links."""
    found, where = _REASON.search(message), _WHERE.search(message)
    reason = found.group(1) if found else message
    lines = [line.strip() for line in reason.splitlines()]
    kept = [line for line in lines if line and not line.startswith(_DROPPED)]
    text = "\n".join(kept).strip()
    return f"{where.group(1)}: {text}" if where else text


def short_reason(text: str) -> str:
    """The first line of a break's reason that says what happened (past Dynamo's 'falling back' preamble), with
    its explanation where it gives one."""
    lines = [line.strip() for line in text.split(": ", 1)[-1].splitlines() if line.strip()]
    said = [line for line in lines if not line.endswith("Graph break encountered:")]
    head = said[0] if said else (lines[0] if lines else "no reason logged")
    explained = next((line.removeprefix("Explanation: ") for line in said if line.startswith("Explanation: ")), "")
    return f"{head.rstrip('.')} ({explained.rstrip('.')})" if explained and explained not in head else head


def nothing_compiled(graphs: int, breaks: tuple[str, ...] | list[str]) -> str | None:
    """Why there is nothing to migrate (no graph was compiled: the first break's reason), or None."""
    if graphs > 0:
        return None
    if breaks:
        return f"Dynamo compiled no graph and ran the whole forward eager: {short_reason(breaks[0])}"
    return "Dynamo compiled no graph and ran the whole forward eager (no graph break was logged)"
