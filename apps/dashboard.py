"""The xcviz dashboard app.

`python apps/dashboard.py [options of xcviz serve]` serves it as `xcviz serve` does (the checked
entry point: Host names checked on every route, login secrets kept out of process arguments).
Under a bare `panel serve apps/dashboard.py`, which checks no Host, a page opened through a host
name other than a loopback one (or one of XCVIZ_ALLOW_HOSTS) gets a refusal instead of the
dashboard; prefer `xcviz serve`, which refuses such requests with 403 before any app code runs.
"""
import os
import sys

if __name__ == "__main__":
    from xcviz.cli import main

    sys.exit(main(["serve", *sys.argv[1:]]))

import panel as pn  # noqa: E402

from xcviz.app.server import dashboard_page, session_host_allowed  # noqa: E402
from xcviz.data.folders import data_dirs  # noqa: E402

if session_host_allowed():
    schedulers = [a.strip() for a in os.environ.get("XCVIZ_SCHEDULERS", "").split(",") if a.strip()]
    dashboard_page(None, data_dirs(), schedulers)().servable(title="xcviz")
else:
    pn.pane.Markdown("403: this server does not answer to that Host name.").servable()
