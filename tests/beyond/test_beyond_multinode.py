"""Two torchrun launchers as two nodes: commands, results, and no process left behind whatever happens."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from orphans import survivors

from course_utils.beyond import multinode
from course_utils.distributed import LaunchError, LaunchTimeout

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
    cmd = multinode.node_command(script, nnodes=2, node_rank=1, nproc_per_node=2, port=29400, log_dir="/x",
                                 args=["--a", 1], max_restarts=1)
    text = " ".join(cmd)
    for part in ("--nnodes=2", "--nproc-per-node=2", "--node-rank=1", "--rdzv-backend=c10d",
                 "--rdzv-endpoint=127.0.0.1:29400", "--local-addr=127.0.0.1", "--max-restarts=1", "--tee=3"):
        assert part in text
    assert cmd[-3:] == [str(script.resolve()), "--a", "1"]


@pytest.mark.integration
def test_two_nodes_run_and_report_every_rank(script: Path) -> None:
    seen = []
    result = multinode.launch_nodes(script, nnodes=2, nproc_per_node=1, timeout=120, args=["ok"], echo=False,
                                    progress=False, on_line=lambda r, t: seen.append((r, t)))
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


def test_cluster_commands_and_checklist() -> None:
    text = multinode.cluster_commands("10.1.2.3", nnodes=4, nproc_per_node=8)
    assert "--rdzv-endpoint=10.1.2.3:29400" in text and "num_processes=4" in text and "TF_CONFIG" in text
    assert "local_device_ids" in text  # one JAX process per GPU is shown too
    assert len(multinode.hang_checklist().rows) >= 5


@pytest.mark.parametrize("nnodes", [2, 6])  # written out, and built by Python for many hosts
def test_cluster_tf_config_line_is_valid_json_in_a_shell(nnodes: int) -> None:
    import json
    import shutil
    import subprocess
    import sys

    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    (line,) = [t for t in multinode.cluster_commands(nnodes=nnodes).splitlines() if t.startswith("export TF_CONFIG=")]
    line = line.replace("$(python ", f"$({sys.executable} ")
    out = subprocess.run([bash, "-c", f'export NODE_INDEX=1; {line}; printf %s "$TF_CONFIG"'], capture_output=True,
                         text=True, check=True).stdout
    config = json.loads(out)
    assert config["task"] == {"type": "worker", "index": 1} and len(config["cluster"]["worker"]) == nnodes


def test_time_split_of_a_ddp_launch() -> None:
    from course_utils.distributed import LaunchResult

    records = {r: [{"kind": "startup", "seconds": 2.0 + r}, {"kind": "phases", "seconds": {"a": 1.0, "b": 2.0}}]
               for r in (0, 1)}
    split = multinode.time_split(LaunchResult("ddp_train.py", 2, [], 10.0, [], records))
    assert split == {"wall": 10.0, "phases": 3.0, "startup": 3.0, "outside": 7.0}
