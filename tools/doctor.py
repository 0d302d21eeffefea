"""make doctor: the pre-flight check a learner runs a week before the workshop. It says what is wrong on this
machine and how to fix it, and exits non-zero when something would block the day.

Checks, each printed as ok, WARN (a part of the course is lost) or FAIL (the course cannot run):
Python version, a C++ compiler for Inductor (torch.compile on a CPU writes and builds C++), each framework
imported and run for one training step in a fresh process (torch is needed; JAX and TensorFlow cost one section
each when missing), free disk, and the course's Jupyter kernel registered. Standard library only: it runs
under any Python, inside the course's venv or not.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MIN_PYTHON = (3, 11)
MIN_FREE_GIB, WARN_FREE_GIB = 3.0, 8.0  # the venv and build/ take about 3 GiB; caches and decks need room above
STEP_SECONDS = 180  # a cold import of TensorFlow on a slow laptop takes a minute
STEPS = {  # one SGD step per framework, the smallest that exercises its autodiff
    "torch": "import torch\nw = torch.ones(3, requires_grad=True)\n(w * torch.arange(3.0)).sum().backward()\n"
             "assert w.grad.tolist() == [0.0, 1.0, 2.0]",
    "jax": "import jax, jax.numpy as jnp\ng = jax.grad(lambda w: (w * jnp.arange(3.0)).sum())(jnp.ones(3))\n"
           "assert g.block_until_ready().tolist() == [0.0, 1.0, 2.0]",
    "tensorflow": "import tensorflow as tf\nw = tf.Variable(tf.ones(3))\nwith tf.GradientTape() as tape:\n"
                  "    loss = tf.reduce_sum(w * tf.range(3.0))\n"
                  "assert tape.gradient(loss, w).numpy().tolist() == [0, 1, 2]",
}
REQUIRED = ("torch",)


@dataclass(frozen=True)
class Finding:
    """One check's outcome: ``status`` is 'ok', 'WARN' or 'FAIL'; ``fix`` says what to do when it is not ok."""

    check: str
    status: str
    detail: str
    fix: str = ""

    def line(self) -> str:
        return f"{self.status:4}  {self.check}: {self.detail}" + (f"\n      fix: {self.fix}" if self.fix else "")


def check_python(version: tuple[int, ...] = tuple(sys.version_info[:3])) -> Finding:
    """Python at least ``MIN_PYTHON`` (jax 0.10 and numpy 2.4 need it)."""
    shown = ".".join(map(str, version))
    if tuple(version[:2]) >= MIN_PYTHON:
        return Finding("Python", "ok", shown)
    need = ".".join(map(str, MIN_PYTHON))
    return Finding("Python", "FAIL", f"{shown}, the course needs {need} or later",
                   f"install Python {need} (python.org, or your package manager), then make setup PYTHON=python{need}")


def check_compiler(candidates: tuple[str, ...] = ("c++", "g++", "clang++")) -> Finding:
    """A C++ compiler that builds a file: Inductor, torch.compile's CPU backend, writes C++ and compiles it."""
    found = [shutil.which(name) for name in candidates]
    compiler = next((path for path in found if path), None)
    fix = ("Debian/Ubuntu/WSL: sudo apt-get install g++; Fedora: sudo dnf install gcc-c++; macOS: xcode-select "
           "--install; native Windows: use WSL2 (Inductor needs MSVC there, untested)")
    if compiler is None:
        return Finding("C++ compiler", "FAIL", f"none of {', '.join(candidates)} on PATH: torch.compile fails on a CPU",
                       fix)
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "probe.cpp"
        source.write_text("#include <vector>\nint main() { std::vector<float> v(4); return int(v.size()) - 4; }\n")
        built = subprocess.run([compiler, str(source), "-o", str(Path(tmp) / "probe")], capture_output=True,
                               text=True, timeout=120)
    if built.returncode != 0:
        return Finding("C++ compiler", "FAIL", f"{compiler} cannot build a C++ file: {built.stderr.strip()[:200]}",
                       fix)
    return Finding("C++ compiler", "ok", compiler)


def check_framework(name: str, python: str = sys.executable, timeout: float = STEP_SECONDS) -> Finding:
    """``name`` imports and takes one gradient step in a fresh ``python`` process."""
    if name not in STEPS:
        raise ValueError(f"name must be one of {sorted(STEPS)}; got {name!r}")
    try:
        run = subprocess.run([python, "-c", STEPS[name]], capture_output=True, text=True, timeout=timeout)
        error = run.stderr.strip().splitlines()[-1] if run.returncode else ""
    except subprocess.TimeoutExpired:
        error = f"no answer within {timeout:g} s"
    if not error:
        return Finding(name, "ok", "imports and runs one training step")
    missing = "ModuleNotFoundError" in error
    fix = "run make setup (or make setup WHEELHOUSE=<the stick's folder> without network)" if missing else \
        "run make setup again; if it persists, bring this output to a helper or use Colab from the notebook's badge"
    status = "FAIL" if name in REQUIRED else "WARN"
    lost = "the course cannot run" if name in REQUIRED else "its sections are skipped with one sentence"
    return Finding(name, status, f"{error[:200]} ({lost})", fix)


def check_disk(path: Path = ROOT) -> Finding:
    """Free space where the course builds: FAIL under ``MIN_FREE_GIB``, WARN under ``WARN_FREE_GIB``."""
    free = shutil.disk_usage(path).free / 2**30
    fix = "free disk space (empty the trash, remove old virtual environments or Docker images)"
    if free < MIN_FREE_GIB:
        return Finding("free disk", "FAIL", f"{free:.1f} GiB free at {path}, the course needs {MIN_FREE_GIB:g}", fix)
    if free < WARN_FREE_GIB:
        return Finding("free disk", "WARN", f"{free:.1f} GiB free at {path}; {WARN_FREE_GIB:g} leaves room for "
                                            "caches and decks", fix)
    return Finding("free disk", "ok", f"{free:.1f} GiB free")


def check_kernel(kernel: str, python: str = sys.executable) -> Finding:
    """The course's Jupyter kernel is registered for ``python``'s Jupyter (make setup registers it)."""
    code = "from jupyter_client.kernelspec import KernelSpecManager as K; print(' '.join(K().find_kernel_specs()))"
    run = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
    names = run.stdout.split()
    if run.returncode == 0 and kernel in names:
        return Finding("Jupyter kernel", "ok", kernel)
    detail = f"{kernel!r} is not registered (found: {', '.join(names) or 'no Jupyter'})"
    return Finding("Jupyter kernel", "FAIL", detail, "run make setup: it registers the kernel in .venv")


def run_checks(kernel: str, python: str = sys.executable) -> list[Finding]:
    """Every check, in the order a helper would fix them."""
    return [check_python(), check_compiler(), *(check_framework(name, python) for name in STEPS), check_disk(),
            check_kernel(kernel, python)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernel", default="eager-to-compiled", help="the course's kernel name (the Makefile's)")
    args = parser.parse_args()
    findings = run_checks(args.kernel)
    print("\n".join(f.line() for f in findings))
    blocking = [f.check for f in findings if f.status == "FAIL"]
    if blocking:
        print(f"\nmake doctor: {len(blocking)} problem(s) block the course: {', '.join(blocking)}. Fix them, run "
              "make doctor again; slides/helpers.md lists the usual errors and their fixes.")
        return 1
    print("\nmake doctor: ready for the workshop" + (" (with the warnings above)" if any(
        f.status == "WARN" for f in findings) else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
