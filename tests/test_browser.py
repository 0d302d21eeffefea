"""The workshop in a real browser: headless Chromium (Debian's, at /usr/bin/chromium) driven by Playwright.

1. Every deck of build/slides/ opened from file:// with the network off: reveal.js initialised, as many
   slides as the notebook's slide metadata asks for, every image rendered, speaker notes present, no
   request leaving the machine, no script error; screenshots of the title slide and of a plot slide go to
   build/screenshots/, and of the three slides that carry the workshop's taught calls (``TALK_SLIDES``), whose
   type must be readable from the back of a room (tools/talk.py's rule).
2. JupyterLab started on a free localhost port with a token opens notebooks/00_measuring.ipynb: the
   notebook renders, its kernel starts, no error dialog appears; then JupyterLab is shut down.

`make test` installs Chromium first (`make browser`); where it is absent these tests skip and say why.
"""

from __future__ import annotations

import importlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from pathlib import Path

import nbformat
import pytest
from conftest import COURSE_NOTEBOOKS, ROOT

CHROMIUM = Path(os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium"))
SCREENSHOTS = ROOT / "build" / "screenshots"
# As root, in a container, on a machine whose network is closed: no sandbox, no GPU, no background traffic.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]
VIEWPORT = {"width": 1280, "height": 720}

pytestmark = [pytest.mark.integration, pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason=f"Chromium is not installed at {CHROMIUM}: run `make browser` (apt-get install chromium) "
    "to run the browser tests of the slides and of JupyterLab",
)]

sys.path.insert(0, str(ROOT / "tools"))
build_slides = importlib.import_module("build_slides")
talk = importlib.import_module("talk")

# The slides the workshop's review looked at (issue 39): a deck, its '## N.' section and the taught calls the code
# on that slide shows whole. 01 §2 compiles in all three frameworks, 04 §5 builds the tf.data chain, 05 §2 is DDP.
TALK_SLIDES = {
    "01_dynamic_vs_static": ("2", ("torch.compile(", "jax.jit(", "jit_compile=True")),
    "04_input_pipeline": ("5", (".prefetch(",)),
    "05_data_parallel": ("2", ("DistributedDataParallel(",)),
}


def _slide_type(cell: dict) -> str:
    return (cell["metadata"].get("slideshow") or {}).get("slide_type", "-") or "-"


def expected_slide_count(nb: dict, deck: dict) -> int:
    """Slides reveal.js must show for ``nb``, from its slide metadata alone (independent of the build):
    the first visible cell opens a slide, each later 'slide' or 'subslide' cell opens another; 'skip' and
    'notes' cells (and, when the deck turns them into notes, the hidden solution cells) open none; plus
    the generated title slide."""
    to_notes = deck.get("solutions", "notes") == "notes"
    count, started = 0, False
    for cell in nb["cells"]:
        kind = _slide_type(cell)
        if to_notes and cell["cell_type"] == "code" and "solution" in cell["metadata"].get("tags", []):
            kind = "notes"
        if kind in ("skip", "notes"):
            continue
        if not started:
            count, started = 1, True
        elif kind in ("slide", "subslide"):
            count += 1
    return count + int(deck.get("title_slide", True))


def png_outputs(nb: dict) -> int:
    return sum(
        "image/png" in out.get("data", {})
        for cell in nb["cells"]
        if _slide_type(cell) != "skip"
        for out in cell.get("outputs", [])
    )


@pytest.fixture(scope="module")
def manifest() -> dict:
    return build_slides.ensure_built()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


class _Watch:
    """Requests that tried to leave the machine, and script errors, of one page."""

    def __init__(self, context, allowed: tuple[str, ...]) -> None:
        self.remote: list[str] = []
        self.errors: list[str] = []
        self.allowed = allowed
        context.route("**/*", self._route)

    def _route(self, route) -> None:
        url = route.request.url
        if url.startswith(self.allowed):
            route.continue_()
        else:
            self.remote.append(url)
            route.abort()

    def attach(self, page) -> None:
        page.on("pageerror", lambda exc: self.errors.append(f"pageerror: {exc}"))
        page.on("console", self._console)

    def _console(self, msg) -> None:
        # A request this watch aborted is reported in .remote already; its console echo is not a new error.
        if msg.type == "error" and not (self.remote and "net::ERR_FAILED" in msg.text):
            self.errors.append(f"console: {msg.text}")


@pytest.mark.parametrize("notebook", COURSE_NOTEBOOKS, ids=lambda p: p.stem)
def test_deck_in_browser(notebook: Path, manifest: dict, browser) -> None:
    deck_info = next((d for d in manifest["decks"] if d["name"] == notebook.stem), None)
    assert deck_info is not None, f"no deck for {notebook.name} in {build_slides.OUT / build_slides.MANIFEST}"
    deck_cfg = tomllib.loads(build_slides.CONFIG.read_text()).get("deck", {})
    source = json.loads((ROOT / deck_info["source"]).read_text())
    # the build pages long slides into subslides; the count follows the prepared notebook's metadata
    prepared = build_slides.prepare(nbformat.read(ROOT / deck_info["source"], as_version=4),
                                    deck_cfg.get("solutions", "notes"))
    expected = expected_slide_count(prepared, deck_cfg)
    plots = png_outputs(source)

    context = browser.new_context(offline=True, viewport=VIEWPORT)
    watch = _Watch(context, allowed=("file://", "data:"))
    page = context.new_page()
    watch.attach(page)
    try:
        page.goto((build_slides.OUT / deck_info["file"]).as_uri())
        page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=30_000)
        page.wait_for_function("() => Array.from(document.images).every(img => img.complete)", timeout=30_000)
        state = page.evaluate(
            """() => ({
                total: Reveal.getTotalSlides(),
                notesPlugin: Reveal.hasPlugin('notes'),
                titleNotes: Reveal.getSlideNotes(Reveal.getSlides()[0]) || '',
                notes: document.querySelectorAll('aside.notes').length,
                images: Array.from(document.images).map(img => [img.src.slice(0, 40), img.naturalWidth]),
                plots: document.querySelectorAll('img[src^="data:image/png"]').length,
            })"""
        )
        assert state["total"] == expected, f"{notebook.stem}: {state['total']} slides, metadata says {expected}"
        assert state["total"] == deck_info["expected_slides"]
        broken = [src for src, width in state["images"] if width == 0]
        assert not broken, f"{notebook.stem}: images that did not render: {broken}"
        assert state["plots"] == plots, f"{notebook.stem}: {state['plots']} plots on slides, {plots} in notebook"
        assert state["notesPlugin"] and state["notes"] >= 1, f"{notebook.stem}: no speaker notes"
        overflowing = page.evaluate(
            """() => {
                const found = [];
                for (const slide of Reveal.getSlides()) {
                    const at = Reveal.getIndices(slide);
                    Reveal.slide(at.h, at.v);
                    const shown = Reveal.getCurrentSlide();
                    if (shown.scrollHeight > shown.clientHeight + 2) {
                        found.push(`${at.h}/${at.v || 0} (${shown.scrollHeight}px): `
                                   + (shown.innerText || '').trim().slice(0, 50).replace(/\\s+/g, ' '));
                    }
                }
                Reveal.slide(0, 0);
                return found;
            }"""
        )
        assert not overflowing, f"{notebook.stem}: slides taller than {VIEWPORT['height']} px: {overflowing}"
        if deck_info["math"]:  # MathJax, from the local copy, typeset the slides' math
            page.wait_for_function("() => document.querySelectorAll('mjx-container').length > 0", timeout=30_000)

        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"{notebook.stem}_title.png"))
        if build_slides.guide_section(notebook.stem):  # the speaker view (key S) shows the guide's notes
            with page.expect_popup() as popup:
                page.keyboard.press("s")
            speaker = popup.value
            speaker.wait_for_function(
                "() => document.body.innerText.includes('Where learners get stuck')", timeout=30_000
            )
            speaker.close()
        if plots:
            where = page.evaluate(
                """() => {
                    for (const slide of Reveal.getSlides()) {
                        const img = Array.from(slide.querySelectorAll('img[src^="data:image/png"]'))
                            .find(i => !i.closest('aside'));
                        if (img) {
                            const at = Reveal.getIndices(slide);
                            Reveal.slide(at.h, at.v);
                            return at;
                        }
                    }
                    return null;
                }"""
            )
            assert where is not None, f"{notebook.stem}: no slide shows a plot"
            page.wait_for_timeout(1000)  # the slide transition
            page.evaluate(
                """() => Array.from(Reveal.getCurrentSlide().querySelectorAll('img[src^="data:image/png"]'))
                    .find(i => !i.closest('aside')).scrollIntoView({block: 'center'})"""
            )
            page.wait_for_timeout(200)
            page.screenshot(path=str(SCREENSHOTS / f"{notebook.stem}_plot.png"))
            visible = page.evaluate(
                """() => { const r = Array.from(Reveal.getCurrentSlide().querySelectorAll('img[src^="data:image/png"]'))
                    .find(i => !i.closest('aside')).getBoundingClientRect();
                    return r.width > 50 && r.height > 50 && r.bottom > 0 && r.top < window.innerHeight; }"""
            )
            assert visible, f"{notebook.stem}: the plot is not on screen"
        assert not watch.remote, f"{notebook.stem}: the deck tried the network: {watch.remote}"
        assert not watch.errors, f"{notebook.stem}: script errors: {watch.errors}"
    finally:
        context.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _jupyter() -> Path:
    venv = ROOT / ".venv" / "bin" / "jupyter"
    return venv if venv.exists() else Path(sys.executable).parent / "jupyter"


def _wait_for_server(proc: subprocess.Popen, url: str, timeout: float, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = "\n".join(log.read_text().splitlines()[-15:])
            raise AssertionError(f"JupyterLab exited with {proc.returncode} before serving {url}:\n{tail}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    tail = "\n".join(log.read_text().splitlines()[-15:])
    raise AssertionError(f"JupyterLab did not answer {url} within {timeout:.0f} s:\n{tail}")


def test_jupyterlab_opens_a_notebook(browser, tmp_path: Path) -> None:
    notebook = ROOT / "notebooks" / "00_measuring.ipynb"
    work = tmp_path / "lab"
    work.mkdir()
    shutil.copyfile(notebook, work / notebook.name)  # JupyterLab may write checkpoints: not into notebooks/
    port, token = _free_port(), secrets.token_hex(16)
    # No "official Jupyter news?" prompt over the notebook (this JupyterLab has no network anyway).
    news = tmp_path / "settings" / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    news.parent.mkdir(parents=True)
    news.write_text(json.dumps({"fetchNews": "false"}))
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
        "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "settings"),
    }
    cmd = [
        str(_jupyter()), "lab", "--no-browser",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={work}",
        "--LabApp.news_url=", "--LabApp.extension_manager=readonly",
    ]
    if os.geteuid() == 0:  # CI and these machines run as root; JupyterLab refuses that unless told
        cmd.append("--allow-root")
    log_path = tmp_path / "jupyterlab.log"
    log = log_path.open("w")
    proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    context = None
    try:
        _wait_for_server(proc, f"{base}/api/status?token={token}", timeout=90, log=log_path)
        context = browser.new_context(viewport=VIEWPORT)
        watch = _Watch(context, allowed=(f"{base}/", "data:", "blob:"))
        page = context.new_page()
        watch.attach(page)
        page.goto(f"{base}/lab/tree/{notebook.name}?token={token}")
        page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=120_000)
        heading = page.locator(".jp-NotebookPanel .jp-RenderedMarkdown h1").first
        heading.wait_for(timeout=60_000)
        assert "Measuring" in heading.inner_text()
        # The notebook's kernel starts and goes idle (the status shows on the toolbar's indicator).
        page.wait_for_selector(".jp-NotebookPanel .jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=120_000)
        page.wait_for_timeout(1500)  # an error dialog would appear by now
        dialogs = page.locator(".jp-Dialog").all_inner_texts()
        assert not dialogs, f"JupyterLab shows a dialog: {dialogs}"
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"jupyterlab_{notebook.stem}.png"))
        # The notebook's own Markdown may show remote images (the Colab badge); JupyterLab itself loads nothing.
        content = " ".join("".join(c["source"]) for c in json.loads(notebook.read_text())["cells"])
        unexpected = [url for url in watch.remote if url not in content]
        assert not unexpected, f"JupyterLab's page tried the network: {unexpected}"
        assert not watch.errors, f"script errors in JupyterLab: {watch.errors}"
    finally:
        if context is not None:
            context.close()
        if proc.poll() is None:
            request = urllib.request.Request(f"{base}/api/shutdown", method="POST",
                                             headers={"Authorization": f"token {token}"})
            try:
                urllib.request.urlopen(request, timeout=10).close()
                proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        log.close()
    assert proc.returncode is not None


@pytest.mark.parametrize("name", sorted(TALK_SLIDES))
def test_talk_slide_screenshot(name: str, manifest: dict, browser) -> None:
    """The slide of ``TALK_SLIDES`` at 1280x720: found by its section and the calls its code shows, stored as
    build/screenshots/<deck>_section<N>.png, its prose and code no smaller on screen than the readable sizes."""
    section, calls = TALK_SLIDES[name]
    deck = next(d for d in manifest["decks"] if d["name"] == name)
    context = browser.new_context(offline=True, viewport=VIEWPORT)
    page = context.new_page()
    try:
        page.goto((build_slides.OUT / deck["file"]).as_uri())
        page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=30_000)
        found = page.evaluate(
            """([section, calls]) => {
                let current = null;
                for (const slide of Reveal.getSlides()) {
                    const heading = slide.querySelector('h2');
                    if (heading) current = heading.textContent.trim().split(/[.\\s]/)[0];
                    const code = Array.from(slide.querySelectorAll('pre')).filter(p => !p.closest('aside'))
                        .map(p => p.textContent).join('\\n');
                    if (current === section && calls.every(call => code.includes(call))) {
                        const at = Reveal.getIndices(slide);
                        Reveal.slide(at.h, at.v);
                        return at;
                    }
                }
                return null;
            }""", [section, list(calls)])
        assert found is not None, f"{name}: no slide of section {section} shows {calls} in its code"
        page.wait_for_timeout(1000)  # the slide transition
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"{name}_section{section}.png"))
        hidden = page.evaluate(
            """calls => {
                const where = call => {  // the box of the call's characters in the slide's code, or null
                    for (const pre of Reveal.getCurrentSlide().querySelectorAll('pre')) {
                        const at = pre.textContent.indexOf(call);
                        if (pre.closest('aside') || at < 0) continue;
                        const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
                        const range = document.createRange();
                        for (let pos = 0, started = false; walker.nextNode(); pos += walker.currentNode.length) {
                            const node = walker.currentNode;
                            if (!started && at < pos + node.length) { range.setStart(node, at - pos); started = true; }
                            if (started && at + call.length <= pos + node.length) {
                                range.setEnd(node, at + call.length - pos);
                                return [range.getBoundingClientRect(), pre.getBoundingClientRect()];
                            }
                        }
                    }
                    return null;
                };
                return calls.filter(call => {
                    const [box, pre] = where(call);
                    return box.top < Math.max(0, pre.top) || box.bottom > Math.min(innerHeight, pre.bottom)
                        || box.right > Math.min(innerWidth, pre.right);
                });
            }""", list(calls))
        assert not hidden, f"{name}: {hidden} off the screen of the slide that shows them (a room cannot scroll)"
        smallest = page.evaluate(
            """() => {
                const slide = Reveal.getCurrentSlide();
                const zoom = Reveal.getScale() * (parseFloat(getComputedStyle(slide).zoom) || 1);
                const least = sel => Math.min(...Array.from(slide.querySelectorAll(sel))
                    .filter(e => !e.closest('aside') && e.textContent.trim() && e.getClientRects().length)
                    .map(e => parseFloat(getComputedStyle(e).fontSize) * zoom));
                const outputs = '.jp-OutputArea-output';  // a table's note is output, at the code's size
                return {text: least(`p:not(${outputs} p), li:not(${outputs} li)`),
                        code: least(`pre, ${outputs} p, ${outputs} li`)};
            }""")
        assert smallest["code"] >= talk.READABLE_CODE_PX - 0.5, f"{name}: code at {smallest['code']:.1f} px on screen"
        assert smallest["text"] >= talk.READABLE_TEXT_PX - 0.5 or smallest["text"] == float("inf"), \
            f"{name}: prose at {smallest['text']:.1f} px on screen"
    finally:
        context.close()
