"""Build the course as a static website that works offline (make site).

Sphinx + MyST-NB + sphinx-book-theme, all pinned in requirements.txt, render the notebooks from their STORED
outputs (nothing is executed), so a reader sees the numbers of the run recorded in each notebook; the "last
verified" line of that run is shown at the top of each notebook's page. (mystmd / Jupyter Book 2 would fetch
their themes from outside the package registries at build time, which offline machines cannot do.)

Pages are generated from the sources on every build, never copied by hand: the sources are staged into
build/site-src/ (home page and "Assess your own model" from README.md, the notebooks, the instructor guide and
the answer key it links to, ARCHITECTURE.md), then Sphinx writes build/site/ with the configuration in site/.
Staging works from cell metadata only: hidden code (jupyter.source_hidden) gets MyST-NB's `hide-input` tag,
cells tagged `solution` `hide-cell`, speaker notes (slide_type `notes`) are dropped. MathJax comes from the pinned
npm package the slides use (slides/package-lock.json). The build fails if a page would load anything from the network.
MyST-NB keeps the images it extracts in build/jupyter_execute/ (next to the output folder).

    python tools/build_site.py                 # build/site/index.html
"""

from __future__ import annotations

import argparse
import copy
import posixpath
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import answer_key  # noqa: E402  (the answer key the guide links to, a page of its own here too)
import build_slides  # noqa: E402  (the slides' notebook list, metadata readers, vendor install and remote check)

from course_utils import notebook as course_notebook  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "site"
OUT = ROOT / "build" / "site"
STAGE = ROOT / "build" / "site-src"
DOCTREES = ROOT / "build" / "site-doctrees"
BADGE_IMAGE = "/assets/open-in-colab.svg"  # staged from slides/assets; "/" = the staging folder in Sphinx paths
MATHJAX = "mathjax"  # folder in _static; site/conf.py's mathjax_path points into it
MAP_BEGIN, MAP_END = "<!-- BEGIN course map -->", "<!-- END course map -->"
ASSESS = "Assess your own model"
WIDGET = "application/vnd.jupyter.widget-view+json"

_LINK = re.compile(r"\]\(([^)\s]+)")  # the target of a Markdown link or image
_CODE = re.compile(r"(```.*?```|`[^`\n]*`)", re.DOTALL)
_SCHEME = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|#|/)", re.IGNORECASE)
_H1 = re.compile(r"^# .+$", re.MULTILINE)
_REMOTE_CSS_URL = re.compile(r"url\(\s*[\"']?(?:https?:)?//", re.IGNORECASE)
_KEY_LINK = re.compile(r"\[([^\]]+)\]\((" + re.escape(answer_key.PAGE) + r"(?:#[\w-]+)?)\)")  # to the key
_COLAB_SVG = re.search(r"!\[[^\]]*\]\(([^)]+)\)", course_notebook.badge("x.ipynb")).group(1)


# --- Markdown from the repository -------------------------------------------------------------
def section(text: str, heading: str) -> str | None:
    """The body of the level-2 section ``## heading`` of ``text`` (fenced code is not mistaken for headings)."""
    lines, body, inside, fenced = text.splitlines(), [], False, False
    for line in lines:
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("## "):
            if inside:
                break
            inside = line[3:].strip() == heading
            continue
        if inside:
            body.append(line)
    return "\n".join(body).strip() if inside else None


def between(text: str, begin: str, end: str) -> str:
    """The text between two marker lines (a missing marker is an error: the page would silently lose it)."""
    if begin not in text or end not in text:
        raise ValueError(f"README.md lacks the markers {begin!r} ... {end!r}")
    return text[text.index(begin) + len(begin) : text.index(end)].strip()


def deeper(markdown: str) -> str:
    """Every heading one level deeper (a README section becomes a page whose title is added above it)."""
    return re.sub(r"^(#{2,5}) ", r"#\1 ", markdown, flags=re.MULTILINE)


def site_markdown(markdown: str, where: str, pages: set[str]) -> str:
    """``markdown`` (from the repository folder ``where``) for the site: the Colab badge image local, relative
    links to staged pages kept, links to other repository files sent to the repository at the release tag."""
    markdown = markdown.replace(f"]({_COLAB_SVG})", f"]({BADGE_IMAGE})")

    def target(match: re.Match) -> str:
        link = match.group(1)
        if _SCHEME.match(link):
            return match.group(0)
        path = posixpath.normpath(posixpath.join(where, link.split("#")[0]))
        if path in pages:
            return match.group(0)
        return f"]({course_notebook.REPO_URL}/blob/{course_notebook.RELEASE}/{path})"

    parts = _CODE.split(markdown)  # code (odd items) keeps its brackets as they are
    return "".join(part if i % 2 else _LINK.sub(target, part) for i, part in enumerate(parts))


def key_links(markdown: str) -> str:
    """Links to an entry of the answer key as HTML: the key's entries are HTML ids that MyST's link check cannot
    see, so they reach the page as the browser reads them."""
    return _KEY_LINK.sub(lambda m: f'<a href="{m.group(2)}">{m.group(1).replace("**", "")}</a>', markdown)


# --- notebooks ----------------------------------------------------------------------------------
def last_verified(nb: nbformat.NotebookNode) -> str | None:
    """The "Last verified ..." line the notebook printed (cu.notebook.last_verified()), from its stored outputs."""
    for cell in reversed(nb.cells):
        for output in cell.get("outputs", []):
            text = "".join(output.get("text", "")) or "".join(output.get("data", {}).get("text/plain", ""))
            found = re.search(r"^Last verified .+$", text, re.MULTILINE)
            if found:
                return found.group(0).strip()
    return None


def page_header(name: str, verified: str | None) -> str:
    """The box under a notebook's title: where its numbers come from, the Colab badge, the download link."""
    run = verified or "This notebook's stored outputs record no 'last verified' line."
    return (
        "\n\n```{admonition} The numbers on this page\n:class: tip course-verified\n"
        f"{run} The page shows the outputs stored in the notebook; run it to get your machine's.\n\n"
        f"{course_notebook.badge(f'{name}.ipynb')} "
        f"{{download}}`Download the notebook (.ipynb) </originals/{name}.ipynb>`\n```\n"
    )


def _collapse(cell: nbformat.NotebookNode) -> None:
    """MyST-NB tags from the cell's metadata: hidden code stays collapsed, a solution is collapsed whole."""
    tags = cell.metadata.setdefault("tags", [])
    hidden = cell.metadata.get("jupyter", {})
    wanted = {"hide-input": hidden.get("source_hidden"), "hide-output": hidden.get("outputs_hidden"),
              "hide-cell": "solution" in tags}
    tags += [tag for tag, on in wanted.items() if on and tag not in tags]


def _static_output(output: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A widget needs a kernel (and its JavaScript from a CDN): on the site it is a sentence saying so."""
    if WIDGET not in output.get("data", {}):
        return output
    note = "*An interactive widget: it works where the notebook runs (JupyterLab or Colab).*"
    return nbformat.v4.new_output("display_data", data={"text/markdown": note})


def site_notebook(nb: nbformat.NotebookNode, name: str, pages: set[str]) -> nbformat.NotebookNode:
    """A copy of ``nb`` for its page: speaker notes dropped, hidden cells collapsed, widgets described, the
    header box (last verified, Colab badge, download) under the title."""
    nb = copy.deepcopy(nb)
    nb.metadata.pop("widgets", None)
    nb.cells = [cell for cell in nb.cells if build_slides.slide_type(cell) != "notes"]
    titled = False
    for cell in nb.cells:
        if cell.cell_type == "code":
            _collapse(cell)
            cell.outputs = [_static_output(output) for output in cell.outputs]
        elif cell.cell_type == "markdown":
            text = cell.source.replace(course_notebook.badge(f"{name}.ipynb"), "")  # the header box carries it
            title = _H1.search(text)
            if title and not titled:
                text = text[: title.end()] + page_header(name, last_verified(nb)) + text[title.end() :]
                titled = True
            cell.source = site_markdown(text, "notebooks", pages)
    if not titled:
        raise ValueError(f"{name}: no Markdown cell has a '# title' line")
    return nb


# --- pages --------------------------------------------------------------------------------------
def home_page(readme: str, names: list[str], pages: set[str]) -> str:
    """index.md: the README's title and introduction (who it is for), course map, quick start and Colab."""
    title = _H1.search(readme)
    intro = readme[title.end() : readme.index("\n## ")].strip()
    parts = [title.group(0), intro,
             "This website shows every notebook with the outputs stored in it, and the run they came from.",
             "## The course map", between(readme, MAP_BEGIN, MAP_END)]
    for heading in ("Quick start", "Colab"):
        body = section(readme, heading)
        if body is None:
            raise ValueError(f"README.md has no '## {heading}' section for the home page")
        parts += [f"## {heading}", deeper(body)]
    notebooks = "\n".join(f"notebooks/{name}" for name in names)
    parts += ["```{toctree}\n:hidden:\n:caption: Notebooks\n\n" + notebooks + "\n```",
              "```{toctree}\n:hidden:\n:caption: More\n\nassess\nslides/instructor_guide\nslides/answer_key\n"
              "ARCHITECTURE\n```"]
    return site_markdown("\n\n".join(parts) + "\n", "", pages)


def assess_page(readme: str, pages: set[str], paths: list[Path]) -> str:
    """assess.md: README's section on assessing your own model (or where to read about it), then a sample report:
    the stored output of the notebook cell tagged ``sample-report``."""
    body = section(readme, ASSESS)
    if body is None:
        body = ("`python -m course_utils.migrate assess` measures eager against compiled on your own model and "
                "device and writes a one-page report. It is described in the last notebook and in the "
                "[README](README.md).")
    return site_markdown(f"# {ASSESS}\n\n{deeper(body)}\n\n{sample_report(paths)}", "", pages)


def sample_report(paths: list[Path]) -> str:
    """A report as ``assess`` wrote it, from the stored run of the notebook that shows one (tag ``sample-report``)."""
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            outputs = cell.get("outputs", []) if "sample-report" in cell.metadata.get("tags", []) else []
            for text in (out.get("data", {}).get("text/markdown") for out in outputs):
                if text:
                    report = re.sub(r"<summary>(.*?)</summary>", r"**\1**", re.sub(r"</?details>", "", text)).strip()
                    return (f"## A sample report\n\nThe report `assess` wrote in the stored run of "
                            f"[{path.stem}](notebooks/{path.name}) ({last_verified(nb) or 'no last-verified line'}):"
                            f" that run's numbers and machine, not yours.\n\n{report}\n")
    raise ValueError("no notebook stores the output of a cell tagged 'sample-report' (run the course first)")


def stage(stage_dir: Path = STAGE) -> list[str]:
    """Write every page's source into ``stage_dir`` (emptied first); return the notebook names."""
    if stage_dir.exists():
        shutil.rmtree(stage_dir)
    (stage_dir / "notebooks").mkdir(parents=True)
    (stage_dir / "originals").mkdir()
    (stage_dir / "slides").mkdir()
    paths = build_slides.course_notebooks()
    if not paths:
        raise FileNotFoundError("no course notebooks in notebooks/")
    names = [path.stem for path in paths]
    pages = {f"notebooks/{name}.ipynb" for name in names} | {"slides/instructor_guide.md", "ARCHITECTURE.md",
                                                             f"slides/{answer_key.PAGE}"}
    for path in paths:
        nbformat.write(site_notebook(nbformat.read(path, as_version=4), path.stem, pages),
                       stage_dir / "notebooks" / path.name)
        shutil.copyfile(path, stage_dir / "originals" / path.name)
    readme = (ROOT / "README.md").read_text()
    (stage_dir / "index.md").write_text(home_page(readme, names, pages))
    (stage_dir / "assess.md").write_text(assess_page(readme, pages, paths))
    guide = build_slides.GUIDE.read_text()
    (stage_dir / "slides" / "instructor_guide.md").write_text(key_links(site_markdown(guide, "slides", pages)))
    key = answer_key.markdown(*answer_key.entries({path.stem: path for path in paths}))  # the stored outputs
    (stage_dir / "slides" / "answer_key.md").write_text(site_markdown(key, "notebooks", pages))
    (stage_dir / "ARCHITECTURE.md").write_text(site_markdown((ROOT / "ARCHITECTURE.md").read_text(), "", pages))
    shutil.copytree(build_slides.SLIDES / "assets", stage_dir / "assets")
    return names


# --- building and checking ----------------------------------------------------------------------
def install_mathjax(out: Path) -> bool:
    """Copy MathJax (the slides' pinned npm package) next to the pages, when a page typesets math."""
    if not any(f"{MATHJAX}/tex-chtml-full.js" in page.read_text() for page in out.rglob("*.html")):
        return False
    es5 = build_slides.ensure_vendor() / "mathjax" / "es5"
    target = out / "_static" / MATHJAX
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(es5 / "output" / "chtml" / "fonts", target / "output" / "chtml" / "fonts")
    shutil.copyfile(es5 / "tex-chtml-full.js", target / "tex-chtml-full.js")
    shutil.copyfile(es5.parent / "LICENSE", target / "LICENSE")
    return True


def remote_loads(out: Path) -> list[str]:
    """Every reference in the built site that would load a script, style, font or image from the network
    (plain links to other sites are fine)."""
    found = []
    for page in sorted(out.rglob("*.html")):
        found += [f"{page.relative_to(out)}: {ref}" for ref in build_slides.remote_references(page.read_text())]
    for sheet in sorted(out.rglob("*.css")):
        found += [f"{sheet.relative_to(out)}: {m.group(0)}" for m in _REMOTE_CSS_URL.finditer(sheet.read_text())]
    return found


def build(out: Path = OUT) -> dict:
    """Stage the sources and build the website into ``out`` (replaced); return what was built. Sphinx's
    warnings (a broken link, a missing image) fail the build."""
    start = time.perf_counter()
    names = stage()
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-c", str(CONF), "-d", str(DOCTREES), "-E",
           "-j", "auto", "--fail-on-warning", "--keep-going", "-q", str(STAGE), str(out)]
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"sphinx-build failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    math = install_mathjax(out)
    remote = remote_loads(out)
    if remote:
        raise RuntimeError("the website would load from the network:\n" + "\n".join(remote))
    return {"notebooks": names, "math": math, "seconds": round(time.perf_counter() - start, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT, help="output folder (default build/site)")
    args = parser.parse_args()
    built = build(args.out.resolve())
    print(f"{len(built['notebooks'])} notebooks in {built['seconds']:.0f} s: open {args.out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
