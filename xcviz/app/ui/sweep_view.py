"""Figures of a sweep: each run's final P@1/3/5, training seconds and model size against the swept
parameter (`runs.sweep.sweep_table`), on a log x-axis where the values span a decade or more, as a
category axis where they are names (a loss, an initializer)."""
from __future__ import annotations

import pandas as pd
from bokeh.models import ColumnDataSource, HoverTool, NumeralTickFormatter
from bokeh.plotting import figure

from ...runs.sweep import log_scaled

PRECISIONS = (("p@1", "#1f77b4"), ("p@3", "#ff7f0e"), ("p@5", "#2ca02c"))
COSTS = (("train_seconds", "training seconds"), ("model_nnz", "model non-zeros"))


def _figure(title: str, key: str, y_label: str, x: list, log: bool):
    """An empty figure whose x-axis suits the swept values `x`."""
    kwargs = {"x_range": [str(v) for v in x]} if isinstance(x[0], str) else {"x_axis_type": "log" if log else "linear"}
    fig = figure(title=title, width=460, height=280, tools="pan,wheel_zoom,box_zoom,reset,save", **kwargs)
    fig.xaxis.axis_label, fig.yaxis.axis_label = f"{key} (log)" if log else key, y_label
    fig.toolbar.logo = None
    return fig


def sweep_figures(table: pd.DataFrame, key: str) -> list:
    """Three figures of the finished runs of `table`: P@1/3/5, training seconds and model non-zeros
    against `key`, a point per run joined in the order of the values."""
    done = table[table["status"] == "done"]
    if done.empty:
        return []
    x = done[key].tolist()
    x = [str(v) for v in x] if any(isinstance(v, str) for v in x) else x
    log = not isinstance(x[0], str) and log_scaled(x)
    source = ColumnDataSource({"x": x, "run": done["run"].tolist(),
                               **{m: pd.to_numeric(done[m]).tolist() for m, _ in PRECISIONS + COSTS}})
    tips = [("run", "@run"), (key, "@x")]
    precision = _figure(f"P@k against {key}", key, "precision (%)", x, log)
    for metric, color in PRECISIONS:
        precision.line("x", metric, source=source, color=color, line_width=2, legend_label=metric.upper())
        precision.scatter("x", metric, source=source, color=color, size=7, legend_label=metric.upper())
    precision.add_tools(HoverTool(tooltips=tips + [(m.upper(), f"@{{{m}}}{{0.00}}") for m, _ in PRECISIONS]))
    precision.add_layout(precision.legend[0], "right")  # beside the plot: inside, it hid the lower curves
    figures = [precision]
    for metric, label in COSTS:
        fig = _figure(f"{label} against {key}", key, label, x, log)
        fig.line("x", metric, source=source, color="#444444", line_width=2)
        fig.scatter("x", metric, source=source, color="#444444", size=7)
        fig.add_tools(HoverTool(tooltips=tips + [(label, f"@{{{metric}}}{{0,0.[00]}}")]))
        fig.yaxis.formatter = NumeralTickFormatter(format="0,0.[000]")  # seconds under 1 read 0.12, not 0.1
        figures.append(fig)
    return figures
