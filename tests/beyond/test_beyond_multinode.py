"""Two torchrun launchers as two nodes: commands, results, and no process left behind whatever happens."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from orphans import survivors

from course_utils.beyond import multinode
from course_utils.distributed import failures, launcher
from course_utils.distributed.failures import LaunchError, LaunchTimeout
from course_utils.distributed.launcher import LaunchResult

WORKER = textwrap.dedent("""
    import os, sys, time
    from course_utils.distributed import worker
    mode = sys.argv[1]
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    print(f"rank {worker.rank()} of {worker.world_size()} attempt {attempt}", flush=True)
    worker.emit(kind="hello", rank=worker.rank(), local_rank=worker.local_rank(), attempt=attempt)
    if mode == "sleep":
        time.sleep(120)
    if mode == "fail" and worker.rank() == 1:
        raise ValueError("rank 1 gives up (a planted failure)")
    if mode == "fail":
        time.sleep(120)  # rank 0 would wait forever for its partner
    if mode == "once" and attempt == 0 and worker.rank() == 1:
        raise SystemExit(3)
""")


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "node_worker.py"
    path.write_text(WORKER)
    return path


def test_node_command_is_a_c10d_rendezvous_on_loopback(script: Path) -> None:
    cmd = multinode.node_command(script, nnodes=2, node_rank=1, nproc_per_node=2, port=29400, args=["--a", 1],
                                 max_restarts=1)
    assert cmd[0] == "torchrun"
    for part in ("--nnodes=2", "--nproc-per-node=2", "--node-rank=1", "--rdzv-backend=c10d",
                 "--rdzv-endpoint=127.0.0.1:29400", "--max-restarts=1"):
        assert part in cmd
    assert cmd[-3:] == [str(script.resolve()), "--a", "1"]
    assert not any(c.startswith(("--tee", "--log-dir")) for c in cmd)  # the learner's line: no plumbing


def test_read_command_reads_a_learners_line_and_adds_only_the_plumbing(script: Path) -> None:
    line = (f"torchrun --nnodes=2 --nproc-per-node=1 --node-rank=0 --rdzv-backend=c10d "
            f"--rdzv-endpoint=127.0.0.1:29400 --rdzv-id=job {script} --steps 3")
    node = multinode.read_command(line)
    assert node.nnodes == 2 and node.nproc_per_node == 1 and node.script == script.resolve()
    assert node.args == ("--steps", "3")
    run = node.runnable(Path("/tmp/logs0"))
    assert run[-3:] == [str(script.resolve()), "--steps", "3"] and "--tee=3" in run and "--log-dir=/tmp/logs0" in run
    assert "--max-restarts=0" in run and "--rdzv-id=job" in run
    assert multinode.read_command(line.split()).options == node.options  # tokens work as well as a string


@pytest.mark.parametrize(("line", "message"), [
    ("python {s}", "start with 'torchrun'"),
    ("torchrun --nnodes=2 --rdzv-backend=c10d --rdzv-endpoint=127.0.0.1:1", "no worker script"),
    ("torchrun --nnodes 2 --rdzv-backend=c10d --rdzv-endpoint=127.0.0.1:1 {s}", "--key=value"),
    ("torchrun --nnodes=2 --tee=3 --rdzv-backend=c10d --rdzv-endpoint=127.0.0.1:1 {s}", "leave it out"),
    ("torchrun --nnodes=2 {s}", "c10d"),
    ("torchrun --rdzv-backend=c10d --rdzv-endpoint=127.0.0.1:1 {s}", "--nnodes"),
    ("torchrun --nnodes=99 --rdzv-backend=c10d --rdzv-endpoint=127.0.0.1:1 {s}", "--nnodes"),
    ("torchrun --nnodes=2 --nproc-per-node=auto --rdzv-backend=c10d --rdzv-endpoint=127.0.0.1:1 {s}", "--nproc"),
    ("torchrun --nnodes=2 --nproc-per-node=1000 --rdzv-backend=c10d --rdzv-endpoint=127.0.0.1:1 {s}", "--nproc"),
])
def test_read_command_refuses_what_it_cannot_run(script: Path, line: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        multinode.read_command(line.format(s=script))


def test_run_nodes_refuses_lines_that_disagree(script: Path) -> None:
    def line(n: int, nnodes: int = 2, endpoint: str = "127.0.0.1:29400", rid: str = "a") -> str:
        return (f"torchrun --nnodes={nnodes} --node-rank={n} --rdzv-backend=c10d --rdzv-endpoint={endpoint} "
                f"--rdzv-id={rid} {script}")

    for commands, message in (([line(0), line(1, rid="b")], "--rdzv-id"), ([line(0, 3), line(1, 3)], "--nnodes=2"),
                              ([line(0, endpoint="10.0.0.1:1"), line(1, endpoint="10.0.0.1:1")], "127.0.0.1"),
                              ([line(0), line(1, endpoint="127.0.0.1:2")], "--rdzv-endpoint")):
        with pytest.raises(ValueError, match=message):
            multinode.run_nodes(commands, echo=False, progress=False)
    with pytest.raises(TypeError, match="commands"):
        multinode.run_nodes(line(0))  # one string is not a list of lines


@pytest.mark.integration
def test_two_nodes_run_and_report_every_rank(script: Path) -> None:
    seen = []
    port = launcher.free_port()
    lines = [f"torchrun --nnodes=2 --nproc-per-node=1 --node-rank={n} --rdzv-backend=c10d "
             f"--rdzv-endpoint=127.0.0.1:{port} --rdzv-id=t {script} ok" for n in range(2)]
    result = multinode.run_nodes(lines, timeout=120, echo=False, progress=False,
                                 on_line=lambda r, t: seen.append((r, t)))
    assert sorted(result.records) == [0, 1]
    assert {result.record("hello", r)["local_rank"] for r in (0, 1)} == {0}  # one process per node
    assert sorted(r for ranks in result.node_ranks.values() for r in ranks) == [0, 1]
    assert len(result.commands) == 2 and len(result.node_output) == 2
    assert (1, "rank 1 of 2 attempt 0") in seen  # global rank in the prefix, not the local one
    assert "2 torchrun nodes" in repr(result)
    assert not survivors(str(script))


@pytest.mark.integration
def test_failure_on_the_other_node_names_the_rank_and_kills_everything(script: Path) -> None:
    with pytest.raises(LaunchError) as caught:
        multinode.launch_nodes(script, nnodes=2, nproc_per_node=1, timeout=120, args=["fail"], echo=False,
                               progress=False)
    assert caught.value.rank == 1
    assert "rank 1 gives up" in caught.value.traceback
    assert caught.value.processes and failures.leftover(caught.value) == []  # the launch's own processes, all gone
    assert not survivors(str(script))


@pytest.mark.integration
def test_timeout_kills_both_nodes(script: Path) -> None:
    # the ranks sleep 120 s and then succeed: only a launcher that stops them at 8 s raises LaunchTimeout
    with pytest.raises(LaunchTimeout):
        multinode.launch_nodes(script, nnodes=2, nproc_per_node=1, timeout=8, args=["sleep"], echo=False,
                               progress=False)
    assert not survivors(str(script))


@pytest.mark.integration
def test_interrupt_kills_both_nodes(script: Path) -> None:
    def interrupt(rank, text):
        if "attempt" in text:
            raise KeyboardInterrupt  # what Ctrl-C / "interrupt kernel" raises in the loop

    with pytest.raises(KeyboardInterrupt):
        multinode.launch_nodes(script, nnodes=2, nproc_per_node=1, timeout=120, args=["sleep"], echo=False,
                               progress=False, on_line=interrupt)
    assert not survivors(str(script))


@pytest.mark.integration
def test_max_restarts_restarts_the_group_after_a_death(script: Path) -> None:
    result = multinode.launch_nodes(script, nnodes=1, nproc_per_node=2, timeout=120, args=["once"], max_restarts=1,
                                    echo=False, progress=False)
    attempts = {r["attempt"] for r in result.records[1]}
    assert attempts == {0, 1}
    assert not survivors(str(script))


def test_ddp_reference_and_proof_diffs_agree_with_themselves() -> None:
    ref = multinode.ddp_reference(steps=4, batch=8, every=2)
    assert list(ref) == ["step2", "step4"]

    class Fake(multinode.NodesResult):
        pass

    fake = Fake("x", 2, [], 0.0, [], {}, {"proof": {0: ref, 1: {k: v + 1e-3 for k, v in ref.items()}}})
    diffs = multinode.proof_diffs(fake, ref)
    assert diffs["single"] == {"step2": 0.0, "step4": 0.0}
    assert all(abs(d - 1e-3) < 1e-6 for d in diffs["ranks"].values())


def test_backend_and_facts_of_a_ddp_launch() -> None:
    records = {r: [{"kind": "startup", "seconds": 2.0 + r}, {"kind": "phases", "seconds": {"a": 1.0, "b": 2.0}}]
               for r in (0, 1)}
    output = ["[default0]:backend gloo on cpu: no GPU on this machine", "[default1]:hello"]
    result = LaunchResult("ddp_train.py", 2, [], 10.0, output, records)
    assert multinode.backend(result) == "gloo"
    with pytest.raises(ValueError, match="backend"):
        multinode.backend(LaunchResult("ddp_train.py", 2, [], 10.0, [], records))
    nodes = multinode.NodesResult("ddp_train.py", 2, [], 10.0, output, records, node_ranks={0: [1], 1: [0]})
    assert multinode.facts(nodes) == {"node0": "1", "node1": "0", "backend": "gloo", "wall": 10.0, "phases": 3.0,
                                      "startup": 3.0, "outside": 7.0}


