"""PPDSparse's rows touched on the dashboard (issue #38, item 2): the `rows_fraction` figure draws, per
iteration, the median and 5-95% band over labels of the rows the search touched divided by N, as the
run's own records give them, beside a dashed line at 1 for Newton, which reads all N rows every
iteration; a Newton run alone gets no such figure."""
import numpy as np
import scipy.sparse as sp

from xcviz.app.ui.references import NEWTON_ROWS
from xcviz.app.ui.run_view import RunView
from xcviz.records.sinks import MemorySink, TeeSink
from xcviz.runs.spec import RunSpec
from xcviz.runs.store import RunStore, SqliteSink
from xcviz.solvers.dismec import DismecParams, fit_dismec
from xcviz.solvers.ppdsparse import PPDSparseParams, fit_ppdsparse


def _run(store: RunStore, solver: str, fit) -> tuple[str, MemorySink]:
    """A finished run of `solver` in the store, its records also kept in memory."""
    spec = RunSpec(dataset="bibtex", solver=solver, params={}, name=solver).validate()
    run = store.create(spec.to_json(), solver)
    memory = MemorySink()
    fit(TeeSink(SqliteSink(store, run), memory), run)
    store.update(run, status="done")
    return run, memory


def test_the_rows_figure_is_rows_touched_over_n_with_newtons_line_at_one(tmp_path, bibtex):
    train, _ = bibtex
    X, Y = train.X, sp.csc_matrix(train.Y)[:, :30]
    store = RunStore(tmp_path / "home")
    ppd, records = _run(store, "ppdsparse", lambda sink, run: fit_ppdsparse(
        X, Y, PPDSparseParams(lam=0.01), threads=2, recorder=sink, run=run))
    newton, _ = _run(store, "dismec", lambda sink, run: fit_dismec(
        X, Y, DismecParams(init="msi"), threads=2, recorder=sink, run=run))
    rows = {r["id"]: r for r in store.list()}

    view = RunView(store)
    view.update(rows, [newton])
    assert "rows_fraction" not in view.plots._figures or not view.plots.shown("rows_fraction")

    view.update(rows, [ppd, newton])
    share = records.iterations.assign(share=records.iterations["rows_touched"] / X.shape[0])
    expected = share.groupby("iteration")["share"].agg(
        median="median", lower=lambda s: s.quantile(0.05), upper=lambda s: s.quantile(0.95))
    drawn = view.plots.curve("rows_fraction", ppd)
    np.testing.assert_array_equal(drawn["xv"], expected.index.to_numpy(float))
    for column in ("median", "lower", "upper"):  # a linear axis: drawn as recorded
        np.testing.assert_allclose(drawn[column], expected[column], rtol=1e-12)
    assert 0 < expected["median"].iloc[0] < 1  # the search touched some rows, not all: a share that can be wrong
    assert view.plots.curve("rows_fraction", newton) is None  # Newton records no rows touched: its line is the 1
    lines = view.plots._sources["rows_fraction"][4].data  # the reference lines
    assert list(lines["label"]) == [NEWTON_ROWS.label] and list(lines["value"]) == [1.0]
    assert view.plots.shown("rows_fraction")
    assert "rows_touched" not in view.plots._figures  # the share replaces the count
