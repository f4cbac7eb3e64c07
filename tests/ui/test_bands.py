"""The band plots carry the aggregated numbers, one coloured pair of elements per run."""
import holoviews as hv
import pandas as pd

from xcviz.app.ui.bands import band_plot, run_colors, scatter_by_run


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
    from xcviz.app.ui.bands import bound_check

    labels = pd.DataFrame({"alpha_bound": [4.0, 40.0, 400.0], "alpha_l1": [1.0, 30.0, 0.0]})
    plot = bound_check({"run": labels}, "alpha_bound", "alpha_l1")
    curves = [e for e in plot if type(e) is hv.Curve]
    assert list(curves[0].dimension_values(0)) == [1.0, 40.0]  # the zero row is left out of a log plot
    points = [e for e in plot if isinstance(e, hv.Scatter)]
    assert list(points[0].dimension_values("alpha_l1")) == [1.0, 30.0]
    assert plot.opts.get().kwargs["logx"] and plot.opts.get().kwargs["logy"]


def test_a_log_band_edge_at_zero_goes_down_to_the_curve_floor_instead_of_leaving_a_hole():
    """PPDSparse's objective-gap band vanished around iteration 4 while its median went on: the
    5% edge was 0 (converged labels), which a log axis cannot draw."""
    import numpy as np

    from xcviz.app.ui.live_plots import floored_band

    nan = np.nan
    lower = np.log10(np.array([1e-2, 1e-3, nan, nan, 1e-4]))  # scaled: NaN where the edge was <= 0
    median = np.log10(np.array([1e-1, 1e-2, 1e-3, 1e-3, 1e-3]))
    assert list(floored_band(lower, median)) == [-2.0, -3.0, -4.0, -4.0, -4.0]
    gone = np.array([nan, nan])  # no median either: nothing to draw, nothing invented
    assert np.isnan(floored_band(gone, gone)).all()
