"""The band plots carry the aggregated numbers, one coloured pair of elements per run."""
import holoviews as hv
import pandas as pd

from xcviz.ui.bands import band_plot, run_colors, scatter_by_run


def test_band_plot_elements_hold_the_bands():
    records = pd.DataFrame({"label": [0, 0, 1, 1], "iteration": [0, 1, 0, 1], "active_set": [10, 4, 20, 8]})
    plot = band_plot({"zero": records, "msi": records.assign(active_set=records.active_set / 2)}, "active_set")
    areas = [e for e in plot if isinstance(e, hv.Area)]
    curves = [e for e in plot if type(e) is hv.Curve]  # hv.Area subclasses hv.Curve
    assert len(areas) == len(curves) == 2
    assert list(curves[0].dimension_values(1)) == [15.0, 6.0]
    assert curves[0].vdims[0].name == "active_set"
    assert list(curves[1].dimension_values(1)) == [7.5, 3.0]
    colors = run_colors(["zero", "msi"])
    assert curves[0].opts.get().kwargs["color"] == colors["zero"] != colors["msi"]


def test_scatter_by_run():
    labels = pd.DataFrame({"n_pos": [1, 5, 50], "iterations": [9, 7, 5]})
    plot = scatter_by_run({"zero": labels}, "n_pos", "iterations", logx=True)
    assert list(plot.values()[0].dimension_values("iterations")) == [9, 7, 5]


def test_bound_check_draws_the_diagonal_over_the_data():
    from xcviz.ui.bands import bound_check

    labels = pd.DataFrame({"alpha_bound": [4.0, 40.0, 400.0], "alpha_l1": [1.0, 30.0, 0.0]})
    plot = bound_check({"run": labels}, "alpha_bound", "alpha_l1")
    curves = [e for e in plot if type(e) is hv.Curve]
    assert list(curves[0].dimension_values(0)) == [1.0, 40.0]  # the zero row is left out of a log plot
    points = [e for e in plot if isinstance(e, hv.Scatter)]
    assert list(points[0].dimension_values("alpha_l1")) == [1.0, 30.0]
    assert plot.opts.get().kwargs["logx"] and plot.opts.get().kwargs["logy"]
