"""The xcviz dashboard, for `panel serve apps/dashboard.py` (or `make dashboard`)."""
import os

import panel as pn

from xcviz.runs.store import RunStore
from xcviz.ui.dashboard import Dashboard

pn.extension("tabulator")
data_dirs = [d for d in os.environ.get("XCVIZ_DATA_DIRS", "").split(os.pathsep) if d]
Dashboard(RunStore(), data_dirs=data_dirs).view().servable(title="xcviz")
