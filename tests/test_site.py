"""The course website (make site, tools/build_site.py).

Staging is checked on small notebooks made here, from metadata alone. The built site (built once per session)
is then opened from file:// with the network off in the browser the slides' tests use (Debian's Chromium
driven by Playwright, tests/test_browser.py): every page loads with no script error, no failed request, no
broken internal link and no missing image; a search finds notebook 05 by a word only it contains; the home
page and notebook 05 are screenshotted on a laptop screen and a phone, with no horizontal scrolling.
"""

from __future__ import annotations

import html
import importlib
import json
import re
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import nbformat
import pytest
from conftest import COURSE_NOTEBOOKS, ROOT
from test_browser import CHROMIUM, CHROMIUM_ARGS, SCREENSHOTS, _Watch

from course_utils import notebook as course_notebook

sys.path.insert(0, str(ROOT / "tools"))
build_site = importlib.import_module("build_site")

NEEDS_CHROMIUM = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason=f"Chromium is not installed at {CHROMIUM}: run `make browser` (apt-get install chromium) to test the "
    "website in a browser",
)
SCREENS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
PAGES = {"home": "index.html", "notebook": "notebooks/05_data_parallel.html"}


# --- staging, from metadata -------------------------------------------------------------------
def _small_notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(metadata={"widgets": {"application/vnd.jupyter.widget-state+json": {"state": {}}}})
    title = nbformat.v4.new_markdown_cell(f"# 99 · A title\n\nIntro. {course_notebook.badge('99_small.ipynb')}")
    notes = nbformat.v4.new_markdown_cell("Say this aloud only.", metadata={"slideshow": {"slide_type": "notes"}})
    hidden = nbformat.v4.new_code_cell("x = 1", metadata={"jupyter": {"source_hidden": True}})
    solution = nbformat.v4.new_code_cell("answer = 2", metadata={"tags": ["solution"]})
    widget = nbformat.v4.new_code_cell("explore()", outputs=[nbformat.v4.new_output(
        "display_data", data={build_site.WIDGET: {"model_id": "m"}, "text/plain": "VBox(...)"})])
    link = nbformat.v4.new_markdown_cell("See [04](04_input_pipeline.ipynb) and [the env](../ENVIRONMENT.md); "
                                         "`calls[0](x)` is code.")
    last = nbformat.v4.new_code_cell("print(cu.notebook.last_verified())", outputs=[nbformat.v4.new_output(
        "stream", name="stdout", text="Last verified 2026-01-01 on a laptop; torch 2.13.\n")])
    nb.cells = [title, notes, hidden, solution, widget, link, last]
    return nb


def test_site_notebook_works_from_metadata() -> None:
    nb = _small_notebook()
    page = build_site.site_notebook(nb, "99_small", {"notebooks/04_input_pipeline.ipynb"})
    assert len(nb.cells) == 7 and "tags" not in nb.cells[2].metadata, "the source notebook was changed"
    assert "Say this aloud only." not in json.dumps(page), "speaker notes reached the site"
    sources = [cell.source for cell in page.cells]
    tags = {cell.source: cell.metadata.get("tags", []) for cell in page.cells if cell.cell_type == "code"}
    assert "hide-input" in tags["x = 1"] and "hide-cell" in tags["answer = 2"]
    assert tags["explore()"] == [] and tags["print(cu.notebook.last_verified())"] == []
    widget_output = page.cells[3].outputs[0]
    assert build_site.WIDGET not in widget_output.data and "interactive widget" in widget_output.data["text/markdown"]
    assert "widgets" not in page.metadata
    header = sources[0]
    assert header.startswith("# 99 · A title\n") and header.index("Last verified 2026-01-01") < header.index("Intro.")
    assert header.count("Open In Colab") == 1, "the notebook's own badge and the header's are one badge"
    assert "https://colab.research.google.com/assets" not in header and build_site.BADGE_IMAGE in header
    assert course_notebook.badge("99_small.ipynb").split("](")[-1] in header  # the link of badge(), reused
    assert "{download}`Download the notebook (.ipynb) </originals/99_small.ipynb>`" in header
    assert "[04](04_input_pipeline.ipynb)" in sources[4]
    env_url = f"{course_notebook.REPO_URL}/blob/{course_notebook.RELEASE}/ENVIRONMENT.md"
    assert f"[the env]({env_url})" in sources[4]
    assert "`calls[0](x)` is code." in sources[4]


def test_a_notebook_without_its_last_verified_line_says_so() -> None:
    nb = _small_notebook()
    nb.cells = nb.cells[:1]
    assert "record no 'last verified' line" in build_site.site_notebook(nb, "99_small", set()).cells[0].source


def test_readme_sections_and_the_sample_report(tmp_path) -> None:
    readme = "# T\n\nWho.\n\n## A\n\n```bash\n## not a heading\n```\n### Sub\n\n## B\n\nb\n"
    assert build_site.section(readme, "A") == "```bash\n## not a heading\n```\n### Sub"
    assert build_site.section(readme, "C") is None
    assert build_site.deeper("## x\n### y\ntext ## z") == "### x\n#### y\ntext ## z"
    stored = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("show()", metadata={"tags": ["sample-report"]},
                                                                       outputs=[nbformat.v4.new_output(
        "display_data", {"text/markdown": "<details><summary>report.md: Should we?</summary>\n\n**Speed**\n\n"
                                          "| a | b |\n|---|---|\n</details>"})])])
    nbformat.write(stored, tmp_path / "99_x.ipynb")
    page = build_site.assess_page(readme.replace("## B", f"## {build_site.ASSESS}"), set(), [tmp_path / "99_x.ipynb"])
    assert page.startswith(f"# {build_site.ASSESS}\n\nb") and "## A sample report" in page
    assert "**report.md: Should we?**" in page and "<details>" not in page and "| a | b |" in page
    fallback = build_site.assess_page(readme, set(), [tmp_path / "99_x.ipynb"])
    assert f"({course_notebook.REPO_URL}/blob/{course_notebook.RELEASE}/README.md)" in fallback
    with pytest.raises(ValueError, match="sample-report"):
        build_site.sample_report([])


# --- the built site ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def site() -> Path:
    build_site.build()
    return build_site.OUT


def _hidden_cells(nb: dict) -> int:
    return sum(cell["cell_type"] == "code" and (cell["metadata"].get("jupyter", {}).get("source_hidden")
                                                or "solution" in cell["metadata"].get("tags", []))
               for cell in nb["cells"])


@pytest.mark.integration
@pytest.mark.parametrize("notebook", COURSE_NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_page(notebook: Path, site: Path) -> None:
    nb = json.loads(notebook.read_text())
    text = html.unescape((site / "notebooks" / f"{notebook.stem}.html").read_text())
    verified = build_site.last_verified(nbformat.read(notebook, as_version=4))
    assert verified, f"{notebook.name} stores no 'Last verified' output"
    title = text.index("<h1", text.index('<article class="bd-article"'))
    assert title < text.find(verified) < text.index("<h2", title), "the last-verified line is not under the title"
    collapsed = len(re.findall(r'<details class="[^"]*\bhide\b', text))
    assert collapsed >= _hidden_cells(nb), f"{notebook.stem}: {collapsed} collapsed cells, {_hidden_cells(nb)} hidden"
    assert "colab.research.google.com/github/" in text and f"{notebook.name}\"" in text  # badge, download
    plots = sum("image/png" in out.get("data", {}) for cell in nb["cells"] for out in cell.get("outputs", [])
                if (cell["metadata"].get("slideshow") or {}).get("slide_type") != "notes")
    shown = len(re.findall(r'<img [^>]*src="\.\./_images/[0-9a-f]+\.png"', text))
    assert shown == plots, f"{notebook.stem}: {shown} plots on the page, {plots} stored in the notebook"


@pytest.mark.integration
def test_site_loads_nothing_from_the_network(site: Path) -> None:
    assert build_site.remote_loads(site) == []
    pages = {p.relative_to(site).as_posix() for p in _pages(site)}
    expected = {"index.html", "assess.html", "ARCHITECTURE.html", "slides/instructor_guide.html", "search.html",
                "slides/answer_key.html"}  # the key the guide links to (its anchors: test_every_page_in_the_browser)
    assert expected | {f"notebooks/{p.stem}.html" for p in COURSE_NOTEBOOKS} <= pages


@pytest.mark.integration
def test_the_assess_page_shows_a_sample_report_and_the_home_page_links_the_leads_page(site: Path) -> None:
    text = _page_text(site / "assess.html")
    assert "A sample report" in text and "report.md: Should we migrate" in text
    assert "page to hand to your lead" in _page_text(site / "index.html")


@pytest.mark.integration
def test_every_markdown_table_renders_as_a_table(site: Path) -> None:
    """A Markdown table (a README section, a cell, or a ``text/markdown`` output such as 07's page for the lead)
    that the page leaves as pipe text has lost its blank line or its parser: its delimiter row shows as text."""
    delimiter = re.compile(r"^\s*\|(?:\s*[-\u2013\u2014:]+\s*\|)+\s*$", re.M)
    left = {p.relative_to(site).as_posix(): delimiter.findall(_page_text(p))[:1] for p in _pages(site)}
    left = {page: rows for page, rows in left.items() if rows}
    assert not left, f"Markdown tables left as pipe text: {left}"


# --- in the browser ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


def _pages(site: Path) -> list[Path]:
    """Every page of the site (_static holds the theme's own template fragments, which are no pages)."""
    return sorted(p for p in site.rglob("*.html") if "_static" not in p.relative_to(site).parts)


def _ids(page: Path, cache: dict[Path, set[str]]) -> set[str]:
    if page not in cache:
        cache[page] = set(re.findall(r'\b(?:id|name)="([^"]+)"', page.read_text()))
    return cache[page]


def _open(browser, url: str, viewport: dict) -> tuple:
    context = browser.new_context(offline=True, viewport=viewport)
    watch = _Watch(context, allowed=("file://", "data:"))
    page = context.new_page()
    watch.attach(page)
    failed: list[str] = []
    page.on("requestfailed", lambda request: failed.append(f"{request.url}: {request.failure}"))
    page.goto(url)
    page.wait_for_function("() => Array.from(document.images).every(img => img.complete)", timeout=30_000)
    return context, page, watch, failed


@pytest.mark.integration
@NEEDS_CHROMIUM
def test_every_page_in_the_browser(site: Path, browser) -> None:
    ids: dict[Path, set[str]] = {}
    problems = []
    for path in _pages(site):
        context, page, watch, failed = _open(browser, path.as_uri(), SCREENS["desktop"])
        try:
            if page.evaluate("() => document.querySelector('.math') !== null"):  # MathJax, the local copy
                page.wait_for_function("() => document.querySelectorAll('mjx-container').length > 0", timeout=30_000)
            images = page.evaluate("() => Array.from(document.images).map(i => [i.src, i.naturalWidth])")
            links = page.evaluate("() => Array.from(document.querySelectorAll('a[href]')).map(a => a.href)")
            page.wait_for_timeout(200)  # late script errors
        finally:
            context.close()
        name = path.relative_to(site).as_posix()
        problems += [f"{name}: image {src} did not render" for src, width in images if width == 0]
        problems += [f"{name}: {e}" for e in watch.errors + failed + [f"network: {u}" for u in watch.remote]]
        for link in links:
            url = urlparse(link)
            if url.scheme != "file":
                continue
            target = Path(unquote(url.path))
            if not target.exists():
                problems.append(f"{name}: broken link {link}")
            elif url.fragment and target.suffix == ".html" and unquote(url.fragment) not in _ids(target, ids):
                problems.append(f"{name}: link to a missing anchor {link}")
    assert not problems, "\n".join(problems)


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]{7,}", text.lower()))


def _page_text(page: Path) -> str:
    text = re.sub(r"<(script|style)\b.*?</\1>", " ", page.read_text(), flags=re.DOTALL)
    return html.unescape(re.sub(r"<[^>]+>", " ", text))


@pytest.mark.integration
@NEEDS_CHROMIUM
def test_search_finds_notebook_05(site: Path, browser) -> None:
    nb = json.loads((ROOT / "notebooks" / "05_data_parallel.ipynb").read_text())
    prose = " ".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    prose = re.sub(r"```.*?```|`[^`]*`|\$\$.*?\$\$|\$[^$]*\$|\]\([^)]*\)|<[^>]+>", " ", prose, flags=re.DOTALL)
    others = set().union(*(_words(_page_text(p)) for p in _pages(site) if p.stem != "05_data_parallel"))
    only_05 = sorted(_words(prose) - others, key=lambda w: (-len(w), w))
    assert only_05, "no word of notebook 05's text is absent from every other page"
    word = only_05[0]
    context, page, watch, failed = _open(browser, f"{(site / 'search.html').as_uri()}?q={word}", SCREENS["desktop"])
    try:
        page.wait_for_function("() => (document.querySelector('#search-results .search-summary') || {}).innerText",
                               timeout=30_000)
        found = page.evaluate("() => Array.from(document.querySelectorAll('#search-results li a')).map(a => a.href)")
    finally:
        context.close()
    assert any("05_data_parallel.html" in url for url in found), f"searching {word!r} found {found}"
    assert not (watch.errors or failed or watch.remote), watch.errors + failed + watch.remote


@pytest.mark.integration
@NEEDS_CHROMIUM
@pytest.mark.parametrize("screen", SCREENS)
@pytest.mark.parametrize("which", PAGES)
def test_screenshots_without_horizontal_scroll(site: Path, browser, which: str, screen: str) -> None:
    context, page, watch, failed = _open(browser, (site / PAGES[which]).as_uri(), SCREENS[screen])
    try:
        page.wait_for_timeout(500)  # MathJax and the theme's layout settle
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"site-{which}-{screen}.png"))
        widths = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        closed = page.evaluate("() => Array.from(document.querySelectorAll('details.hide')).every(d => !d.open)")
    finally:
        context.close()
    assert widths[0] <= widths[1], f"{PAGES[which]} scrolls sideways at {screen} width: {widths}"
    assert closed, "a hidden cell is open"
    assert not (watch.errors or failed or watch.remote), watch.errors + failed + watch.remote
