"""Quantile bands over labels, checked on a hand-made record table."""
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xcviz.runs.aggregate import quantile_bands, relative_to_final


def _records():
    # three labels; label 2 stops after iteration 1
    return pd.DataFrame({"label": [0, 0, 0, 1, 1, 1, 2, 2],
                         "iteration": [0, 1, 2, 0, 1, 2, 0, 1],
                         "objective": [10.0, 6.0, 5.0, 20.0, 8.0, 4.0, 30.0, 3.0]})


def test_bands_by_iteration():
    bands = quantile_bands(_records(), "objective", quantiles=(0.0, 1.0))
    assert list(bands["iteration"]) == [0, 1, 2]
    assert list(bands["median"]) == [20.0, 6.0, 4.5]
    assert list(bands["lower"]) == [10.0, 3.0, 4.0] and list(bands["upper"]) == [30.0, 8.0, 5.0]
    assert list(bands["count"]) == [3, 3, 2]
    with pytest.raises(ValueError):
        quantile_bands(_records(), "objective", quantiles=(0.6, 0.9))
    with pytest.raises(KeyError):
        quantile_bands(_records(), "nope")


def test_relative_to_final():
    rel = relative_to_final(_records())
    np.testing.assert_allclose(rel, [1.0, 0.2, 0.0, 4.0, 1.0, 0.0, 9.0, 0.0])


def test_grouped_quantiles_match_pandas_batch_by_batch():
    from xcviz.runs.aggregate import GroupedQuantiles

    rng = np.random.default_rng(0)
    acc, seen = GroupedQuantiles((0.05, 0.95)), []
    for size in (50, 1, 300, 7, 120):
        batch = pd.DataFrame({"iteration": rng.integers(0, 12, size), "v": rng.normal(size=size)})
        batch.loc[batch.index[::9], "v"] = np.nan  # missing values are left out, as pandas does
        acc.add(batch["iteration"].to_numpy(), batch["v"].to_numpy())
        seen.append(batch)
        expected = quantile_bands(pd.concat(seen).dropna(), "v")
        got = acc.bands()
        np.testing.assert_array_equal(got["group"], expected["iteration"])
        for column in ("median", "lower", "upper", "count"):
            np.testing.assert_allclose(got[column], expected[column])


def _run_batches():
    """Two batches of whole labels, as the store holds them: labels 0-1, then label 2."""
    first = pd.DataFrame({"label": [0, 0, 0, 1, 1, 1], "iteration": [0, 1, 2, 0, 1, 2],
                          "objective": [10.0, 6.0, 5.0, 20.0, 8.0, 4.0], "active_set": [8, 4, 2, 6, 4, 4],
                          "seconds": [0.5, 1.0, 1.0, 0.5, 2.0, 2.0], "wall": [0.1, 0.3, 0.6, 0.1, 1.2, 2.5]})
    second = pd.DataFrame({"label": [2, 2], "iteration": [0, 1], "objective": [30.0, 3.0], "active_set": [10, 2],
                           "seconds": [0.25, 0.25], "wall": [2.6, 2.7]})
    return first, second


def test_run_aggregate_bands_follow_new_batches():
    from xcviz.runs.aggregate import RunAggregate

    first, second = _run_batches()
    agg = RunAggregate(n_rows=10)
    agg.add(first)
    assert agg.version == 1 and set(agg.fields()) >= {"objective_gap", "active_fraction", "seconds"}
    np.testing.assert_allclose(agg.bands("active_fraction")["median"], [0.7, 0.4, 0.3])
    agg.add(second)
    bands = agg.bands("active_fraction")
    assert list(bands["x"]) == [0, 1, 2] and list(bands["count"]) == [3, 3, 2]
    np.testing.assert_allclose(bands["median"], [0.8, 0.4, 0.3])
    # PPDSparse's search: the rows it touched as a share of the rows (Newton reads all of them)
    touched = RunAggregate(n_rows=10)
    touched.add(first.assign(rows_touched=[10, 4, 2, 10, 6, 3]))
    np.testing.assert_allclose(touched.bands("rows_fraction")["median"], [1.0, 0.5, 0.25])
    # a streaming solver's active set (LDGS: the classes scored per sample) is not a share of the rows
    streaming = RunAggregate(n_rows=10)
    streaming.add(second.assign(epoch=[0.5, 1.0]))
    assert "active_fraction" not in streaming.fields() and "active_set" in streaming.fields()
    # the gap is left out at each label's last iteration, where it is 0 by definition
    np.testing.assert_allclose(agg.bands("objective_gap")["median"], [4.0, 0.6])
    # seconds skip iteration 0 (set-up, no step); work counts it: 1.25 CPU-s at iteration 0, +3.25, +3
    work = agg.bands("seconds", "work")
    np.testing.assert_allclose(work["x"], [4.5, 7.5])
    np.testing.assert_allclose(work["median"], [1.0, 1.5])


def test_run_aggregate_wall_bins_and_plain_runs():
    from xcviz.runs.aggregate import WALL_BIN_MIN, RunAggregate

    first, second = _run_batches()
    agg = RunAggregate()  # a streaming run (records with an epoch): its records in time bins
    agg.add(first.assign(epoch=0.5))
    agg.add(second.assign(epoch=1.0))
    assert agg.wall_bin() == 2 * WALL_BIN_MIN  # 2.7 s does not fit 200 bins of 0.01 s
    wall = agg.bands("active_set", "wall")
    assert wall["count"].sum() == 8 and wall["x"].is_monotonic_increasing
    np.testing.assert_allclose(wall["x"].iloc[0], 0.5 * 0.02 + 0.1 // 0.02 * 0.02)
    assert "labels_done" not in agg.fields()
    # a one-vs-all run on the wall axis: the labels done by then (label 0 at 0.6 s, 1 at 2.5 s,
    # 2 at 2.7 s), not bins mixing some labels' first iterations with others' last; nothing else
    ova = RunAggregate()
    ova.add(first)
    ova.add(second)
    done = ova.bands("labels_done", "wall")
    np.testing.assert_allclose(done["x"], [0.6, 2.5, 2.7])
    assert list(done["median"]) == list(done["lower"]) == [1.0, 2.0, 3.0]
    assert ova.bands("active_set", "wall").empty and ova.bands("labels_done", "iteration").empty
    assert not ova.bands("active_set", "iteration").empty
    plain = RunAggregate()
    plain.add(pd.DataFrame({"iteration": np.arange(5), "accuracy": [0.1, 0.5, 0.7, 0.8, 0.85]}))
    line = plain.bands("accuracy")
    assert list(line["median"]) == list(line["lower"]) == list(line["upper"]) == [0.1, 0.5, 0.7, 0.8, 0.85]
    assert plain.axes() == ["iteration"] and plain.bands("accuracy", "wall").empty


def test_run_aggregate_epoch_axis_follows_the_recorded_epochs():
    """A streaming solver (MEMOIR) records a window per iteration with the epoch it reached; the
    epoch axis puts each window at that epoch, across batches."""
    from xcviz.runs.aggregate import RunAggregate

    agg = RunAggregate()
    agg.add(pd.DataFrame({"label": 0, "iteration": [0, 1, 2], "epoch": [0.0, 0.1, 0.2], "objective": [3.0, 2.0, 1.5]}))
    agg.add(pd.DataFrame({"label": 0, "iteration": [3, 4], "epoch": [0.3, 0.45], "objective": [1.2, 1.1]}))
    assert agg.axes() == ["iteration", "epoch"]
    band = agg.bands("objective", "epoch")
    np.testing.assert_allclose(band["x"], [0.0, 0.1, 0.2, 0.3, 0.45])
    np.testing.assert_allclose(band["median"], [3.0, 2.0, 1.5, 1.2, 1.1])
    newton = RunAggregate()
    newton.add(pd.DataFrame({"label": [0, 0], "iteration": [0, 1], "objective": [2.0, 1.0]}))
    assert newton.bands("objective", "epoch").empty  # a run without epochs draws nothing on that axis


def test_window_times_are_drawn_per_batch_so_a_short_last_window_does_not_dip():
    """A streaming solver's record sums its times over a window of batches: 4 batches a window at
    0.5 s a batch, then an epoch's last window of 2 and a cancelled run's last window of 1 (same
    speed). Per batch, every window reads 0.5 s, across the aggregate's batches; the starting
    record trained nothing (NaN, left out); the plots show the per-batch field instead of the raw."""
    from xcviz.app.ui.fields import plotted_fields
    from xcviz.runs.aggregate import RunAggregate

    steps = [0, 4, 8, 10, 14, 15]
    trained = np.diff(steps, prepend=0)
    records = pd.DataFrame({"label": 0, "iteration": range(6), "epoch": np.array(steps) / 10, "batch": steps,
                            "seconds": 0.5 * trained, "message_seconds": 0.2 * trained, "objective": 1.0})
    agg = RunAggregate()
    agg.add(records.iloc[:3])
    agg.add(records.iloc[3:])
    out = agg.records()
    assert np.isnan(out["seconds_per_batch"].iloc[0])
    np.testing.assert_allclose(out["seconds_per_batch"].iloc[1:], 0.5)
    np.testing.assert_allclose(out["message_seconds_per_batch"].iloc[1:], 0.2)
    np.testing.assert_allclose(agg.bands("seconds_per_batch", "epoch")["median"], [0.5] * 5)
    np.testing.assert_allclose(out["seconds"], [0.0, 2.0, 2.0, 1.0, 2.0, 0.5])  # the raw window sums stay
    plotted = plotted_fields(set(agg.fields()))
    assert "seconds_per_batch" in plotted and "seconds" not in plotted and "message_seconds" not in plotted
    newton = RunAggregate()  # one-vs-all records (per label, no batches) keep their seconds per iteration
    newton.add(pd.DataFrame({"label": [0, 0, 1, 1], "iteration": [0, 1, 0, 1], "seconds": 1.0}))
    assert "seconds_per_batch" not in newton.fields()


def test_smoothing_and_downsampling_rules():
    from xcviz.runs.aggregate import downsample, smooth, smoothing_rule

    values = np.array([1.0, 3.0, np.nan, 5.0, 100.0])
    np.testing.assert_array_equal(smooth(values), values)
    np.testing.assert_allclose(smooth(values, "median", 3), [1.0, 2.0, np.nan, 4.0, 52.5])
    ema = smooth(values, "ema", 3)  # alpha 0.5, bias-corrected: the first point is kept
    assert ema[0] == 1.0 and np.isnan(ema[2]) and 5.0 < ema[4] < 100.0
    assert smoothing_rule("ema", 3) == "EMA span 3"
    index, k = downsample(np.arange(2500.0), 1000)
    assert k > 1 and index[0] == 0 and index[-1] == 2499 and len(index) <= 1000
    assert downsample(np.zeros(10), 1000)[1] == 1 and len(downsample(np.zeros((0, 3)))[0]) == 0


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 5000), st.integers(1, 3), st.integers(8, 1200))
def test_downsampling_keeps_every_buckets_extremes_and_the_ends(seed, n, c, max_points):
    """Every bucket's smallest and largest value of every column, and the first and last point,
    are among the points kept; never more than max_points (a spike is never thinned away)."""
    from xcviz.runs.aggregate import downsample

    rng = np.random.default_rng(seed)
    values = rng.standard_cauchy((n, c))
    values[rng.random((n, c)) < 0.05] = np.nan
    index, k = downsample(values, max_points)
    assert len(index) <= max_points and np.all(np.diff(index) > 0)
    assert index[0] == 0 and index[-1] == n - 1
    kept = set(index.tolist())
    for start in range(0, n, k):
        block = values[start:start + k]
        for col in range(c):
            finite = np.isfinite(block[:, col])
            if finite.any():
                lo, hi = np.nanmin(block[:, col]), np.nanmax(block[:, col])
                assert any(values[i, col] == lo for i in kept if start <= i < start + k)
                assert any(values[i, col] == hi for i in kept if start <= i < start + k)


def test_smoothing_on_a_log_axis_is_done_in_log_space():
    """A gap falling a decade a point: the linear EMA at the last point is dominated by the early,
    large values (about 0.1 for span 20, where the gap is 1e-8); the log-space EMA is the
    geometric mean the log axis shows, a few decades above the last point, never above the
    first. By hand for span 3 (alpha 0.5, bias-corrected): the log EMA of 1, 0.1 is 10^(-2/3)."""
    from xcviz.runs.aggregate import smooth

    gap = 10.0 ** -np.arange(9.0)
    linear, logged = smooth(gap, "ema", 20), smooth(gap, "ema", 20, log=True)
    assert linear[-1] > 0.05 and 1e-8 < logged[-1] < 1e-3
    np.testing.assert_allclose(smooth(gap[:2], "ema", 3, log=True), [1.0, 10 ** (-2 / 3)])
    with_zero = smooth(np.array([1.0, 0.0, 0.01]), "median", 2, log=True)  # a 0 is left out, as drawn
    np.testing.assert_allclose(with_zero, [1.0, np.nan, 0.01])


def test_slowest_labels_and_eta():
    from xcviz.runs.aggregate import eta_seconds, slowest_labels

    labels = pd.DataFrame({"label": [0, 1, 2], "seconds": [0.2, 0.9, 0.5]})
    assert list(slowest_labels(labels, 2)["label"]) == [1, 2]
    assert eta_seconds(10.0, 25, 100) == 30.0 and eta_seconds(1.0, 0, 10) is None
