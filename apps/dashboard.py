"""The xcviz dashboard, for `panel serve apps/dashboard.py` (or `make dashboard`)."""
import html
import os

import panel as pn

from xcviz.runs.store import RunStore, StoreError
from xcviz.ui.dashboard import Dashboard

pn.extension("tabulator")
data_dirs = [d for d in os.environ.get("XCVIZ_DATA_DIRS", "").split(os.pathsep) if d]
try:
    Dashboard(RunStore(), data_dirs=data_dirs).view().servable()
except StoreError as exc:  # an unusable store: an alert, not a blank page
    pn.pane.Alert(html.escape(f"The run store cannot be opened: {exc}"), alert_type="danger").servable()
