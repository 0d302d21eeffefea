"""course_utils.compile_report: tlparse's report of TORCH_TRACE logs, read back into counts."""

from __future__ import annotations

import json

import pytest

from course_utils import compile_report


def _fake_report(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "reasons.json").write_text(json.dumps(["0/0: tensor 'x' size mismatch at index 0"]))
    (tmp_path / "a" / "break.txt").write_text("Graph break in user code\n"
                                              "Graph Break Reason: Data-dependent branching\n")
    directory = {
        "[-/-]": {"artifacts": []},
        "[0/0]": {"artifacts": [{"name": "dynamo_graph_break_reason_1.txt", "url": "a/break.txt"}]},
        "[0/1]": {"artifacts": [{"name": "recompile_reasons_2.json", "url": "a/reasons.json"},
                                {"name": "dynamo_graph_break_reason_3.txt", "url": "a/break.txt"}]},
        "[1/0]": {"artifacts": []},
    }
    (tmp_path / "compile_directory.json").write_text(json.dumps(directory))
    return tmp_path


def test_counts_from_a_report_folder(tmp_path) -> None:
    report = compile_report.read_report(_fake_report(tmp_path))
    assert (report.frames, report.compilations, report.recompiles, report.graph_breaks) == (2, 3, 1, 1)
    assert report.break_reasons == ("Data-dependent branching",)
    assert report.recompile_reasons[0].startswith("0/0: tensor 'x' size mismatch")
    assert "graph breaks" in repr(report)


def test_malformed_reports_and_bad_arguments_are_clear(tmp_path) -> None:
    from badinput import rejects

    rejects(lambda: compile_report.read_report(tmp_path), "folder")
    (tmp_path / "compile_directory.json").write_text("{")
    rejects(lambda: compile_report.read_report(tmp_path), "folder")
    rejects(lambda: compile_report.read_report(None), "folder")
    rejects(lambda: compile_report.torch_compile_report("", "x"), "code")
    rejects(lambda: compile_report.torch_compile_report("pass", "../up"), "name")
    rejects(lambda: compile_report.torch_compile_report("pass", "x", timeout=float("nan")), "timeout")


@pytest.mark.integration
def test_a_real_run_counts_the_recompile_and_the_break(tmp_path) -> None:
    code = ("import torch\n"
            "def f(x):\n    if x.sum() > 0:\n        return x * 2\n    return x - 1\n"
            "g = torch.compile(f)\nfor n in (4, 5):\n    g(torch.ones(n))\n")
    report = compile_report.torch_compile_report(code, "demo", folder=tmp_path)
    assert report.graph_breaks == 1 and report.recompiles >= 1
    assert (tmp_path / "demo" / "report" / "index.html").exists()


def test_tlparse_available_follows_the_executable(monkeypatch, tmp_path) -> None:
    assert compile_report.tlparse_available()  # the course's lock installs it beside this Python
    monkeypatch.setattr(compile_report.sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert not compile_report.tlparse_available()
    with pytest.raises(RuntimeError, match="pip install tlparse"):
        compile_report.torch_compile_report("pass", "x", folder=tmp_path)


@pytest.mark.parametrize(("directory", "field"), [
    ([], "must hold an object"),
    ({"[0/0]": {"artifacts": 3}}, "'artifacts' list"),
    ({"[0/0]": {"artifacts": [{"url": "a.txt"}]}}, r"artifacts\[0\]"),
    ({"[0/0]": {"artifacts": [{"name": "recompile_reasons_1.json", "url": "../../etc/passwd"}]}}, "'url'"),
], ids=["not-an-object", "artifacts-not-a-list", "artifact-without-name", "url-leaving-the-report"])
def test_a_malformed_directory_field_is_named(tmp_path, directory, field) -> None:
    (tmp_path / "compile_directory.json").write_text(json.dumps(directory))
    with pytest.raises(ValueError, match=field):
        compile_report.read_report(tmp_path)


def test_a_report_never_deletes_a_folder_it_did_not_write(tmp_path) -> None:
    from badinput import rejects

    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "mine.txt").write_text("the learner's own file")
    rejects(lambda: compile_report.torch_compile_report("pass", "notes", folder=tmp_path), "folder/name")
    assert (tmp_path / "notes" / "mine.txt").exists()
    rejects(lambda: compile_report.torch_compile_report("pass", "..", folder=tmp_path), "name")  # rmtree(folder/..)
    rejects(lambda: compile_report.torch_compile_report("pass", "x", folder=tmp_path / ".." / "up"), "folder")
