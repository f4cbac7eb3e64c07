"""What a person looks at: the server and its login pages, the dashboard page, run reports and
exports, and the Panel components of `ui` they are made of. Nothing below imports from here.
All of it is the 'ui' extra's: a missing package of it stops the import with a one-line error."""
from .._util.extras import require

for _module in ("panel", "holoviews", "bokeh"):
    require(_module, "ui", "xcviz.app (the dashboard, xcviz serve and xcviz report)")
del _module
