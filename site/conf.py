"""Sphinx configuration of the course website; tools/build_site.py (make site) stages the pages and runs Sphinx.

Sphinx + MyST-NB + sphinx-book-theme, pinned in requirements.txt like everything else. Not mystmd / Jupyter
Book 2: they fetch their themes from outside the package registries at build time, which machines without a
network (a workshop room, CI here) cannot reach. The site loads nothing from the network when it is read.
"""

from course_utils.notebook import REPO_URL

project = "Eager to Compiled"
html_title = "Eager to Compiled"

extensions = ["myst_nb"]
exclude_patterns = ["originals"]  # the notebooks as they are, offered for download, not pages

# The notebooks' stored outputs are the content: nothing is executed.
nb_execution_mode = "off"
# Widgets would need the html-manager from a CDN (and a kernel): tools/build_site.py describes them instead.
nb_ipywidgets_js = {}
# Rich text/markdown outputs (07's page for the lead, 05's tables) are parsed as the pages are: the default,
# plain CommonMark, has no tables and leaves them as pipe text.
nb_render_markdown_format = "myst"
myst_enable_extensions = ["dollarmath"]
myst_dmath_allow_space = False  # "$5 and $6" stays text
myst_heading_anchors = 3  # README-style links to #a-heading resolve

html_theme = "sphinx_book_theme"
html_theme_options = {
    "repository_url": REPO_URL,
    "use_repository_button": True,
    "use_download_button": False,  # each notebook page links its own .ipynb (the original, not the staged copy)
    "home_page_in_toc": True,
    "show_toc_level": 2,
    "navbar_persistent": [],  # the sidebar has the search field; pydata 0.20 would add a second one on top
}
html_context = {"default_mode": "light"}  # the plots are drawn on white (readers may still switch)
html_static_path = ["_static"]
html_css_files = ["course.css"]
html_copy_source = False
html_show_sourcelink = False
html_show_search_summary = False  # the summaries are fetch()ed, which browsers refuse on file://
# A local MathJax (the pinned npm package of slides/package.json), copied into _static by the build.
mathjax_path = "mathjax/tex-chtml-full.js"
# The instructor guide goes from "##" sections to "####" blocks on purpose (its generated answers).
suppress_warnings = ["myst.header"]
