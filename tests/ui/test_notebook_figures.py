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
