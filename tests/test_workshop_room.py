"""The room (issue 39): one rule for torch's CPU build that requirements.txt, the Makefile and the GPU lock agree on;
make doctor, the learner's pre-flight check, run for real and on made-up failures; the helpers' page."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest
from conftest import ROOT
from test_workshop_setup import _dry_make

pytestmark = pytest.mark.integration  # runs make and the frameworks

sys.path.insert(0, str(ROOT / "tools"))
torch_index = importlib.import_module("torch_index")
doctor = importlib.import_module("doctor")
gpu_requirements = importlib.import_module("gpu_requirements")
platform_requirements = importlib.import_module("platform_requirements")


def test_the_cpu_index_is_used_on_linux_only_where_it_answers() -> None:
    option = f"--extra-index-url {torch_index.CPU_INDEX}"
    assert torch_index.pip_option("Linux", answers=True) == option
    assert torch_index.pip_option("linux", answers=False) == "", "a machine that reaches PyPI alone installs as before"
    assert torch_index.pip_option("Darwin", answers=True) == torch_index.pip_option("Windows", answers=True) == ""
    with pytest.raises(ValueError, match="system"):
        torch_index.pip_option("", answers=True)
    with pytest.raises(ValueError, match="timeout"):
        torch_index.reachable(timeout=0)


def test_requirements_makefile_and_gpu_lock_state_the_same_rule() -> None:
    requirements = (ROOT / "requirements.txt").read_text()
    assert "torch==2.13.0\n" in requirements, "the pin has no local label: +cpu and PyPI's CUDA wheel both satisfy it"
    assert torch_index.CPU_INDEX in requirements and "tools/torch_index.py" in requirements
    assert "tools/torch_index.py" in (ROOT / "Makefile").read_text()
    assert "tools/torch_index.py" in (ROOT / "tools" / "gpu_requirements.py").read_text()
    gpu = gpu_requirements.gpu_lines(requirements)
    assert "torch==2.13.0" in gpu and not any(torch_index.CPU_INDEX in line for line in gpu if not line.startswith("#"))
    option = f"--extra-index-url {torch_index.CPU_INDEX}"
    setup = [line for line in _dry_make("setup", f"TORCH_INDEX={option}") if "-r requirements.txt" in line]
    wheels = [line for line in _dry_make("wheelhouse", f"TORCH_INDEX={option}") if "pip download" in line]
    assert setup and wheels and all(option in line for line in setup + wheels)
    offline = [line for line in _dry_make("setup", "WHEELHOUSE=wheelhouse", f"TORCH_INDEX={option}")
               if "pip install" in line]
    assert not any(option in line for line in offline), "a wheelhouse install asks no index"


def test_a_lock_is_read_as_the_target_platform_reads_it() -> None:
    lock = 'torch==2.13.0\ntensorflow-cpu==2.21.0; sys_platform == "linux"\ntensorflow==2.21.0; sys_platform != "linux"'
    assert platform_requirements.platform_lines(lock, "macosx_14_0_arm64") == ["torch==2.13.0", "tensorflow==2.21.0"]
    assert platform_requirements.platform_lines(lock, "win_amd64")[1:] == ["tensorflow==2.21.0"]
    assert platform_requirements.platform_lines(lock, "manylinux_2_28_x86_64")[1:] == ["tensorflow-cpu==2.21.0"]
    with pytest.raises(ValueError, match="platform must be a wheel platform tag"):
        platform_requirements.platform_lines(lock, "amiga_68k")


def test_wheelhouse_for_another_platform_downloads_its_wheels(tmp_path) -> None:
    """make wheelhouse PLATFORM=macosx_14_0_arm64 on this Linux machine, with a three-line lock: the macOS wheel of
    psutil, the line marked for macOS, not the one marked for Windows (needs PyPI)."""
    import os
    import urllib.request

    try:
        urllib.request.urlopen("https://pypi.org/simple/psutil/", timeout=10).close()
    except OSError:
        pytest.skip("PyPI does not answer from here")
    psutil = next(line for line in (ROOT / "requirements.txt").read_text().splitlines() if line.startswith("psutil=="))
    lock = tmp_path / "lock.txt"
    lock.write_text(f'{psutil}\ntqdm==4.70.1; sys_platform == "darwin"\ncolorama==0.4.6; sys_platform == "win32"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")} | {"PIP_CONFIG_FILE": "/dev/null"}
    wheels = tmp_path / "wheels"
    run = subprocess.run(["make", "wheelhouse", "PLATFORM=macosx_14_0_arm64", f"REQUIREMENTS={lock}",
                          f"WHEELHOUSE={wheels}", f"PYTHON={sys.executable}"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    names = sorted(p.name for p in wheels.iterdir())
    assert any(n.startswith("psutil-") and "macosx" in n for n in names) and any(n.startswith("tqdm-") for n in names)
    assert not any(n.startswith("colorama-") for n in names) and "measured now" in run.stdout


def test_doctor_runs_and_its_exit_status_follows_what_blocks() -> None:
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "doctor.py")], capture_output=True, text=True,
                         timeout=600, cwd=ROOT)
    for check in ("Python", "C++ compiler", "torch", "jax", "tensorflow", "free disk", "Jupyter kernel"):
        assert f"  {check}: " in run.stdout, f"make doctor does not report {check}: {run.stdout}"
    blocks = any(line.startswith("FAIL") for line in run.stdout.splitlines())
    assert run.returncode == int(blocks), run.stdout
    assert ("block the course" in run.stdout) == blocks
    assert "doctor:" in (ROOT / "Makefile").read_text()


def test_doctor_says_how_to_fix_what_is_wrong(tmp_path) -> None:
    old = doctor.check_python((3, 9, 1))
    assert old.status == "FAIL" and "3.11" in old.detail and "make setup PYTHON=python3.11" in old.fix
    none = doctor.check_compiler(("no-such-compiler++",))
    assert none.status == "FAIL" and "apt-get install g++" in none.fix and "xcode-select" in none.fix
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'jax'\" >&2\nexit 1\n")
    broken.chmod(0o755)
    jax = doctor.check_framework("jax", str(broken))
    assert jax.status == "WARN" and "skipped" in jax.detail and "make setup" in jax.fix
    assert doctor.check_framework("torch", str(broken)).status == "FAIL"
    kernel = doctor.check_kernel("no-such-kernel-xyz")
    assert kernel.status == "FAIL" and "make setup" in kernel.fix
    with pytest.raises(ValueError, match="name must be one of"):
        doctor.check_framework("mxnet")


def test_helpers_page_covers_the_errors_of_the_day() -> None:
    page = (ROOT / "slides" / "helpers.md").read_text()
    for topic in ("compiler", "port", "out of memory", "Restart", "quota", "make doctor"):
        assert topic.lower() in page.lower(), f"slides/helpers.md says nothing about {topic!r}"
    build_slides = importlib.import_module("build_slides")
    assert "](helpers.md)" in build_slides.GUIDE.read_text(), "the guide sends helpers to their page"
    assert 'href="helpers.html"' in build_slides._page_html("Guide", "[the helpers' page](helpers.md)"), \
        "next to the decks (make slides), the guide links the helpers' page as HTML"
