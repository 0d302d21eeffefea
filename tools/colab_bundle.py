"""Write the course_utils wheel a learner uploads to a Colab session (``make colab-bundle``).

The notebooks' install cell (``course_utils.notebook.install_cell``) installs a ``course_utils-*-py3-none-any.whl``
found in the notebook's folder (where Colab's Files pane saves an upload) and falls back to the release address
only without one: the course runs on Colab before it is published.

The wheel is built from a clean copy of the package (pyproject.toml, README.md, course_utils/ without caches), so
nothing left in an earlier build folder can slip into it.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "README.md")


def build_wheel(out: Path, root: Path = ROOT) -> Path:
    """Build the wheel of ``root``'s course_utils into ``out`` (replacing an earlier one there); return its path."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("course_utils-*.whl"):
        old.unlink()
    with tempfile.TemporaryDirectory() as tmp:
        for name in SOURCES:
            shutil.copy2(root / name, Path(tmp) / name)
        shutil.copytree(root / "course_utils", Path(tmp) / "course_utils",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        cmd = [sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps",
               "--no-build-isolation", "--wheel-dir", str(out), tmp]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"pip wheel failed (it needs setuptools in {sys.executable}):\n{result.stderr}")
    wheels = sorted(out.glob("course_utils-*-py3-none-any.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"expected one course_utils wheel in {out}; found {[w.name for w in wheels]}")
    return wheels[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "colab-bundle", help="folder for the wheel")
    wheel = build_wheel(parser.parse_args().out)
    print(f"{wheel}\nOn Colab: upload it in the Files pane (it lands in /content), then run the notebook's first cell.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
