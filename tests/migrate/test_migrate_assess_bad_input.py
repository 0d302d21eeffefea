"""assess refuses bad input before measuring anything, with an error that names it, and writes nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from course_utils import migrate

HERE = Path(__file__).resolve().parent
GOOD = {"model": "assess_models:mlp", "batches": "assess_models:mlp_batches"}


@pytest.fixture(autouse=True)
def _importable(monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(HERE))


def _refused(tmp_path: Path, error: type[Exception] | tuple, match: str, **kwargs) -> None:
    out = tmp_path / "report"
    with pytest.raises(error, match=match):
        migrate.assess(**{**GOOD, **kwargs}, out=out, progress=False)
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "a temporary folder was left behind"


@pytest.mark.parametrize("kwargs, error, match", [
    ({"model": "mlp"}, ValueError, "model must be 'package.module:function'"),
    ({"model": "no_such_module_xyz:make"}, ValueError, "model: module 'no_such_module_xyz' does not import: "
                                                       "ModuleNotFoundError"),
    ({"model": "assess_models:nothing"}, ValueError, "model: module 'assess_models' has no 'nothing'"),
    ({"model": "assess_models:NOT_CALLABLE"}, TypeError, "model: assess_models:NOT_CALLABLE is int, not a function"),
    ({"model": "assess_models:raises"}, ValueError, "model: .*raised ValueError: my own message from make_model"),
    ({"model": "assess_models:not_a_module"}, TypeError, "model: .*returned list, not a torch.nn.Module"),
    ({"model": lambda: None}, TypeError, "model: .*cannot import it"),
    ({"batches": "assess_models:no_batches"}, ValueError, "batches: .*yielded no batch"),
    ({"batches": "assess_models:not_pairs"}, TypeError, r"batches: each batch must be an \(inputs, targets\) pair"),
    ({"batches": "assess_models:token_batches"}, ValueError, "one eager training step on the first batch"),
    ({"loss": "assess_models:nothing"}, ValueError, "loss: module 'assess_models' has no 'nothing'"),
    ({"processes": 1}, ValueError, "processes"),
    ({"processes": "5"}, TypeError, "processes"),
    ({"steps": 1}, ValueError, "steps"),
    ({"modes": "fast"}, ValueError, "modes must be one of"),
    ({"modes": []}, ValueError, "modes must not be empty"),
    ({"amp": "fp8"}, ValueError, "amp must be one of"),
    ({"device": "tpu"}, ValueError, "device must be one of"),
    ({"timeout": float("nan")}, ValueError, "timeout"),
    ({"model": "assess_models:hangs", "timeout": 2}, TimeoutError, "model/batches/loss: assess_models:hangs\\(\\).* "
                                                                  "did not return within 2 s"),
])
def test_bad_input_is_named_and_nothing_is_written(tmp_path, kwargs, error, match) -> None:
    _refused(tmp_path, error, match, **kwargs)


@pytest.mark.parametrize("text, match", [("monthly_spend = -1\n", "field 'monthly_spend'"),
                                         ("spend = 1\n", "unknown field 'spend'")])
def test_a_bad_config_is_refused_before_measuring(tmp_path, text, match) -> None:
    config = tmp_path / "costs.toml"
    config.write_text(text)
    _refused(tmp_path, ValueError, match, config=config)


def test_out_must_not_be_a_file_or_someone_elses_folder(tmp_path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="out: .* is a file"):
        migrate.assess(**GOOD, out=tmp_path / "file", progress=False)
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "notes.txt").write_text("keep me")
    with pytest.raises(ValueError, match="out: .* holds other files"):
        migrate.assess(**GOOD, out=tmp_path / "theirs", progress=False)
    assert (tmp_path / "theirs" / "notes.txt").read_text() == "keep me"


@pytest.mark.parametrize("out, match", [("/proc/assess-test/report", "out: cannot write in '/proc'"),
                                        ("{tmp}/file/report", "out: '.*file' is a file")])
def test_out_that_cannot_be_written_is_refused_before_anything_runs(tmp_path, out, match) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match=match):  # the model would raise if it ran: out is checked first
        migrate.assess("assess_models:raises", GOOD["batches"], out=out.format(tmp=tmp_path), progress=False)
    assert not [p for p in Path("/proc").iterdir() if p.name.startswith(".assess-write-check-")]


def test_the_command_line_prints_the_error_and_exits_2(tmp_path) -> None:
    done = subprocess.run([sys.executable, "-m", "course_utils.migrate", "assess", "--model", "assess_models:raises",
                           "--batches", "assess_models:mlp_batches", "--out", str(tmp_path / "out")], cwd=HERE,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "error: model: assess_models:raises() raised ValueError: my own message from make_model" in done.stderr
    assert not (tmp_path / "out").exists()


def test_the_command_line_for_a_users_own_model() -> None:
    command = migrate.command_line("mypkg.models:make_model", "mypkg.data:make_batches", config="costs.toml")
    assert command == ("python -m course_utils.migrate assess --model mypkg.models:make_model --batches "
                       "mypkg.data:make_batches --config costs.toml --processes 5 --steps 50 --device auto --modes "
                       "default --amp auto --out build/assess/mymodel")
    with pytest.raises(ValueError, match="model"):
        migrate.command_line(" ", "mypkg.data:make_batches")
