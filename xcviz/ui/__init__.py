"""HoloViews/Panel components shared by the notebooks and (later) the dashboard. No numerics here:
summaries come from xcviz.runs.aggregate."""
