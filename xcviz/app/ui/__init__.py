"""Panel/Bokeh components shared by the dashboard, the notebooks and the reports. No numerics
here beyond drawing: summaries come from xcviz.runs.aggregate. `RunView` (live band plots and
per-label views of runs of a store) is what a notebook uses; `Dashboard` composes the page."""
