"""ddp_train.py's setup: a machine with some GPUs but fewer than its local ranks stops with a clear error
instead of falling back to gloo on its own (which would mix NCCL and gloo ranks in one job and hang)."""

from __future__ import annotations

import datetime
import importlib.util

import pytest

from course_utils.distributed import worker_path


def _ddp_train():
    pytest.importorskip("torch")
    spec = importlib.util.spec_from_file_location("ddp_train_under_test", worker_path("ddp_train.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_node_short_of_gpus_stops_before_joining_the_group(monkeypatch) -> None:
    ddp_train = _ddp_train()
    monkeypatch.setattr(ddp_train.torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(ddp_train.dist, "init_process_group", lambda *a, **k: pytest.fail("joined the group"))
    for name, value in (("LOCAL_WORLD_SIZE", "2"), ("LOCAL_RANK", "1"), ("RANK", "1")):
        monkeypatch.setenv(name, value)
    with pytest.raises(RuntimeError, match=r"1 GPU\(s\) for 2 local ranks.*--nproc-per-node=1"):
        ddp_train.setup()


def test_no_gpu_anywhere_runs_gloo_on_the_cpu(monkeypatch) -> None:
    ddp_train = _ddp_train()
    joined, checked = [], []
    monkeypatch.setattr(ddp_train.torch.cuda, "device_count", lambda: 0)
    monkeypatch.setattr(ddp_train.dist, "init_process_group", lambda b, timeout: joined.append((b, timeout)))
    monkeypatch.setattr(ddp_train, "same_backend_everywhere", checked.append)
    monkeypatch.setattr(ddp_train.dist, "get_rank", lambda: 0)
    monkeypatch.setattr(ddp_train.dist, "get_world_size", lambda: 2)
    for name, value in (("LOCAL_WORLD_SIZE", "2"), ("LOCAL_RANK", "0"), ("RANK", "0"), ("COURSE_PG_TIMEOUT", "60")):
        monkeypatch.setenv(name, value)
    assert ddp_train.setup() == (0, 2, ddp_train.torch.device("cpu"))
    assert joined == [("gloo", datetime.timedelta(seconds=60))] and checked == ["gloo"]  # the launcher's timeout
