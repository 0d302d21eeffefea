"""The frame of every notebook: ``setup()``, the Colab cell and badge, the skip of a section whose framework is
missing, the summary table (gathered by ``tools/run_course.py`` via ``COURSE_SUMMARY_DIR``), 'last verified'."""

from __future__ import annotations

import datetime
import json
import math
import numbers
import os
import random
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any

from course_utils import declare, devices, display, env, plotting, validate
from course_utils.declare import NonEmpty, Text

REPO_URL = "https://github.com/eager-to-compiled/course"
RELEASE = "v0.2.0"  # the tag Colab installs course_utils from; one place, checked by tests/test_notebook.py

_INSTALL_HINT = {
    "torch": "pip install torch (PyTorch is required by every notebook)",
    "jax": "pip install jax",
    "tensorflow": "pip install tensorflow-cpu (or tensorflow on a GPU machine)",
}


def setup(seed: int = 0) -> env.EnvReport:
    """The one call at the top of each notebook (device memory shares, quiet start, strict deprecations, plot style,
    seeds); returns the environment report, saying first when PyTorch, which every notebook needs, is missing."""
    seed = validate.count("seed", seed, low=0, high=MAX_SEED)
    devices.apply(devices.current())  # on one GPU: JAX's and TF's share, before their first operation
    if not env.available("torch"):
        print(f"PyTorch is not installed: this course needs it ({_INSTALL_HINT['torch']}).")
    env.quiet_tensorflow()
    env.fail_on_deprecations()
    plotting.use_style()
    seed_everything(seed)
    return env.report()


MAX_SEED = 2**32 - 1


@declare.checked
def seed_everything(seed: Annotated[int, declare.Range(0, MAX_SEED)] = 0) -> list[str]:  # NumPy takes 32 bits
    """Seed ``random``, NumPy and torch / TensorFlow if already imported (seed after importing); returns the names
    seeded. JAX has no global seed: its randomness is explicit (``jax.random.key(seed)``)."""
    import numpy as np

    random.seed(seed)
    np.random.seed(seed)
    seeded = ["random", "numpy"]
    if sys.modules.get("torch") is not None:  # None in sys.modules means "not importable here"
        sys.modules["torch"].manual_seed(seed)
        seeded.append("torch")
    if sys.modules.get("tensorflow") is not None:
        sys.modules["tensorflow"].random.set_seed(seed)
        seeded.append("tensorflow")
    return seeded


def needs(*frameworks: str) -> bool:
    """True when every framework named can be imported; otherwise print one sentence and return False, so that
    ``if cu.notebook.needs("tensorflow"):`` skips that part on a runtime without it."""
    validate.non_empty("frameworks", frameworks)
    missing = [name for name in (validate.framework(f, f"frameworks[{i}]") for i, f in enumerate(frameworks))
               if not env.available(name)]
    if not missing:
        return True
    names = " and ".join(validate.framework_title(m) for m in missing)
    colab = " (Colab TPU runtimes ship none)" if "tensorflow" in missing else ""
    hints = "; ".join(_INSTALL_HINT[m] for m in missing)
    verb = "is" if len(missing) == 1 else "are"
    print(f"{names} {verb} not installed in this runtime{colab}: this part is skipped. To run it: {hints}.")
    return False


@declare.checked
def present(frameworks: Iterable[str] = validate.FRAMEWORKS) -> list[str]:
    """The canonical names among ``frameworks`` (a list or tuple of names, not one string) that can be imported
    here, in the order given."""
    return [name for name in (validate.framework(f, f"frameworks[{i}]") for i, f in enumerate(frameworks))
            if env.available(name)]


# ---------------------------------------------------------------------------------------------------------
# Colab


INSTALL_SPEC = f"course_utils @ git+{REPO_URL}@{RELEASE}"  # pip's requirement: the repository at the pinned tag

#: the file ``make colab-bundle`` writes and a learner uploads to a Colab session (its Files pane saves into the
#: notebook's folder, /content): the install cell takes it when present, so the course runs before publication
WHEEL_PATTERN = "course_utils-*-py3-none-any.whl"


def install_cell() -> str:
    """Source of every notebook's first code cell (a test checks that each notebook starts with it)."""
    return (
        "# Colab only: install the course helpers, from a course_utils wheel uploaded to this session (make\n"
        "# colab-bundle writes it) or else from the release. Colab's own torch, jax, tensorflow, numpy and ipywidgets\n"
        "# are left as they are.\n"
        "import glob\n"
        "import subprocess\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        f'    uploaded = sorted(glob.glob("{WHEEL_PATTERN}"))\n'
        f'    source = uploaded[-1] if uploaded else "{INSTALL_SPEC}"\n'
        '    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", source], check=True)'
    )


def badge(notebook: str) -> str:
    """Markdown for an 'Open in Colab' badge of ``notebook`` (e.g. '00_measuring.ipynb')."""
    validate.text("notebook", notebook)
    if not notebook.endswith(".ipynb"):
        raise ValueError(f"notebook must name an .ipynb file; got {notebook!r}")
    path = REPO_URL.replace("https://github.com/", "")
    url = f"https://colab.research.google.com/github/{path}/blob/{RELEASE}/notebooks/{notebook}"
    return f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({url})"


# ---------------------------------------------------------------------------------------------------------
# The closing summary


@declare.checked
@dataclass(frozen=True)
class Row:
    """One measured quantity: its name, value, unit and a short note (e.g. the article's claim)."""

    quantity: Text
    value: Any
    unit: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.value, bool) or not isinstance(self.value, numbers.Real):
            raise TypeError(f"value of {self.quantity!r} must be a number; got {type(self.value).__name__} "
                            f"{self.value!r}")
        # NumPy scalars in, Python numbers kept: the summary is written as JSON
        object.__setattr__(self, "value", int(self.value) if isinstance(self.value, numbers.Integral)
                           else float(self.value))

    def formatted(self) -> str:
        if isinstance(self.value, int):
            return f"{self.value:,}"
        return f"{self.value:.3g}" if math.isfinite(self.value) else str(self.value)


@declare.checked
@dataclass(frozen=True, repr=False)
class SummaryTable(display.Tabled):
    """What this run measured, in one table; ``rows`` keep the numbers for the build summary."""

    notebook: Text
    rows: Annotated[tuple[Row, ...], NonEmpty]

    verdicts: tuple[tuple[str, int], ...] = ()  # (status, count): display.verdict_counts()

    def __post_init__(self) -> None:
        object.__setattr__(self, "rows", tuple(self.rows))

    def table(self) -> display.Table:
        """The rows, and the predictions' line: 'Predictions scored in this run: 9 held, 2 failed, ...'."""
        counts = dict(self.verdicts)
        scored = (f"Predictions scored in this run: {counts.get(display.HELD, 0)} held, "
                  f"{counts.get(display.FAILED, 0)} failed, {counts.get(display.NOT_DECIDED, 0)} not decided, "
                  f"{counts.get(display.NOT_TESTED, 0)} not tested here.")
        return display.table(["quantity", "measured", "unit", "note"],
                             [(r.quantity, r.formatted(), r.unit, r.note) for r in self.rows],
                             title=f"Measured in this run ({self.notebook})", note=scored)

    def to_dict(self) -> dict[str, object]:
        return {
            "notebook": self.notebook,
            "environment": [list(r) for r in env.report(devices=False).rows()],
            "rows": [asdict(r) for r in self.rows],
            "verdicts": dict(self.verdicts),
        }


@declare.checked
def summary_table(notebook: Text, rows: Iterable[Row | tuple]) -> SummaryTable:
    """Build the notebook's summary; also write it to ``$COURSE_SUMMARY_DIR/<notebook>.json`` when set."""
    built = tuple(_row(i, r) for i, r in enumerate(validate.non_empty("rows", list(rows))))
    summary = SummaryTable(notebook, built, tuple(display.verdict_counts().items()))
    target = os.environ.get("COURSE_SUMMARY_DIR")
    if target:
        path = Path(target) / f"{notebook}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(summary.to_dict(), indent=2))
    return summary


def _row(i: int, row: Any) -> Row:
    if isinstance(row, Row):
        return row
    if not isinstance(row, (tuple, list)) or not 2 <= len(row) <= 4:
        raise TypeError(f"rows[{i}] must be a Row or a (quantity, value[, unit[, note]]) tuple; got {row!r}")
    return Row(*row)


def last_verified() -> str:
    """One line for a notebook's last cell: date, machine and framework versions of this run."""
    report = env.report(devices=False)
    versions = ", ".join(f"{fw.name} {fw.version}" for fw in report.frameworks)
    return (
        f"Last verified {datetime.date.today().isoformat()} on {report.cpu} ({report.cores_logical} cores, "
        f"accelerator: {report.accelerator}, size: {report.size}); Python {report.python}; {versions}."
    )
