"""The shared assertion of the bad-input tests: a bad call raises TypeError or ValueError naming its argument."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


def rejects(call: Callable[[], Any], argument: str) -> None:
    """Assert that ``call()`` raises TypeError or ValueError and that the message names ``argument``."""
    with pytest.raises((TypeError, ValueError)) as caught:
        call()
    assert argument in str(caught.value), f"the error does not name {argument!r}: {caught.value}"
