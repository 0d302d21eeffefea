"""cu.fresh: a tiny target (no torch) replicated in fresh processes; failures name the log; nothing is left running."""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from course_utils import children, fresh, intervals


def loops(size: int = 2000) -> dict[str, float]:
    """Two tiny workloads timed in the fresh process: a loop of ``size`` additions and one four times longer."""
    def median(n: int) -> float:
        times = []
        for _ in range(5):
            start = time.perf_counter()
            sum(range(n))
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    return {"short": median(size), "long": median(4 * size)}


def fails() -> dict[str, float]:
    """A target whose measurement raises."""
    raise RuntimeError("boom in the target")


def not_a_mapping() -> list[float]:
    """A target that returns seconds without labels."""
    return [1.0, 2.0]


def negative() -> dict[str, float]:
    """A target that returns a negative time."""
    return {"a": -1.0}


def counted(counter: str) -> dict[str, float]:
    """A target whose label changes with each process (it counts them in the file ``counter``)."""
    path = Path(counter)
    seen = int(path.read_text()) if path.exists() else 0
    path.write_text(str(seen + 1))
    return {f"workload {seen}": 1e-3}


def hangs(pids: str) -> dict[str, float]:
    """A target that starts a grandchild, writes both pids to ``pids`` and never returns."""
    sleeper = subprocess.Popen(["sleep", "120"])
    Path(pids).write_text(json.dumps([os.getpid(), sleeper.pid]))
    time.sleep(120)
    return {}


@pytest.fixture(autouse=True)
def _build(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("COURSE_BUILD_DIR", str(tmp_path / "build"))


def test_each_process_is_fresh_and_reports_its_medians_and_setup() -> None:
    found = fresh.replicate(loops, n=2, kwargs={"size": 1000}, env={"FRESH_TEST": "1"})
    assert found.target == "test_fresh:loops" and found.n == 2 and found.labels == ("short", "long")
    assert all(len(v) == 2 and all(s > 0 for s in v) for v in found.seconds.values())
    pids = [s["pid"] for s in found.setups]
    assert len(set(pids)) == 2 and os.getpid() not in pids
    assert "torch" not in found.setups[0] and found.setups[0]["python"]  # the target imported no torch
    speed = found.speedup("long", "short")
    assert (speed.baseline, speed.candidate, speed.unit, speed.n) == ("long", "short", intervals.PROCESSES, 2)
    assert "across 2 fresh processes" in str(speed) and "geometric mean" in str(speed)
    assert "process" in repr(found) and "short (median in the process)" in found._repr_html_()


def test_a_string_target_names_the_same_function() -> None:
    assert fresh.target_path("test_fresh:loops") == fresh.target_path(loops) == "test_fresh:loops"


def test_a_failing_process_names_its_log_and_shows_its_last_lines(tmp_path) -> None:
    with pytest.raises(children.ChildFailed, match=r"(?s)exit code 1.*test-fresh-fails-1\.log.*boom in the target"):
        fresh.replicate("test_fresh:fails", n=2)
    with pytest.raises(children.ChildFailed, match=r"(?s)log .*returned list"):
        fresh.replicate(not_a_mapping, n=2)


def test_a_wrong_result_is_refused_naming_the_label(tmp_path) -> None:
    with pytest.raises(ValueError, match=r"-1\.0 seconds for 'a'"):
        fresh.replicate(negative, n=2)
    with pytest.raises(ValueError, match="process 2 returned the labels"):
        fresh.replicate(counted, n=2, kwargs={"counter": str(tmp_path / "count")})


@pytest.mark.slow  # seconds: outside make test-unit's fast lane, inside make test
def test_past_its_timeout_the_process_and_its_children_are_stopped(tmp_path) -> None:
    pids = tmp_path / "pids.json"
    with pytest.raises(TimeoutError, match="timeout=3"):
        fresh.replicate(hangs, n=2, timeout=3, kwargs={"pids": str(pids)})
    for pid in json.loads(pids.read_text()):
        assert not _alive(pid), f"process {pid} outlived its timeout"


@pytest.mark.slow  # seconds: outside make test-unit's fast lane, inside make test
def test_ctrl_c_stops_the_process_and_its_children(tmp_path) -> None:
    pids = tmp_path / "pids.json"
    code = f"from course_utils import fresh; fresh.replicate('test_fresh:hangs', n=2, kwargs={{'pids': {str(pids)!r}}})"
    path = os.pathsep.join([str(Path(__file__).parent), str(Path(fresh.__file__).parents[1])])
    caller = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": path},
                              stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint)
    try:
        deadline = time.time() + 120
        while not pids.exists() or not pids.read_text():
            assert caller.poll() is None, caller.communicate()
            assert time.time() < deadline, "the fresh process never started"
            time.sleep(0.2)
        time.sleep(0.5)  # the pids are written: let the parent see the grandchild once more
        caller.send_signal(signal.SIGINT)
        _, err = caller.communicate(timeout=60)
    finally:
        if caller.poll() is None:
            caller.kill()
    assert "KeyboardInterrupt" in err
    for pid in json.loads(pids.read_text()):
        assert not _alive(pid), f"process {pid} outlived the Ctrl-C"


def _alive(pid: int, wait: float = 5.0) -> bool:
    """True if ``pid`` still runs (not a zombie) after up to ``wait`` seconds."""
    deadline = time.time() + wait
    while time.time() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return False
        except psutil.NoSuchProcess:
            return False
        time.sleep(0.1)
    return True


def _default_sigint() -> None:
    """A background job inherits an ignored SIGINT; the caller must see the Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _nested() -> Callable[[], dict[str, float]]:
    def inner() -> dict[str, float]:
        return {}

    return inner


@pytest.mark.parametrize(("call", "argument"), [
    (lambda: fresh.replicate(lambda: {}, n=2), "target"),
    (lambda: fresh.replicate(_nested(), n=2), "target"),
    (lambda: fresh.replicate("test_fresh.loops", n=2), "target"),
    (lambda: fresh.replicate("no_such_module_here:f", n=2), "target"),
    (lambda: fresh.replicate("test_fresh:missing", n=2), "target"),
    (lambda: fresh.replicate(42, n=2), "target"),
    (lambda: fresh.replicate(loops, n=1), "n"),
    (lambda: fresh.replicate(loops, n="3"), "n"),
    (lambda: fresh.replicate(loops, n=2, timeout=0), "timeout"),
    (lambda: fresh.replicate(loops, n=2, env={"A": 1}), "env"),
    (lambda: fresh.replicate(loops, n=2, env=["A"]), "env"),
    (lambda: fresh.replicate(loops, n=2, kwargs={"size": object()}), "kwargs"),
    (lambda: fresh.replicate(loops, n=2, kwargs={"size": float("nan")}), "kwargs"),
    (lambda: _replicates().speedup("short", "missing"), "candidate"),
    (lambda: _replicates().speedup(1, "short"), "baseline"),
    (lambda: fresh.Replicates("t:f", {"a": [1.0]}, [{}, {}]), "seconds"),
    (lambda: fresh.Replicates("t:f", {"a": [1.0, -1.0]}, [{}, {}]), "seconds"),
    (lambda: fresh.Replicates("t:f", {"a": [1.0]}, [{}]), "setups"),
    (lambda: children.run_child("python", log=Path("x.log"), timeout=1), "command"),
    (lambda: children.run_child(["python", 3], log=Path("x.log"), timeout=1), "command"),
    (lambda: children.run_child(["python"], log=Path("x.log"), timeout=0), "timeout"),
    (lambda: children.run_child(["python"], log=Path("x.log"), timeout=1, on_line=3), "on_line"),
    (lambda: children.tail(3), "path"),
])
def test_bad_input_is_refused_by_name(call, argument) -> None:
    with pytest.raises((TypeError, ValueError), match=rf"\b{argument}\b"):
        call()


def _replicates(threads: tuple[int, int] = (2, 2)) -> fresh.Replicates:
    return fresh.Replicates("t:f", {"short": [1.0, 1.1], "long": [2.0, 2.4]},
                            [{"pid": 1, "torch": "2.0", "threads": threads[0]},
                             {"pid": 2, "torch": "2.0", "threads": threads[1]}])


def test_the_setup_says_where_processes_differed() -> None:
    assert _replicates().setup == "torch 2.0; threads 2"
    assert "threads 2, 1 (differed between the processes)" in _replicates((2, 1)).setup
    speed = _replicates().speedup("long", "short")
    assert speed.ratio == pytest.approx((2.0 / 1.0 * 2.4 / 1.1) ** 0.5)
