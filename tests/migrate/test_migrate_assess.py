"""assess end to end at tiny sizes (two different models, 2 fresh processes each), a model whose compiled losses
drift and that breaks its graph, the report's files, and Ctrl-C leaving no process behind.

Each assess run launches fresh processes (Python, torch, a compile each), so the tests share three runs, each
read by several tests (module-scoped fixtures): an MLP with dropout drawing from a DataLoader with a worker; the
token model measured with the user's compile function beside a fullgraph mode; the drifting model under AMP with
its inputs cached."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from orphans import survivors

from course_utils import children, migrate

HERE = Path(__file__).resolve().parent

pytestmark = pytest.mark.integration  # compiles in fresh processes: minutes on a loaded 2-core machine

REPORT_KEYS = {"device", "versions", "processes", "speedup", "break_even_speedup", "decision", "modes",
               "compile_seconds", "peak_bytes", "mfu", "inputs", "batch_inputs", "load"}
MODE_KEYS = {"call", "parity", "graph_breaks", "recompiles", "compiled_graphs", "wait_s"}


@pytest.fixture(autouse=True)
def _importable(monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(HERE))


@pytest.fixture(scope="module")
def _module_importable():
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(HERE))
        yield


def _costs(folder: Path) -> Path:
    config = folder / "costs.toml"
    config.write_text("monthly_spend = 50_000\ntraining_share = 0.5\n")
    return config


@pytest.fixture(scope="module")
def dropout_run(tmp_path_factory, _module_importable):
    """The MLP with dropout, each step drawing from a DataLoader with one worker process: (model, result, out)."""
    folder = tmp_path_factory.mktemp("dropout")
    model = "assess_models:dropout"
    found = migrate.assess(model, "assess_models:mlp_loader", batches_args={"workers": 1}, config=_costs(folder),
                           processes=2, steps=4, amp="off", out=folder / "report", progress=False)
    return model, found, folder / "report"


@pytest.fixture(scope="module")
def tokens_run(tmp_path_factory, _module_importable):
    """The token model, the user's compile function deciding, beside torch.compile with fullgraph=True."""
    folder = tmp_path_factory.mktemp("tokens")
    model = "assess_models:tokens"
    found = migrate.assess(model, "assess_models:token_batches", config=_costs(folder),
                           compiler="assess_models:compile_fixed", modes="default", fullgraph=True, processes=2,
                           steps=4, amp="off", out=folder / "report", progress=False)
    return model, found, folder / "report"


@pytest.fixture(scope="module")
def drifts_run(tmp_path_factory, _module_importable):
    """The model whose compiled losses drift, under AMP (bf16), its inputs cached."""
    folder = tmp_path_factory.mktemp("drifts")
    found = migrate.assess("assess_models:drifts", "assess_models:mlp_batches", processes=2, steps=2, amp="bf16",
                           inputs="cached", out=folder / "report", progress=False)
    return found, folder / "report"


@pytest.mark.parametrize("run", ["dropout_run", "tokens_run"])
def test_two_models_end_to_end_in_two_processes(request, run) -> None:
    model, found, out = request.getfixturevalue(run)
    assert found.decision.outcome in migrate.decision.DECISIONS
    assert found.deciding.speedup.n == 2 and found.deciding.speedup.unit == "processes"
    assert len(found.deciding.in_process) == 2 and found.deciding.in_process[0].unit == "rounds"
    assert found.deciding.parity.passed, found.deciding.parity
    assert found.fallback.error is not None and found.fallback.passed, found.fallback
    assert found.pricing.inputs["monthly_spend"].source == "your config"
    assert found.pricing.inputs["engineers"].source == "seed article"
    assert found.flops_per_step > 0 and found.deciding.compile_cold_s > 0 and found.deciding.graphs > 0
    assert found.peak_flops > 0 and found.peak_source.startswith("measured in this run's first process")
    assert len(found.loads) == 2 and len(found.loads[0]["start"]) == 3
    report = json.loads((out / "report.json").read_text())
    assert REPORT_KEYS <= set(report) and MODE_KEYS <= set(report["modes"][0])
    assert set(report["speedup"]) >= {"median", "low", "high"}
    assert set(report["compile_seconds"]) >= {"cold", "warm"}
    page = (out / "report.html").read_text()
    first = "No decision:" if found.decision.outcome == migrate.decision.BUSY else "Decision:"  # a busy machine
    assert page.index(first) < page.index("data:image/png;base64,") and "http" not in page.split("<body>")[1]
    assert (out / "report.md").read_text().startswith(f"# Should we migrate {model}?")
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")], "the working folder was left behind"


def test_drifting_losses_fail_parity_and_graph_breaks_are_counted(drifts_run) -> None:
    found, out = drifts_run
    assert not found.deciding.parity.passed
    assert found.deciding.graph_breaks and "Data-dependent branching" in found.deciding.graph_breaks[0]
    assert not found.fallback.passed  # the fallback runs eager, so it cannot match the drifting compiled path
    told = migrate.report.findings_of(found)
    assert any("must be fixed before any migration" in b for b in migrate.story.blockers(told["parity"],
                                                                                          told["fallback"]))
    assert json.loads((out / "report.json").read_text())["modes"][0]["parity"]["passed"] is False


def test_dropout_is_judged_with_the_random_state_matched_and_blocks_nothing(dropout_run) -> None:
    _, found, out = dropout_run
    assert found.deciding.parity.passed, found.deciding.parity
    assert found.deciding.parity.method.startswith("random state matched") and "Dropout(p=0.3)" in \
        found.deciding.parity.method
    assert found.fallback.passed, found.fallback
    told = migrate.report.findings_of(found)
    assert migrate.story.blockers(told["parity"], told["fallback"]) == []
    assert "random state matched" in (out / "report.md").read_text()


def test_with_amp_the_report_has_the_four_rows_a_lead_needs(drifts_run) -> None:
    found, out = drifts_run
    assert found.amp_alone is not None and found.amp_alone.n == 2 and found.amp_alone.baseline == "eager fp32"
    assert "eager + AMP over eager fp32 (no migration" in (out / "report.md").read_text()
    assert json.loads((out / "report.json").read_text())["amp_alone"]["n"] == 2
    assert found.deciding.speedup.baseline == "eager"  # the migration is still priced over eager + AMP
    assert found.compile_alone is not None and found.compile_alone.baseline == "eager fp32"
    assert "what compile buys without AMP" in (out / "report.md").read_text()


def test_a_gru_compiles_nothing_so_there_is_nothing_to_migrate(tmp_path) -> None:
    found = migrate.assess("assess_models:gru", "assess_models:sequence_batches", processes=2, steps=2, amp="off",
                           out=tmp_path / "report", progress=False)
    assert found.deciding.graphs == 0 and found.decision.outcome == migrate.decision.NOTHING, found.decision.text
    assert found.deciding.compiled_share == 0  # no step time inside a compiled graph
    assert "GRU" in found.decision.reason
    assert any("Hint:" in b and "GRU" in b for b in found.deciding.graph_breaks), found.deciding.graph_breaks
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["decision"].startswith("nothing to migrate: ") and report["modes"][0]["compiled_graphs"] == 0


def test_a_failed_measuring_process_keeps_its_log_beside_out(tmp_path) -> None:
    out = tmp_path / "report"
    with pytest.raises(children.ChildFailed, match="failed-logs") as failed:
        migrate.assess("assess_models:fails_in_worker", "assess_models:mlp_batches", processes=2, steps=2,
                       amp="off", out=out, progress=False)
    kept = tmp_path / "report.failed-logs" / "log-0.txt"
    assert str(kept) in str(failed.value) and "out of memory in the measuring process" in kept.read_text()
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    done = subprocess.run([sys.executable, "-m", "course_utils.migrate", "assess", "--model",
                           "assess_models:fails_in_worker", "--batches", "assess_models:mlp_batches", "--processes",
                           "2", "--steps", "2", "--amp", "off", "--out", str(out)], cwd=HERE, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              [str(HERE), os.environ.get("PYTHONPATH", "")])})
    assert done.returncode == 1 and str(kept) in done.stderr, done.stderr


def test_ctrl_c_leaves_no_process_and_no_report(tmp_path) -> None:
    ready, out = tmp_path / "ready", tmp_path / "report"
    env = {**os.environ, "ASSESS_TEST_READY": str(ready),
           "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    caller = subprocess.Popen([sys.executable, "-m", "course_utils.migrate", "assess",
                               "--model", "assess_models:sleeper", "--batches", "assess_models:mlp_batches",
                               "--processes", "2", "--steps", "2",
                               "--amp", "off", "--out", str(out)], cwd=HERE, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint)
    try:
        deadline = time.time() + 240
        while not ready.exists():  # the measuring process has started its grandchild and is waiting
            assert caller.poll() is None, caller.communicate()
            assert time.time() < deadline, "the measuring process never started"
            time.sleep(0.2)
        worker = int(ready.read_text())
        caller.send_signal(signal.SIGINT)
        time.sleep(0.05)
        caller.send_signal(signal.SIGINT)  # an impatient second Ctrl-C changes neither the cleanup nor the code
        _, err = caller.communicate(timeout=60)
    finally:
        if caller.poll() is None:
            caller.kill()
    assert caller.returncode == 130, err
    assert "interrupted" in err
    assert not survivors("assess-test-grandchild")
    assert not survivors(str(tmp_path / ".report-assess-"))
    assert not _alive(worker)
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def _default_sigint() -> None:
    """A background job inherits an ignored SIGINT; the caller must see the Ctrl-C (see the launcher's test)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split()[2] != "Z"


def test_a_child_that_fails_shows_its_log_and_one_past_its_timeout_is_stopped(tmp_path) -> None:
    with pytest.raises(children.ChildFailed, match="(?s)exit code 3.*boom"):
        children.run_child([sys.executable, "-c", "import sys; print('boom', file=sys.stderr); sys.exit(3)"],
                           log=tmp_path / "a.log", timeout=60)
    started = []
    with pytest.raises(TimeoutError, match="timeout=1"):
        children.run_child([sys.executable, "-c", "import time; time.sleep(60)", "assess-test-timeout"],
                           log=tmp_path / "b.log", timeout=1, on_start=started.append)
    assert not survivors("assess-test-timeout")
    with pytest.raises(children.ChildFailed, match="killed by SIGSEGV"):
        children.run_child([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"],
                           log=tmp_path / "c.log", timeout=60)


def test_a_child_whose_own_child_keeps_the_pipe_returns_when_it_exits_and_a_half_line_keeps_the_deadline(
        tmp_path) -> None:
    """CI's 07 edition hung at stop 44: a pipe held open after the measuring process exits (a process it started
    inherits its stdout) must not wait for the deadline, and a line written without its newline must not block."""
    keeper = ("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', "
              "'assess-test-keeper']); print('one'); print('two', end=''); sys.stdout.flush()")
    lines, started = [], time.monotonic()
    children.run_child([sys.executable, "-c", keeper], log=tmp_path / "a.log", timeout=30, on_line=lines.append)
    assert lines == ["one", "two"] and time.monotonic() - started < 15 and not survivors("assess-test-keeper")
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="timeout=2"):
        children.run_child([sys.executable, "-c", "import sys, time; print('half', end=''); sys.stdout.flush(); "
                            "time.sleep(60)"], log=tmp_path / "b.log", timeout=2)
    assert time.monotonic() - started < 10


def test_end_to_end_steps_draw_from_a_dataloader_with_workers_and_time_the_wait_apart(dropout_run, drifts_run) -> None:
    _, found, out = dropout_run
    assert found.batch_inputs == "end-to-end" and found.eager_wait_s is not None and found.deciding.wait_s is not None
    assert 0 <= found.eager_wait_s < found.eager_step_s and found.deciding.parity.passed, found.deciding.parity
    assert "end to end: each step drew its batch from make_batches()" in found.setup
    assert "the wait for data was eager" in (out / "report.md").read_text()
    cached, out = drifts_run
    assert cached.eager_wait_s is None and "inputs cached" in cached.setup
    assert "Inputs cached (--inputs=cached)" in (out / "report.md").read_text()
    assert json.loads((out / "report.json").read_text())["batch_inputs"] == "cached"


def test_the_users_compile_function_decides_and_fullgraph_regional_and_the_optimizer_are_named(tmp_path,
                                                                                                tokens_run) -> None:
    _, found, out = tokens_run
    assert [m.call for m in found.modes] == ["assess_models:compile_fixed(model)",
                                             "torch.compile(model, mode='default', fullgraph=True)"]
    assert found.deciding.graphs > 0 and found.deciding.speedup.candidate == "assess_models:compile_fixed(model)"
    assert "| assess_models:compile_fixed(model) |" in (out / "report.md").read_text()
    regional = migrate.assess("assess_models:stack", "assess_models:mlp_batches", regional=True, processes=2, steps=2,
                              amp="off", out=tmp_path / "regional", progress=False, compile_optimizer=True)
    assert regional.deciding.call == ("torch.compile(block, mode='default') on each block of layers (3 blocks) + "
                                      "torch.compile(optimizer.step)")
    assert "--compile-optimizer" in regional.command
    assert regional.deciding.graphs >= 1 and regional.deciding.parity.passed
    with pytest.raises(ValueError, match="regional: the model holds no torch.nn.ModuleList"):
        migrate.assess("assess_models:mlp", "assess_models:mlp_batches", regional=True, processes=2, steps=2,
                       out=tmp_path / "none", progress=False)
    with pytest.raises(ValueError, match="fullgraph: it sets torch.compile's fullgraph=True for --modes"):
        migrate.assess("assess_models:mlp", "assess_models:mlp_batches", compiler="assess_models:compile_fixed",
                       fullgraph=True, processes=2, steps=2, out=tmp_path / "none", progress=False)


def test_the_share_of_the_step_inside_compiled_graphs_is_measured_on_a_cpu(tokens_run) -> None:
    _, found, out = tokens_run
    assert 0 < found.deciding.compiled_share <= 1, found.deciding.compiled_share
    assert "of the step's host time" in (out / "report.md").read_text()
