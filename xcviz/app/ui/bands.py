"""Median-and-band plots over labels (the figures of the MSI paper), one colour per run."""
from __future__ import annotations

import holoviews as hv
import holoviews.plotting.bokeh  # noqa: F401  (registers the bokeh backend that .opts() styles)
import pandas as pd

from ...runs.aggregate import quantile_bands

from .colors import distinct_colors


def run_colors(names) -> dict[str, str]:
    """A colour per run name, from the name, distinct among the names (`colors.distinct_colors`)."""
    return distinct_colors(names)


def band_plot(runs: dict[str, pd.DataFrame], field: str, *, by: str = "iteration", label: str | None = None,
              logy: bool = False, quantiles: tuple[float, float] = (0.05, 0.95),
              colors: dict[str, str] | None = None) -> hv.Overlay:
    """Median of `field` over labels (line) and its quantile band (shaded), per run, against `by`.

    colors: run name -> colour, to keep a run's colour when plots show different subsets of runs."""
    colors = colors or run_colors(runs)
    lo, hi = (int(round(100 * q)) for q in quantiles)
    # one y dimension per field: plots of the same field share their axis, other plots do not
    y = hv.Dimension(field, label=label or field)
    upper = f"{field} (upper)"
    elements = []
    for name, records in runs.items():
        bands = quantile_bands(records, field, by=by, quantiles=quantiles)
        elements.append(hv.Area(bands.rename(columns={"lower": field, "upper": upper}), by, [y, upper],
                                label=name).opts(color=colors[name], alpha=0.2, line_alpha=0))
        elements.append(hv.Curve(bands.rename(columns={"median": field}), by, y, label=name).opts(
            color=colors[name], line_width=2))
    return hv.Overlay(elements).opts(title=f"{label or field} (median, {lo}-{hi}% band)", logy=logy, width=470,
                                     height=300, legend_position="top_right", show_grid=True)


def scatter_by_run(frames: dict[str, pd.DataFrame], x: str, y: str, *, logx: bool = False,
                   logy: bool = False, colors: dict[str, str] | None = None) -> hv.Overlay:
    """One point per row (e.g. per label) of each run, coloured by run."""
    colors = colors or run_colors(frames)
    points = [hv.Scatter(df, x, y, label=name).opts(color=colors[name], alpha=0.6, size=4)
              for name, df in frames.items()]
    return hv.Overlay(points).opts(title=f"{y} against {x}", logx=logx, logy=logy, width=460, height=300,
                                   legend_position="top_left", show_grid=True)


def bound_check(frames: dict[str, pd.DataFrame], bound: str, value: str) -> hv.Overlay:
    """Each row's `value` against its `bound` on log axes, with the diagonal value = bound: points
    below the dashed line respect the bound."""
    positive = {name: df[(df[bound] > 0) & (df[value] > 0)] for name, df in frames.items()}
    lows = [df[[bound, value]].min().min() for df in positive.values() if len(df)]
    highs = [df[[bound, value]].max().max() for df in positive.values() if len(df)]
    lo, hi = (min(lows), max(highs)) if lows else (1.0, 10.0)
    diagonal = hv.Curve([(lo, lo), (hi, hi)], bound, value, label="bound").opts(color="gray", line_dash="dashed")
    return (scatter_by_run(positive, bound, value) * diagonal).opts(
        title=f"{value} against {bound}", logx=True, logy=True, width=470, height=300,
        legend_position="top_left", show_grid=True)
