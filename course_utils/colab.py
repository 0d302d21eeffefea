"""The one place that says where the course lives, and the first cell of every notebook that uses it.

On Colab the first cell installs ``course_utils`` from the repository (its requirements are loose, so
Colab's own torch, jax and tensorflow stay as they are); everywhere else it does nothing.
"""

from __future__ import annotations

REPO_URL = "https://github.com/eager-to-compiled/course"
BRANCH = "main"


def install_spec() -> str:
    """The pip requirement that installs course_utils from the repository."""
    return f"course_utils @ git+{REPO_URL}@{BRANCH}"


def install_cell() -> str:
    """Source of every notebook's first code cell (a test checks that each notebook starts with it)."""
    return (
        "# Colab only: install the course helpers. Colab's own torch, jax and tensorflow are left as they are.\n"
        "import subprocess\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        f'    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "{install_spec()}"], check=True)'
    )


def badge(notebook: str) -> str:
    """Markdown for an 'Open in Colab' badge of ``notebook`` (e.g. '00_measuring.ipynb')."""
    if not notebook.endswith(".ipynb"):
        raise ValueError(f"notebook must name an .ipynb file; got {notebook!r}")
    path = REPO_URL.replace("https://github.com/", "")
    url = f"https://colab.research.google.com/github/{path}/blob/{BRANCH}/notebooks/{notebook}"
    return f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({url})"
