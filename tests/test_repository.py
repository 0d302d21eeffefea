"""The repository's promises about itself: one source of versions, loose package requirements, one URL."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
import tomllib
import types

import yaml
from conftest import ROOT

from course_utils import notebook


def _pins(lines: list[str]) -> list[str]:
    return sorted(line.strip() for line in lines if line.strip() and not line.strip().startswith("#"))


def test_environment_yml_mirrors_requirements_txt() -> None:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    requirements = _pins((ROOT / "requirements.txt").read_text().splitlines())
    assert sorted(pip_section) == requirements, "environment.yml differs from requirements.txt: make environment.yml"


def test_requirements_are_exact_pins() -> None:
    for line in _pins((ROOT / "requirements.txt").read_text().splitlines()):
        assert "==" in line and not any(op in line.split(";")[0] for op in (">", "<", "~", "*")), line
    assert "torch==2.13.0" in _pins((ROOT / "requirements.txt").read_text().splitlines())


def test_package_requirements_are_loose_and_frameworks_are_extras() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not any("==" in dep for dep in project["dependencies"])
    assert not any(dep.split(">")[0].strip() in ("torch", "jax", "tensorflow") for dep in project["dependencies"])
    assert set(project["optional-dependencies"]) >= {"torch", "jax", "tf", "all"}


def test_repository_url_is_in_one_place() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["urls"]["Repository"] == notebook.REPO_URL
    readme = (ROOT / "README.md").read_text()
    assert notebook.REPO_URL in readme


def test_architecture_page_names_every_package_and_core_module() -> None:
    page = (ROOT / "ARCHITECTURE.md").read_text()
    package = ROOT / "course_utils"
    for path in sorted(package.iterdir()):
        if path.is_dir() and (path / "__init__.py").exists() or path.name == "workers":
            assert f"`{path.name}/`" in page, f"ARCHITECTURE.md does not name the package {path.name}/"
        elif path.suffix == ".py" and path.name != "__init__.py":
            assert f"`{path.name}`" in page, f"ARCHITECTURE.md does not name the core module {path.name}"


def test_readme_layout_lists_every_core_module_and_names_the_course_file() -> None:
    readme = (ROOT / "README.md").read_text()
    layout = readme[readme.index("## Layout"):].split("```")[1]
    package = ROOT / "course_utils"
    core = {p.stem for p in package.glob("*.py") if p.name != "__init__.py"}
    listed = {word.strip(",") for word in layout.replace("\n", " ").split()}
    assert core <= listed, f"README Layout misses core modules: {sorted(core - listed)}"
    assert "course.toml" in readme, "README must point at course.toml for the lessons and their packages"


def _resolves(root: object, chain: list[str]) -> bool:
    for name in chain:
        if not hasattr(root, name):
            try:
                root = importlib.import_module(f"{root.__name__}.{name}")
            except (AttributeError, ImportError):
                return False
            continue
        root = getattr(root, name)
        if not isinstance(root, types.ModuleType):
            return True  # past the package: a value's own attributes are the value's business
    return True


def test_every_course_utils_name_a_benchmark_calls_exists() -> None:
    """make bench is not run by the suite (tests never assert speed), so a renamed helper would break it unseen."""
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        tree, bound = ast.parse(path.read_text()), {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("course_utils"):
                module = importlib.import_module(node.module)
                for alias in node.names:
                    assert _resolves(module, [alias.name]), f"{path.name}: {node.module}.{alias.name}"
                    bound[alias.asname or alias.name] = getattr(module, alias.name, None) or \
                        importlib.import_module(f"{node.module}.{alias.name}")
        for node in ast.walk(tree):
            chain = []
            while isinstance(node, ast.Attribute):
                chain, node = [node.attr, *chain], node.value
            if chain and isinstance(node, ast.Name) and node.id in bound:
                assert _resolves(bound[node.id], chain), f"{path.name}: {node.id}.{'.'.join(chain)} does not exist"


def test_every_python_one_liner_in_the_readme_runs() -> None:
    """README's `python -c "..."` commands, run as a reader pastes them (one printed cu.migrate.example_toml, which
    the package never exported)."""
    commands = re.findall(r'`python -c "([^"`]+)"`', (ROOT / "README.md").read_text())
    assert commands, "README shows no python -c command"
    for code in commands:
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and done.stdout.strip(), f"{code}\n{done.stderr[-1500:]}"
