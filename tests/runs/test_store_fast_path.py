"""The store's per-batch path on numpy columns (runs.derived, the vectorised `Summary.of`) against
a straightforward pandas reference, the code it replaced: the derived fields and the summaries a
reader merges must be equal, bit for bit, on random batches of whole labels (NaN and infinities,
one-label batches, batches with and without `epoch`, `active_set`, `rows_touched`, `wall`)."""
import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from xcviz.runs.aggregate import ID_COLUMNS, with_derived
from xcviz.runs.sketch import Summary, _codes, _reduce
from xcviz.runs.store import RunStore

N_ROWS = 977


def reference_relative_to_final(records: pd.DataFrame, field: str = "objective") -> pd.Series:
    final = records.sort_values("iteration").groupby("label")[field].transform("last")
    return (records[field] - final) / np.abs(final).where(final != 0, 1.0)


def reference_with_derived(batch: pd.DataFrame, n_rows: int | None = None) -> pd.DataFrame:
    """The one-vs-all part of `with_derived` as pandas computed it."""
    extra = {}
    per_label = "epoch" not in batch
    if {"objective", "label", "iteration"} <= set(batch) and per_label:
        gap = reference_relative_to_final(batch)
        last = batch.groupby("label")["iteration"].transform("max") == batch["iteration"]
        extra["objective_gap"] = gap.where(~last)
    if n_rows and "active_set" in batch and per_label:
        extra["active_fraction"] = batch["active_set"] / n_rows
    if n_rows and "rows_touched" in batch and per_label:
        extra["rows_fraction"] = batch["rows_touched"] / n_rows
    return batch.assign(**extra) if extra else batch


def reference_summary(batch: pd.DataFrame) -> Summary:
    """`Summary.of` as it was: one reduction per field over a frame."""
    fields = [c for c in batch.columns if c not in ID_COLUMNS and pd.api.types.is_numeric_dtype(batch[c])]
    group = batch["iteration"].to_numpy(np.int64)
    names = ("h_field", "h_group", "h_code", "h_count", "s_field", "s_group", "s_count", "s_min", "s_max", "s_sum")
    parts: dict[str, list[np.ndarray]] = {name: [] for name in names}
    for f, field in enumerate(fields):
        values = batch[field].to_numpy(np.float64)
        keep = np.isfinite(values)
        g, v = group[keep], values[keep]
        (hg, hc), counts = _reduce((g, _codes(v)), {"n": (np.ones(len(v), np.int64), np.add)})
        parts["h_field"].append(np.full(len(hg), f, np.int64))
        parts["h_group"].append(hg)
        parts["h_code"].append(hc)
        parts["h_count"].append(counts["n"])
        (sg,), stats = _reduce((g,), {"n": (np.ones(len(v), np.int64), np.add), "lo": (v, np.minimum),
                                      "hi": (v, np.maximum), "sum": (v, np.add)})
        parts["s_field"].append(np.full(len(sg), f, np.int64))
        parts["s_group"].append(sg)
        for name, key in (("s_count", "n"), ("s_min", "lo"), ("s_max", "hi"), ("s_sum", "sum")):
            parts[name].append(stats[key])
    arrays = {name: np.concatenate(p) if p else np.zeros(0) for name, p in parts.items()}
    done = (batch.groupby("label")["wall"].max().to_numpy(np.float64) if {"label", "wall"} <= set(batch)
            else np.zeros(0))
    labels = batch["label"].nunique() if "label" in batch else 1
    arrays.update(done_at=done, totals=np.array([len(batch), labels, 1], np.int64))
    return Summary(fields, arrays)


def assert_same_summary(got: Summary, want: Summary) -> None:
    assert got.fields == want.fields
    assert sorted(got.arrays) == sorted(want.arrays)
    for name, array in want.arrays.items():
        assert got.arrays[name].dtype == array.dtype, name
        np.testing.assert_array_equal(got.arrays[name], array, err_msg=name, strict=True)


def assert_same_frame(got: pd.DataFrame, want: pd.DataFrame) -> None:
    assert list(got.columns) == list(want.columns)
    for column in want:
        np.testing.assert_array_equal(got[column].to_numpy(), want[column].to_numpy(), err_msg=column, strict=True)


SPECIAL = st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-300, 1e300, 5e-324])


@st.composite
def batches(draw) -> pd.DataFrame:
    """Whole labels (1 to 6, possibly one), 1 to 12 iterations each in any row order, unique
    (label, iteration); objective and other fields with NaN, infinities and zeros; optional
    columns drawn in or out."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    labels = draw(st.integers(1, 6))
    ids = rng.choice(1000, labels, replace=False)
    lengths = rng.integers(1, 13, labels)
    label = np.repeat(ids, lengths)
    iteration = np.concatenate([np.arange(k) for k in lengths]) + draw(st.sampled_from([0, 1]))
    n = len(label)
    shuffle = rng.permutation(n) if draw(st.booleans()) else np.arange(n)
    columns = {"label": label[shuffle], "iteration": iteration[shuffle]}
    if draw(st.booleans()):
        columns["wall"] = rng.random(n) * 10
    columns["seconds"] = rng.gamma(2.0, 1e-3, n)
    if draw(st.booleans()):
        objective = rng.normal(size=n) * 10.0 ** rng.integers(-8, 8, n)
        specials = draw(st.lists(st.tuples(st.integers(0, n - 1), SPECIAL), max_size=n))
        for at, value in specials:
            objective[at] = value
        columns["objective"] = objective
    if draw(st.booleans()):
        columns["active_set"] = rng.integers(0, N_ROWS, n)
    if draw(st.booleans()):
        columns["rows_touched"] = rng.integers(0, N_ROWS, n)
    if draw(st.booleans()):
        columns["converged"] = rng.random(n) < 0.5
    if draw(st.booleans()):
        grad = rng.random(n)
        grad[rng.random(n) < 0.2] = np.nan
        columns["grad_norm"] = grad
    if draw(st.booleans()):
        columns["epoch"] = rng.random(n)
    for name in ("wall", "seconds"):
        if name in columns and draw(st.booleans()):
            columns[name][rng.integers(0, n)] = draw(SPECIAL)
    return pd.DataFrame(columns)


@settings(max_examples=200, deadline=None)
@given(batches(), st.sampled_from([None, 0, N_ROWS]))
def test_derived_fields_equal_the_pandas_reference(batch, n_rows):
    assert_same_frame(with_derived(batch, n_rows), reference_with_derived(batch, n_rows))


@settings(max_examples=200, deadline=None)
@given(batches())
def test_summary_of_columns_equals_the_pandas_reference(batch):
    derived = reference_with_derived(batch, N_ROWS)
    want = reference_summary(derived)
    assert_same_summary(Summary.of(derived), want)
    assert_same_summary(Summary.of({c: derived[c].to_numpy() for c in derived}), want)


@settings(max_examples=30, deadline=None)
@given(st.lists(batches(), min_size=1, max_size=20))
def test_the_store_merges_what_the_reference_would(tmp_path_factory, frames):
    """Batches written through the store: the summary a reader merges (fields, every array, so
    bands, quantiles, work, done_at, totals) equals that of the reference's summaries stored by
    the same log-structured merge (whose grouping decides how sums round: RunStore._add_summary)."""
    frames = [f for f in frames if "epoch" not in f]  # a streaming solver's batches get no summary
    store = RunStore(tmp_path_factory.mktemp("store"))
    run = store.create("{}", "fast")
    store.append_batch(run, "begin", {"n": np.array([N_ROWS])})
    reference = RunStore(tmp_path_factory.mktemp("reference"))
    for f in frames:
        store.append_batch(run, "iteration", {c: f[c].to_numpy() for c in f})
        with reference._transaction() as db:
            reference._add_summary(db, run, "iteration", reference_summary(reference_with_derived(f, N_ROWS)))
    got, _ = store.summary(run)
    if not frames:
        assert got is None
        return
    with reference._db() as db:
        rows = db.execute("SELECT payload FROM summaries WHERE run = ? AND kind = 'iteration'", (run,)).fetchall()
    want = Summary.merge([Summary.unpack(r[0]) for r in rows])
    assert_same_summary(got, want)
    for field in want.fields:
        b, w = got.bands(field), want.bands(field)
        for key in w:
            np.testing.assert_array_equal(b[key], w[key], strict=True)
    np.testing.assert_array_equal(got.work(), want.work(), strict=True)


def test_a_batch_with_epoch_gets_no_summary(tmp_path):
    store = RunStore(tmp_path)
    run = store.create("{}", "stream")
    store.append_batch(run, "iteration", {"label": np.zeros(3, np.int64), "iteration": np.arange(3),
                                          "epoch": np.ones(3), "objective": np.ones(3)})
    assert store.summary(run) == (None, 0)


def test_each_batch_takes_the_rows_of_the_latest_begin(tmp_path):
    """A resumed run writes a new `begin`: the batches after it are divided by its rows, not by
    those the store decoded for the batches before (runs.store._rows keeps them by batch number)."""
    store = RunStore(tmp_path)
    run = store.create("{}", "resumed")
    batch = {"label": np.arange(4), "iteration": np.zeros(4, np.int64), "active_set": np.full(4, 10)}
    for rows in (100, 40):
        store.append_batch(run, "begin", {"n": np.array([rows])})
        store.append_batch(run, "iteration", batch)
    summary, _ = store.summary(run)
    b = summary.bands("active_fraction")
    assert b["count"].tolist() == [8] and b["lower"].tolist() == [0.1] and b["upper"].tolist() == [0.25]
