"""course_utils.distributed.launch: real torchrun on 127.0.0.1, clear errors, only the learner's lines, no orphans."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import psutil
import pytest
from orphans import survivors

from course_utils import distributed as dist
from course_utils.distributed import failures

SHORT_THEN_LONG = (12, 20)  # launch timeouts (s): torchrun and its ranks print within ~6 s on a quiet 2-core machine


def _write(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "worker_under_test.py"
    script.write_text(textwrap.dedent(body))
    return script


def _assert_no_orphans(script: Path, pids: list[int] = ()) -> None:
    left = survivors(str(script))  # signals are delivered asynchronously: it waits up to 5 s
    assert not left, [p.info["cmdline"] for p in left]
    for pid in pids:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_command_is_real_torchrun_on_loopback_addresses(tmp_path: Path) -> None:
    cmd = dist.torchrun_command(tmp_path / "w.py", 3, ["--x", "1"], 12345, tmp_path / "logs")
    assert Path(cmd[0]).name == "torchrun" or cmd[1:3] == ["-m", "torch.distributed.run"]
    assert "--master-addr=127.0.0.1" in cmd and "--local-addr=127.0.0.1" in cmd
    assert "--master-port=12345" in cmd and "--nproc-per-node=3" in cmd
    assert "--max-restarts=0" in cmd and cmd[-3:] == [str(tmp_path / "w.py"), "--x", "1"]


def test_loopback_env_names_the_interface_that_holds_127_0_0_1() -> None:
    env = dist.launcher.loopback_env()
    if env:  # a machine without an IPv4 loopback gets nothing rather than a wrong name
        addrs = psutil.net_if_addrs()[env["GLOO_SOCKET_IFNAME"]]
        assert any(a.family == socket.AF_INET and a.address == "127.0.0.1" for a in addrs)


def test_free_port_can_be_bound() -> None:
    port = dist.free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


def test_shipped_workers_exist_and_show() -> None:
    for name in ("ddp_train.py", "fail_demo.py"):
        assert dist.worker_path(name).is_file()
    shown = dist.show_worker("ddp_train.py")
    assert "init_process_group" in shown.text and shown._repr_markdown_().startswith("`ddp_train.py`:\n\n```python\n")


def test_worker_source_keeps_only_the_named_functions_in_file_order() -> None:
    text = dist.worker_source("ddp_train.py", only=["proof", "setup"])
    assert text.index("def setup") < text.index("def proof")
    assert "def timed" not in text and "argparse" not in text
    with pytest.raises(ValueError, match="only"):
        dist.worker_source("ddp_train.py", only=["no_such_function"])


def test_learner_lines_drop_prefixes_progress_and_empty_lines() -> None:
    raw = ["[default0]:hello", "[default1]:[rank1]: Traceback (most recent call last):", "[default1]:[rank1]: ",
           "[default0]:@@progress 1 3", "W1202 torchrun warning", "[default1]:"]
    assert dist.failures.learner_lines(raw) == [(0, "hello"), (1, "Traceback (most recent call last):")]


def test_failure_parsing_prefers_torchruns_root_cause() -> None:
    lines = ["[default0]:[rank0]: Traceback (most recent call last):", "[default0]:[rank0]: RuntimeError: gloo closed",
             "[default1]:Traceback (most recent call last):", '[default1]:  File "w.py", line 3',
             "[default1]:KeyError: 'x'", "[default1]:", "Root Cause (first observed failure):", "[0]:",
             "  rank      : 1 (local_rank: 1)", "  exitcode  : 1 (pid: 42)"]
    late_stdout = "[default1]:rank 1 started (stdout, after stderr)"
    error = failures.launch_failure("w.py", 2, 1, [*lines[:5], late_stdout, *lines[5:]])
    assert error.rank == 1 and error.traceback.endswith("KeyError: 'x'") and "gloo" not in error.traceback
    assert "started" not in error.traceback


def test_failure_takes_the_traceback_from_the_ranks_own_stderr_log(tmp_path: Path) -> None:
    # torchrun tees stdout and stderr from two files: the console can show a stdout line inside the traceback
    console = ["[default1]:Traceback (most recent call last):", "[default1]:rank 1 of 2 started (stdout)",
               '[default1]:  File "w.py", line 3', "[default1]:ValueError: corrupt shard",
               "Root Cause (first observed failure):", "  rank      : 1 (local_rank: 1)", "  exitcode  : 1 (pid: 42)"]
    assert failures.launch_failure("w.py", 2, 1, console).traceback.endswith("(stdout)")  # the console alone misleads
    for attempt, message in ((0, "an older attempt"), (1, "corrupt shard")):
        rank_dir = tmp_path / "run_x" / f"attempt_{attempt}" / "1"
        rank_dir.mkdir(parents=True)
        (rank_dir / "stderr.log").write_text('[rank1]: Traceback (most recent call last):\n[rank1]:   File "w.py", '
                                             f"line 3\n[rank1]: ValueError: {message}\n")
    error = failures.launch_failure("w.py", 2, 1, console, log_dir=tmp_path)
    assert error.rank == 1 and error.exitcode == 1
    assert error.traceback.splitlines() == ["Traceback (most recent call last):", '  File "w.py", line 3',
                                            "ValueError: corrupt shard"]
    assert failures.rank_stderr(tmp_path, 0) == []  # a rank that wrote nothing


def test_result_renders_as_a_table() -> None:
    result = dist.launcher.LaunchResult("w.py", 2, ["torchrun"], 3.2, [], records={0: [{"kind": "a"}], 1: []},
                               arrays={"proof": {0: {}, 1: {}}})
    assert "rank" in repr(result) and "<table>" in result._repr_html_()
    assert result.table().column("records") == ["1", "0"]
    with pytest.raises(KeyError, match="kind='b'"):
        result.record("b", 0)


@pytest.mark.integration
@pytest.mark.slow
def test_success_returns_records_arrays_and_leaves_no_process(tmp_path: Path, capsys) -> None:
    script = _write(tmp_path, """
        import os
        from course_utils.distributed import worker as w
        r = w.rank()
        print("hello from", r)
        print("")
        w.progress(1, 1)
        w.emit(kind="hello", rank=r, square=r * r, addr=os.environ["MASTER_ADDR"],
               gloo=os.environ.get("GLOO_SOCKET_IFNAME"))
        w.save("weights", w=[r, r + 1.5])
    """)
    result = dist.launch(script, nprocs=2, timeout=120, progress=False)
    assert result.record("hello", 1)["square"] == 1 and result.record("hello", 0)["rank"] == 0
    assert result.record("hello", 0)["addr"] == "127.0.0.1"
    assert result.record("hello", 0)["gloo"] == dist.launcher.loopback_env().get("GLOO_SOCKET_IFNAME")
    assert np.array_equal(result.arrays["weights"][1]["w"], [1.0, 2.5])
    out = capsys.readouterr().out.splitlines()
    assert "[rank 1] hello from 1" in out
    assert not any("@@progress" in line or line.strip() in ("[rank 0]", "[rank 1]") for line in out)
    assert (1, "hello from 1") in result.lines
    assert result.pids, "the launcher should have seen its processes"
    _assert_no_orphans(script, result.pids)


@pytest.mark.integration
@pytest.mark.slow
def test_failing_rank_raises_with_its_traceback_and_kills_the_others(tmp_path: Path, capsys) -> None:
    script = _write(tmp_path, """
        import os, time
        def read_shard():
            raise ValueError("shard 7 is corrupt (test)")
        if os.environ["RANK"] == "1":
            read_shard()
        time.sleep(300)  # rank 0 would wait forever
    """)
    with pytest.raises(dist.failures.LaunchError) as info:  # a launcher that waited for rank 0 would time out instead
        dist.launch(script, nprocs=2, timeout=100, progress=False)
    error = info.value
    assert error.rank == 1 and error.exitcode == 1
    text = str(error)
    assert "rank 1 failed" in text and "Traceback (most recent call last)" in text
    assert "in read_shard" in text and "ValueError: shard 7 is corrupt (test)" in text
    assert not isinstance(error, dist.failures.LaunchTimeout)
    echoed = capsys.readouterr().out.splitlines()
    assert not [line for line in echoed if line.startswith("[rank") and not line.split("]", 1)[1].strip()]
    _assert_no_orphans(script)


@pytest.mark.integration
@pytest.mark.slow
def test_timeout_shows_only_the_ranks_lines_and_kills_every_process(tmp_path: Path) -> None:
    script = _write(tmp_path, """
        import time
        from course_utils.distributed import worker as w
        print("ready", flush=True)
        w.progress(0, 2)
        time.sleep(300)
    """)
    for timeout in SHORT_THEN_LONG:  # the longer one only where the ranks had not started by the first (a busy machine)
        with pytest.raises(dist.failures.LaunchTimeout, match=f"did not finish within {timeout} s") as info:
            dist.launch(script, nprocs=2, timeout=timeout, echo=False, progress=False)
        if sum(line.endswith("ready") for line in info.value.output) == 2:
            break
    assert isinstance(info.value, TimeoutError)
    message = str(info.value)
    assert "[rank 0] ready" in message and "[rank 1] ready" in message
    assert "[default" not in message and "@@progress" not in message
    assert any(line.endswith("ready") for line in info.value.output), "workers should have started"
    _assert_no_orphans(script)


@pytest.mark.integration
@pytest.mark.slow
def test_keyboard_interrupt_kills_every_process(tmp_path: Path) -> None:
    script = _write(tmp_path, """
        import time
        print("ready", flush=True)
        time.sleep(300)
    """)
    seen = []

    def interrupt(rank, text):  # Ctrl-C arrives while the cell waits for output
        seen.append(rank)
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        dist.launch(script, nprocs=2, timeout=120, echo=False, progress=False, on_line=interrupt)
    _assert_no_orphans(script)


def _default_sigint() -> None:
    """A shell that starts a job in the background (``cmd &``) ignores SIGINT in it, and an ignored SIGINT is
    inherited: without this the caller would never see the Ctrl-C and the test would hang."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.integration
@pytest.mark.slow
def test_sigint_to_the_calling_process_leaves_no_process(tmp_path: Path) -> None:
    """A real Ctrl-C: SIGINT to a Python process blocked in launch(); its torchrun tree must go too."""
    script = _write(tmp_path, """
        import time
        print("ready", flush=True)
        time.sleep(300)
    """)
    caller = _caller(script)
    caller.send_signal(signal.SIGINT)
    rest = caller.communicate(timeout=60)[0]
    assert "interrupted" in rest
    _assert_no_orphans(script)


def test_a_rank_killed_by_a_signal_is_named_by_the_signal() -> None:
    lines = ["[default0]:ready", "Root Cause (first observed failure):", "[0]:", "  rank      : 1 (local_rank: 1)",
             "  exitcode  : -11 (pid: 42)", "  traceback : Signal 11 (SIGSEGV) received by PID 42",
             "[default0]:Traceback (most recent call last):", "[default0]:RuntimeError: gloo: connection closed"]
    error = failures.launch_failure("w.py", 2, 1, lines)
    assert error.rank == 1 and error.exitcode == -11 and error.signal == "SIGSEGV"  # not rank 0's traceback
    assert "rank 1 was killed by SIGSEGV (exit code -11)" in str(error)
    assert failures.signal_name(1) is None and failures.signal_name(None) is None and failures.signal_name(-999) is None
    assert failures.launch_failure("w.py", 2, 1, lines[:4] + ["  exitcode  : 3 (pid: 42)"]).signal is None


def test_a_loopback_that_accepts_no_connection_is_named(monkeypatch) -> None:
    def unreachable(*args, **kwargs):
        raise OSError(101, "Network is unreachable")

    monkeypatch.setattr(socket, "create_connection", unreachable)
    with pytest.raises(dist.failures.LoopbackError, match="loopback interface looks down"):
        dist.launch("fail_demo.py", 2, timeout=60)


@pytest.mark.slow  # seconds: outside make test-unit's fast lane, inside make test
def test_the_process_group_timeout_defaults_to_half_the_launch() -> None:
    assert dist.launcher.pg_timeout_for(240) == 120 and dist.launcher.pg_timeout_for(5) == 10
    with pytest.raises(ValueError, match="pg_timeout"):
        dist.launch("fail_demo.py", 2, timeout=60, pg_timeout=0)


def _in_a_network_namespace() -> list[str] | None:
    """A command prefix that runs in a fresh network namespace, whose loopback interface is down; None if this
    machine does not allow one (no ``unshare``, or no right to create namespaces)."""
    for prefix in (["unshare", "-n"], ["unshare", "-rn"]):
        try:
            if subprocess.run([*prefix, "true"], capture_output=True, timeout=10).returncode == 0:
                return prefix
        except (OSError, subprocess.TimeoutExpired):
            continue
    return None


@pytest.mark.integration
@pytest.mark.slow
def test_a_launch_with_the_loopback_down_says_so_within_seconds() -> None:
    prefix = _in_a_network_namespace()
    if prefix is None:
        pytest.skip("this machine cannot create a network namespace (unshare -n) to take the loopback down in")
    code = textwrap.dedent("""
        import time
        from course_utils import distributed as d
        start = time.perf_counter()
        try:
            d.launch("fail_demo.py", 2, timeout=120, progress=False)
        except d.failures.LoopbackError as error:
            print(f"LoopbackError after {time.perf_counter() - start:.1f} s: {error}")
    """)
    done = subprocess.run([*prefix, sys.executable, "-c", code], capture_output=True, text=True, timeout=90,
                          env={**os.environ, "PYTHONPATH": str(Path(dist.__file__).parents[2])})
    assert "LoopbackError after" in done.stdout, done.stdout + done.stderr
    assert float(done.stdout.split("after ")[1].split(" s")[0]) < 10
    assert "127.0.0.1" in done.stdout and "ip link set lo up" in done.stdout


@pytest.mark.integration
@pytest.mark.slow
def test_a_segfaulting_rank_is_named_by_its_signal(tmp_path: Path) -> None:
    script = _write(tmp_path, """
        import os, signal, time
        print("ready", flush=True)
        if os.environ["RANK"] == "1":
            os.kill(os.getpid(), signal.SIGSEGV)
        time.sleep(300)
    """)
    with pytest.raises(dist.failures.LaunchError) as info:
        dist.launch(script, nprocs=2, timeout=100, echo=False, progress=False)
    assert info.value.rank == 1 and info.value.signal == "SIGSEGV" and info.value.exitcode == -11
    assert "rank 1 was killed by SIGSEGV" in str(info.value)
    _assert_no_orphans(script)


@pytest.mark.integration
@pytest.mark.slow
def test_a_rank_stuck_in_a_collective_fails_with_its_traceback_before_the_launch_times_out(tmp_path: Path) -> None:
    script = _write(tmp_path, """
        import os, time
        import torch, torch.distributed as dist
        from course_utils.distributed import worker
        dist.init_process_group("gloo", timeout=worker.pg_timeout())
        if dist.get_rank() == 0:
            dist.all_reduce(torch.ones(4))  # rank 1 never joins it
        time.sleep(300)
    """)
    with pytest.raises(dist.failures.LaunchError) as info:
        dist.launch(script, nprocs=2, timeout=120, pg_timeout=8, echo=False, progress=False)
    assert not isinstance(info.value, dist.failures.LaunchTimeout)
    assert info.value.rank == 0 and "Traceback" in info.value.traceback
    _assert_no_orphans(script)


def _ranks_that_ignore_sigterm(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "sigterms"
    script = _write(tmp_path, f"""
        import os, signal, time
        def note(*_):  # a rank that ignores SIGTERM: it only writes down that it got one
            with open({str(marker)!r}, "a") as f:
                f.write(os.environ["RANK"] + "\\n")
        signal.signal(signal.SIGTERM, note)
        print("ready", flush=True)
        while True:
            time.sleep(0.1)
    """)
    return script, marker


def _caller(script: Path) -> subprocess.Popen:
    """A Python process blocked in launch(), as a notebook kernel would be; it prints 'interrupted' at the end."""
    caller = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        from course_utils import distributed as d
        try:
            d.launch({str(script)!r}, nprocs=2, timeout=200, progress=False)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
    """)], stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=_default_sigint)
    ready = set()
    for line in caller.stdout:
        if line.startswith(("[rank 0] ready", "[rank 1] ready")):
            ready.add(line[:8])
        if len(ready) == 2:
            return caller
    raise AssertionError("the ranks never said ready")


@pytest.mark.integration
@pytest.mark.slow
def test_a_second_ctrl_c_during_the_clean_up_still_leaves_no_process(tmp_path: Path) -> None:
    script, marker = _ranks_that_ignore_sigterm(tmp_path)
    caller = _caller(script)
    caller.send_signal(signal.SIGINT)  # the first Ctrl-C: the clean-up starts and SIGTERMs the ranks
    deadline = time.monotonic() + 30
    while not (marker.exists() and {"0", "1"} <= set(marker.read_text().split())):
        assert time.monotonic() < deadline, "the clean-up never sent SIGTERM to both ranks"
        time.sleep(0.05)
    for _ in range(3):  # pressed again (and again) while the ranks ignore SIGTERM and the clean-up waits
        caller.send_signal(signal.SIGINT)
        time.sleep(0.2)
    rest = caller.communicate(timeout=60)[0]
    assert "interrupted" in rest and caller.returncode == 0
    _assert_no_orphans(script)


@pytest.mark.integration
@pytest.mark.slow
def test_a_killed_kernel_leaves_no_process(tmp_path: Path) -> None:
    script, _ = _ranks_that_ignore_sigterm(tmp_path)
    caller = _caller(script)
    caller.kill()  # no clean-up can run in the caller: the reaper sees its pipe close
    caller.wait(timeout=10)
    left = survivors(str(script), wait=20)  # the reaper's grace before SIGKILL: 3 s
    assert not left, [p.info["cmdline"] for p in left]


def test_leftover_reads_the_launchs_own_processes_not_a_scan() -> None:
    error = dist.failures.LaunchError("x")
    assert dist.failures.leftover(error) == []
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        error.processes = [psutil.Process(sleeper.pid)]
        assert [p.pid for p in dist.failures.leftover(error)] == [sleeper.pid]
    finally:
        sleeper.kill()
        sleeper.wait()
    assert dist.failures.leftover(error) == []


@pytest.mark.integration
@pytest.mark.slow
def test_an_on_line_that_never_returns_is_stopped_with_the_launch(tmp_path: Path) -> None:
    script = _write(tmp_path, """
        import time
        print("ready", flush=True)
        time.sleep(300)
    """)

    called = []

    def stuck(rank, text):
        called.append(text)
        while True:
            time.sleep(0.05)

    for timeout in SHORT_THEN_LONG:  # the longer one only where the rank had printed nothing by the first
        start = time.monotonic()
        with pytest.raises(TimeoutError) as info:
            dist.launch(script, nprocs=1, timeout=timeout, echo=False, progress=False, on_line=stuck)
        if called:
            break
    assert "stuck" in str(info.value) and time.monotonic() - start < timeout + 30
    _assert_no_orphans(script)


def test_held_interrupts_record_a_press_and_restore_the_handler() -> None:

    before = signal.getsignal(signal.SIGINT)
    with failures.HeldInterrupts() as held:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)  # the handler runs at the next bytecode boundary
    assert held.pressed == 1 and signal.getsignal(signal.SIGINT) is before
