"""The Colab install cell must never replace the runtime's torch, jax or tensorflow.

Colab ships its own builds of the frameworks (CUDA or TPU); reinstalling one from PyPI breaks the runtime.
The first code cell of every notebook (tests/test_notebooks.py checks that it is this cell) installs
course_utils only on Colab, and course_utils declares no framework outside its extras. Checked three
ways: the cell's text and behaviour, the package's declared requirements, and what pip would really
install for the package into this venv (which, like Colab, has the frameworks already).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib

import pytest
from conftest import ROOT
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from course_utils import notebook

pytestmark = pytest.mark.integration  # files, builds and notebooks: not in make test-unit

FRAMEWORKS = {
    canonicalize_name(name)
    for name in (
        "torch", "torchvision", "torchaudio", "triton", "jax", "jaxlib", "libtpu", "tensorflow",
        "tensorflow-cpu", "tf-nightly", "keras", "tf-keras", "flax", "optax",
    )
}
FRAMEWORK_PREFIXES = ("nvidia-", "jax-cuda", "tensorflow-")


def _is_framework(name: str) -> bool:
    name = canonicalize_name(name)
    return name in FRAMEWORKS or name.startswith(FRAMEWORK_PREFIXES)


def test_declared_requirements_name_no_framework_outside_the_extras() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    required = [Requirement(dep) for dep in project["dependencies"]]
    assert not [str(r) for r in required if _is_framework(r.name)], "a framework in [project] dependencies"
    assert not [str(r) for r in required if any(s.operator in ("==", "===", "<", "<=", "~=") for s in r.specifier)], (
        "course_utils' own requirements must be lower bounds only, or Colab's versions get replaced"
    )
    extras = {name: [Requirement(d) for d in deps] for name, deps in project["optional-dependencies"].items()}
    assert {canonicalize_name(r.name) for deps in extras.values() for r in deps} <= FRAMEWORKS


def _run_install_cell(monkeypatch: pytest.MonkeyPatch, on_colab: bool) -> list[list[str]]:
    """Execute the install cell as a notebook would, with pip replaced; return the commands it would run."""
    if on_colab:
        monkeypatch.setitem(sys.modules, "google.colab", object())
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    calls: list[list[str]] = []
    monkeypatch.setattr(subprocess, "run", lambda args, **kwargs: calls.append(args))
    exec(compile(notebook.install_cell(), "<install cell>", "exec"), {})
    return calls


def test_install_cell_installs_only_course_utils_and_only_on_colab(monkeypatch, tmp_path) -> None:
    cell = notebook.install_cell()
    assert 'if "google.colab" in sys.modules:' in cell
    assert notebook.INSTALL_SPEC in cell and notebook.INSTALL_SPEC.startswith("course_utils @ git+")
    for flag in ("--upgrade", " -U", "--force-reinstall", "--ignore-installed", "[all]", "[torch]", "[jax]", "[tf]"):
        assert flag not in cell, f"the install cell must not use {flag!r}"
    monkeypatch.chdir(tmp_path)
    assert _run_install_cell(monkeypatch, on_colab=False) == []  # outside Colab the cell does nothing
    calls = _run_install_cell(monkeypatch, on_colab=True)  # on Colab: exactly one pip install of course_utils
    assert len(calls) == 1 and calls[0][-1] == notebook.INSTALL_SPEC
    assert calls[0][1:4] == ["-m", "pip", "install"] and not [a for a in calls[0] if _is_framework(a.split()[0])]


def test_install_cell_takes_an_uploaded_wheel_before_the_release(monkeypatch, tmp_path) -> None:
    """Colab's Files pane saves an upload into the notebook's folder (/content): the cell installs that file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "course_utils-0.1.0.tar.gz").write_bytes(b"")  # not a wheel: ignored
    assert _run_install_cell(monkeypatch, on_colab=True)[0][-1] == notebook.INSTALL_SPEC
    wheel = tmp_path / "course_utils-0.2.0-py3-none-any.whl"
    wheel.write_bytes(b"")
    calls = _run_install_cell(monkeypatch, on_colab=True)
    assert len(calls) == 1 and calls[0][-1] == wheel.name and calls[0][1:4] == ["-m", "pip", "install"]
    assert _run_install_cell(monkeypatch, on_colab=False) == []


def _colab_pins(runtime: str) -> dict[str, str]:
    text = (ROOT / f"requirements-colab-{runtime}.txt").read_text()
    lines = [line.split("#")[0].strip() for line in text.splitlines()]
    pins = [Requirement(line) for line in lines if line]
    return {canonicalize_name(r.name): next(iter(r.specifier)).version for r in pins}


@pytest.mark.parametrize("runtime", ["gpu", "tpu"])
def test_colab_versions_satisfy_the_package_so_pip_upgrades_none(runtime: str) -> None:
    """pip install leaves a satisfied requirement alone: each of course_utils' requirements must admit the version
    Colab ships (ipywidgets 7.7.1, numpy 2.0.2, ...), or the install cell replaces it."""
    pins = _colab_pins(runtime)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for dep in map(Requirement, project["dependencies"]):
        name = canonicalize_name(dep.name)
        assert name in pins, f"requirements-colab-{runtime}.txt must pin {dep.name}, which course_utils requires"
        assert dep.specifier.contains(pins[name]), f"{dep} would replace Colab's {dep.name} {pins[name]}"
    assert {"jax", "jaxlib", "torch", "numpy", "ipywidgets"} <= set(pins)
    has_tf = {"tensorflow-cpu", "keras"} <= set(pins)
    assert has_tf == (runtime == "gpu"), "Colab's GPU runtimes ship TensorFlow and Keras, its TPU runtimes none"


@pytest.mark.slow
def test_pip_would_install_no_framework_for_the_package(tmp_path) -> None:
    """Resolve `pip install .` against this venv (torch, jax and TF present, as on Colab): dry run, no index."""
    report = tmp_path / "report.json"
    cmd = [
        sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--no-build-isolation",
        "--disable-pip-version-check", "--quiet", "--report", str(report), str(ROOT),
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"pip could not resolve course_utils from what is installed:\n{result.stderr}"
    would_install = [item["metadata"]["name"] for item in json.loads(report.read_text())["install"]]
    assert not [name for name in would_install if _is_framework(name)]
    assert {canonicalize_name(n) for n in would_install} <= {"course-utils"}, would_install
