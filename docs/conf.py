"""Sphinx configuration of xcviz's docs site (`make docs`).

The notebooks in notebooks/ (stored without outputs, reached through the docs/notebooks link) are
rendered as they are; with XCVIZ_DOCS_EXECUTE=1 myst-nb runs them in its cache mode, so a notebook
runs again only when its code changes. The record schema page is generated from the field tables
in the code by the local extension `_ext/record_schema.py`.
"""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "xcviz"
author = "the xcviz authors"
copyright = "the xcviz authors"

extensions = ["myst_nb", "record_schema"]
exclude_patterns = ["_build", "_generated", "notebooks/.ipynb_checkpoints"]
myst_heading_anchors = 3
myst_enable_extensions = ["dollarmath"]
suppress_warnings = [
    # executed notebooks: HoloViews adds its kernel-side messages (application/vnd.holoviews_*) beside
    # the text/html of each plot, which is what the page shows
    "mystnb.unknown_mime_type",
]

nb_execution_mode = "cache" if os.environ.get("XCVIZ_DOCS_EXECUTE") == "1" else "off"
nb_execution_cache_path = str(Path(__file__).parent / "_build" / ".jupyter_cache")
nb_execution_timeout = 1800
nb_execution_raise_on_error = True

html_theme = "pydata_sphinx_theme"
html_title = "xcviz"
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}
# every page sits at the top of the navigation bar's sections, so the section sidebar would be empty
html_sidebars = {"**": []}
