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
