"""``assess``'s report: report.json (the numbers), report.md and report.html (one offline page: the decision and
the figure that decided it first, plots embedded as base64 PNG)."""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any

from course_utils.migrate import plots, story_assess
from course_utils.migrate.assessment import Assessment

STYLE = ("body{font-family:system-ui,sans-serif;max-width:52em;margin:2em auto;line-height:1.45;color:#222}"
         "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left}"
         "code{background:#f4f4f4}img{max-width:100%}")


def _clean(value: Any) -> Any:
    """JSON has no inf or NaN: they become the strings "inf" and "nan"."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def to_html(markdown: str, title: str) -> str:
    """One self-contained page from the report's Markdown (markdown-it-py, which the course's stack installs)."""
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark").enable("table").render(markdown)
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body>{body}</body></html>\n")


def write(found: Assessment, folder: Path) -> dict[str, Path]:
    """Write the three files into ``folder`` (created); returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    speed = plots.png_base64(plots.assess_figure(found))
    payback = plots.png_base64(plots.payback(found.pricing.estimate,
                                             labels=[f"measured {found.deciding.speedup.ratio:.3g}x"]))
    figures = {"speedup": f"![speed-up per process, interval and break-even](data:image/png;base64,{speed})",
               "payback": f"![cumulative net per month](data:image/png;base64,{payback})"}
    paths = {"json": folder / "report.json", "md": folder / "report.md", "html": folder / "report.html"}
    paths["json"].write_text(json.dumps(_clean(found.to_dict()), indent=2))
    paths["md"].write_text(story_assess.report_markdown(found))
    paths["html"].write_text(to_html(story_assess.report_markdown(found, figures), f"assess: {found.model}"))
    return paths
