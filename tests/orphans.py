"""Shared by the launcher tests: the processes a launch left behind, after giving signals time to arrive."""

from __future__ import annotations

import time

import psutil


def survivors(marker: str, wait: float = 5.0) -> list[psutil.Process]:
    """Live (non-zombie) processes whose command line holds ``marker``, after up to ``wait`` s for them to go."""
    deadline = time.time() + wait
    while True:
        found = []
        for p in psutil.process_iter(["cmdline", "status"]):
            try:
                if marker in " ".join(p.info["cmdline"] or []) and p.info["status"] != psutil.STATUS_ZOMBIE:
                    found.append(p)
            except psutil.Error:
                continue
        if not found or time.time() > deadline:
            return found
        time.sleep(0.1)
