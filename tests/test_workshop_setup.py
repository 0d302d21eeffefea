"""Set-up for a room without internet: make wheelhouse / make setup WHEELHOUSE=..., and make lab as root."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import ROOT

pytestmark = pytest.mark.integration


def _dry_make(*args: str) -> list[str]:
    out = subprocess.run(["make", "-n", "-B", *args], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    return out.stdout.splitlines()


def test_setup_from_a_wheelhouse_never_asks_an_index() -> None:
    installs = [line for line in _dry_make("setup", "WHEELHOUSE=wheelhouse") if "pip install" in line]
    from_network = [line for line in installs if "--no-index" not in line and "-e ." not in line]
    assert installs and not from_network, f"pip installs that would reach an index: {from_network}"


def test_lab_adds_allow_root_only_for_root() -> None:
    lab = next(line for line in _dry_make("lab") if "jupyter lab" in line)
    root = subprocess.run(["id", "-u"], capture_output=True, text=True).stdout.strip() == "0"
    assert ("--allow-root" in lab) == root
    assert "--ip=127.0.0.1" in lab


def test_course_utils_installs_from_a_folder_of_wheels_with_no_index(tmp_path) -> None:
    wheels, venv = tmp_path / "wheelhouse", tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(wheels), str(ROOT)], check=True, timeout=300)
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=120)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
                    "--find-links", str(wheels), "course_utils"], check=True, timeout=300)
    out = subprocess.run([str(venv / "bin" / "python"), "-c", "import course_utils, sys; print(course_utils.__file__)"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120, check=True)
    assert str(venv) in out.stdout


def _closure(root: str) -> set[str]:
    """The distributions ``root`` needs in this environment (its requirements, recursively, markers applied)."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen, todo = set(), [root]
    while todo:
        name = canonicalize_name(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        for line in metadata.requires(name) or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return seen


def test_make_setup_installs_from_a_wheelhouse_inside_a_network_namespace(tmp_path) -> None:
    """The offline path for real: `make wheelhouse` downloads a small lock (ipykernel, course_utils' own
    requirements and what they need, at the pins of requirements.txt; no framework), then
    `make setup WHEELHOUSE=...` builds a venv from it with no network at all."""
    from packaging.utils import canonicalize_name

    if subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare -n (a network namespace) needs root here")
    import tomllib

    from packaging.requirements import Requirement

    own = [Requirement(r).name for r in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]]
    wanted = set().union(*(_closure(name) for name in ["ipykernel", *own])) | {"pip", "setuptools", "wheel"}
    lines = [line for line in (ROOT / "requirements.txt").read_text().splitlines()
             if "==" in line and canonicalize_name(line.split("==")[0]) in wanted]
    lock = tmp_path / "requirements-mini.txt"
    lock.write_text("\n".join(lines) + "\n")
    wheels, venv = tmp_path / "wheelhouse", tmp_path / "venv"
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = "/dev/null"  # no find-links or index from this machine's pip.conf
    make = ["make", f"REQUIREMENTS={lock}", f"WHEELHOUSE={wheels}", f"VENV={venv}", f"PYTHON={sys.executable}"]
    subprocess.run([*make, "wheelhouse"], cwd=ROOT, env=env, check=True, timeout=600, capture_output=True)
    offline = subprocess.run(["unshare", "-n", *make, "setup"], cwd=ROOT, env=env, timeout=600,
                             capture_output=True, text=True)
    assert offline.returncode == 0, offline.stdout[-2000:] + offline.stderr[-2000:]
    out = subprocess.run([str(venv / "bin" / "python"), "-c", "import course_utils, ipykernel; print('ok')"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr
