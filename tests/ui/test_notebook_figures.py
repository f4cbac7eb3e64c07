"""The notebooks' figure helper: shows the plot, saves a standalone page only when asked, and
refuses names that are not plain file names."""
import holoviews as hv
import pytest

from xcviz.app.ui.notebook_figures import FIGURES_ENV, figure


def test_the_plot_is_returned_and_saved_only_when_a_folder_is_set(tmp_path, monkeypatch):
    hv.extension("bokeh")
    plot = hv.Curve([(1, 2.5), (2, 7.25)], "lam", "accuracy %")
    monkeypatch.delenv(FIGURES_ENV, raising=False)
    assert figure(plot, "unsaved") is plot
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv(FIGURES_ENV, str(tmp_path))
    assert figure(plot, "memoir-table-2") is plot
    page = (tmp_path / "memoir-table-2.html").read_text()
    assert "Bokeh" in page and "accuracy %" in page and "<script src=" not in page  # inline resources


@pytest.mark.parametrize("name", ["../escape", "a/b", ".hidden", "", "x" * 101, "name with space"])
def test_names_that_are_not_plain_file_names_are_refused(tmp_path, monkeypatch, name):
    monkeypatch.setenv(FIGURES_ENV, str(tmp_path))
    with pytest.raises(ValueError, match="figure name"):
        figure(hv.Curve([(0, 0)]), name)
    assert list(tmp_path.iterdir()) == []


def test_scaling_loglog_fits_each_solvers_power_law_and_names_it_in_the_legend():
    """Per-label ms c * N^b for two solvers: the fitted slopes are the exponents and the legend says them."""
    import numpy as np
    import pandas as pd

    from xcviz.app.ui.notebook_figures import scaling_loglog

    hv.extension("bokeh")
    n = np.array([50_000, 150_000, 490_000])
    table = pd.concat([pd.DataFrame({"solver": "Newton, msi", "N": n, "ms per label": 2e-3 * n ** 1.0}),
                       pd.DataFrame({"solver": "PPDSparse", "N": n, "ms per label": 0.5 * n ** 0.3})])
    slope, plot = scaling_loglog(table, "N", "t")
    assert slope == pytest.approx({"Newton, msi": 1.0, "PPDSparse": 0.3})
    labels = [layer.label for layer in plot if isinstance(layer, hv.Curve)]
    assert labels == ["Newton, msi (slope 1.00)", "PPDSparse (slope 0.30)"]
    assert plot.opts.get().kwargs["logx"] and plot.opts.get().kwargs["logy"]
