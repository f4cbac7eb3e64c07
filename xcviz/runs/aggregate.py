"""Summaries of iteration records over labels: the median and quantile bands of the MSI paper.

A one-vs-all run has one trajectory per label; plotting them all hides the picture. Figures show,
per iteration, the median over the labels still training and a 5-95% band, plus how many labels
remain, which is what these functions compute (on the server side, for any number of records).

`RunAggregate` keeps those summaries up to date while a run trains: every new batch of records is
merged into per-iteration sorted values (a batch holds whole labels, so it touches the iterations
its labels reached and nothing else), and the bands are recomputed only after a new batch, never
on a timer. The plotting code reads finished summaries; it does no arithmetic over records.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .derived import per_label_fields, relative_to_final_values

QUANTILES = (0.05, 0.95)
# iteration 0 is the starting point: it has no step, and its seconds are set-up time
FROM_FIRST_STEP = frozenset({"step_size", "seconds", "cg_steps"})
# times a streaming solver (MEMOIR, LDGS) sums over a record's window of batches; the last window of
# an epoch, or of a cancelled run, holds fewer batches and would dip in a plot: drawn per batch
PER_BATCH = ("seconds", "query_seconds", "update_seconds", "rescore_seconds", "message_seconds")
# columns that say where a record is, not what the solver did
ID_COLUMNS = frozenset({"label", "iteration", "wall", "run", "block"})
X_AXES = {
    "iteration": "x: iteration (0 is the starting point)",
    "wall": "x: wall time since the run started (MEMOIR, DS-MLR and LDGS: training seconds, without the time they "
            "spend measuring at each record), records in equal time bins (at most 200 per run); one-vs-all runs "
            "draw only the labels done by then (their labels train one after another, so a bin mixes the first "
            "iterations of some labels with the last of others)",
    "work": "x: cumulative work, CPU-seconds spent on iterations 0..i summed over all labels",
    "epoch": "x: passes over the training data (solvers that stream the data, such as MEMOIR)",
}
WALL_BINS = 200
WALL_BIN_MIN = 0.01  # seconds; bin widths are this times a power of two
MAX_POINTS = 1000
SMOOTHING = ("raw", "ema", "median")


def quantile_bands(records: pd.DataFrame, field: str, by: str = "iteration",
                   quantiles: tuple[float, float] = QUANTILES) -> pd.DataFrame:
    """Per value of `by`: the median of `field` over labels, the lower and upper quantiles, the count.

    Columns: `by`, "median", "lower", "upper", "count"."""
    if field not in records or by not in records:
        raise KeyError(f"records have no column {field if field not in records else by!r}")
    _check_quantiles(quantiles)
    lo, hi = quantiles
    grouped = records.groupby(by)[field]
    out = pd.DataFrame({"median": grouped.median(), "lower": grouped.quantile(lo),
                        "upper": grouped.quantile(hi), "count": grouped.count()})
    return out.reset_index()


def _check_quantiles(quantiles: tuple[float, float]) -> None:
    lo, hi = quantiles
    if not 0.0 <= lo <= 0.5 <= hi <= 1.0:
        raise ValueError(f"quantiles must satisfy 0 <= lower <= 0.5 <= upper <= 1, got {quantiles}")


def relative_to_final(records: pd.DataFrame, field: str = "objective") -> pd.Series:
    """(value - final value) / |final value| per label: how far each iteration is from where the
    label ended, comparable across labels of very different scale (derived.relative_to_final_values)."""
    values = relative_to_final_values(records["label"].to_numpy(), records["iteration"].to_numpy(),
                                      records[field].to_numpy())
    return pd.Series(values, index=records.index, name=field)


class GroupedQuantiles:
    """Median, quantile band and count of values per integer group, exact, updated batch by batch.

    Values are kept sorted by (group, value); `add` inserts a batch in place (a binary search per
    touched group, one copy of the arrays) instead of sorting everything again, and the bands are
    read off the sorted values by index, with pandas' linear interpolation."""

    def __init__(self, quantiles: tuple[float, float] = QUANTILES) -> None:
        _check_quantiles(quantiles)
        self.quantiles = quantiles
        self.groups = np.empty(0, np.int64)
        self.values = np.empty(0, np.float64)
        self._bands: dict[str, np.ndarray] | None = None

    def add(self, groups: np.ndarray, values: np.ndarray) -> None:
        """Add values (NaN and infinities are left out) to their groups."""
        values = np.asarray(values, np.float64)
        keep = np.isfinite(values)
        g, v = np.asarray(groups, np.int64)[keep], values[keep]
        if not len(g):
            return
        order = np.lexsort((v, g))
        g, v = g[order], v[order]
        touched, first = np.unique(g, return_index=True)
        ends = np.append(first[1:], len(g))
        lo = np.searchsorted(self.groups, touched, "left")
        hi = np.searchsorted(self.groups, touched, "right")
        pos = np.repeat(lo, ends - first)  # a group new to the store goes where it sorts, as a block
        for t in np.flatnonzero(hi > lo):  # a group already present: merge its values in order
            a, b = first[t], ends[t]
            pos[a:b] = lo[t] + np.searchsorted(self.values[lo[t]:hi[t]], v[a:b], "right")
        self.groups = np.insert(self.groups, pos, g)
        self.values = np.insert(self.values, pos, v)
        self._bands = None

    def bands(self) -> dict[str, np.ndarray]:
        """Arrays "group", "median", "lower", "upper", "count", one entry per group, by group."""
        if self._bands is None:
            starts = np.flatnonzero(np.diff(self.groups, prepend=np.int64(-2**62)))
            counts = np.diff(np.append(starts, len(self.groups)))
            lo, hi = self.quantiles
            self._bands = {"group": self.groups[starts], "median": self._at(starts, counts, 0.5),
                           "lower": self._at(starts, counts, lo), "upper": self._at(starts, counts, hi),
                           "count": counts}
        return self._bands

    def _at(self, starts: np.ndarray, counts: np.ndarray, q: float) -> np.ndarray:
        position = starts + q * (counts - 1)
        below = np.floor(position).astype(np.int64)
        above = np.minimum(below + 1, starts + counts - 1)
        return self.values[below] + (position - below) * (self.values[above] - self.values[below])


def with_derived(batch: pd.DataFrame, n_rows: int | None = None, last_step: float = np.nan) -> pd.DataFrame:
    """A batch of iteration records with the derived fields the plots use: `objective_gap`,
    (f - f_final) / |f_final| per label, left out (NaN) at each label's last iteration where it is
    0 by definition, for one-vs-all batches that hold whole labels (records with an `epoch` come
    from a solver that streams one trajectory over many batches, whose final value is not known
    yet); `active_fraction`, the active set over the `n_rows` training rows, for one-vs-all
    records, whose active set is a set of rows (a streaming solver's is not: LDGS's is the classes
    it scores per sample, drawn as it is); `rows_fraction`, PPDSparse's rows touched by the search
    over the training rows (Newton reads all of them every iteration: 1); and `<field>_per_batch` for the PER_BATCH times of a
    streaming solver's records (`batch`: the batches trained so far; `last_step`: that of the
    record before this batch, NaN if none), left out where a record trained no batch."""
    extra = {}
    per_label = "epoch" not in batch
    if per_label:
        used = ("label", "iteration", "objective", "active_set", "rows_touched")
        extra.update(per_label_fields({c: batch[c].to_numpy() for c in used if c in batch}, n_rows))
    if "batch" in batch and not per_label:
        steps = batch["batch"].to_numpy(np.float64)
        trained = np.diff(steps, prepend=last_step)
        trained[~(trained > 0)] = np.nan
        extra.update({f"{f}_per_batch": batch[f].to_numpy(np.float64) / trained for f in PER_BATCH if f in batch})
    return batch.assign(**extra) if extra else batch


class RunAggregate:
    """One run's iteration records as they arrive, summarised per iteration and per wall-time bin.

    `add` takes each new batch (whole labels, as the store writes them); `bands(field, axis)` gives
    the median and 5-95% band of a field over labels against one of `X_AXES`, updated from the
    batches added since it was last asked and cached otherwise. A run with one record per
    iteration (no `label` column, or a single label) gets bands that collapse onto its line."""

    def __init__(self, n_rows: int | None = None, quantiles: tuple[float, float] = QUANTILES) -> None:
        self.n_rows = n_rows
        self.quantiles = quantiles
        self.version = 0
        self._batches: list[pd.DataFrame] = []
        self._records: pd.DataFrame | None = None
        self._acc: dict[tuple[str, str], tuple[GroupedQuantiles, int, float]] = {}
        self._work = np.zeros(0)
        self._epoch = np.zeros(0)  # the epoch each iteration record was taken at, by iteration
        self._wall_max = 0.0
        self._labels: set[int] = set()  # up to two distinct labels: enough to tell one trajectory from many
        self._done_at: list[np.ndarray] = []  # a one-vs-all run's labels' last wall times, batch by batch
        self._last_step = np.nan  # a streaming run's batches trained at its last record (see with_derived)
        self._fields: tuple[int, list[str]] = (-1, [])
        self._bands: dict[tuple[str, str], tuple[int, pd.DataFrame]] = {}

    def add(self, batch: pd.DataFrame) -> None:
        """Take a new batch of iteration records."""
        if not len(batch):
            return
        batch = with_derived(batch, self.n_rows, self._last_step)
        if "batch" in batch:
            self._last_step = float(batch["batch"].iloc[-1])
        self._batches.append(batch)
        self._records = None
        self.version += 1
        if "seconds" in batch and "iteration" in batch:
            sums = np.bincount(batch["iteration"].to_numpy(np.int64), weights=batch["seconds"].to_numpy(np.float64))
            size = max(len(sums), len(self._work))
            self._work = np.pad(self._work, (0, size - len(self._work))) + np.pad(sums, (0, size - len(sums)))
        if "epoch" in batch and "iteration" in batch:
            iterations = batch["iteration"].to_numpy(np.int64)
            if len(iterations) and iterations.max() >= len(self._epoch):
                self._epoch = np.pad(self._epoch, (0, iterations.max() + 1 - len(self._epoch)))
            self._epoch[iterations] = batch["epoch"].to_numpy(np.float64)
        if "label" in batch and len(self._labels) < 2:
            self._labels.update(batch["label"].drop_duplicates().head(2).tolist())
        if "wall" in batch:
            self._wall_max = max(self._wall_max, float(np.nanmax(batch["wall"].to_numpy(np.float64))))
            if "label" in batch and "epoch" not in batch:  # one-vs-all: a batch holds whole labels
                self._done_at.append(batch.groupby("label")["wall"].max().to_numpy(np.float64))

    def __len__(self) -> int:
        return sum(len(b) for b in self._batches)

    def fields(self) -> list[str]:
        """The numeric fields the records hold (derived ones included), in record order."""
        if not self._batches:
            return []
        if self._fields[0] != self.version:
            batch = self._batches[-1]
            self._fields = (self.version, [c for c in batch.columns
                                           if c not in ID_COLUMNS and pd.api.types.is_numeric_dtype(batch[c])]
                            + (["labels_done"] if self._done_at else []))
        return self._fields[1]

    def per_label(self) -> bool:
        """Whether the records hold trajectories of several labels (bands over labels), rather than
        one trajectory (a multiclass run such as MEMOIR's records label 0 only)."""
        return len(self._labels) > 1

    def axes(self) -> list[str]:
        """The x-axes these records support."""
        columns = set(self._batches[-1].columns) if self._batches else set()
        return [a for a, need in (("iteration", "iteration"), ("wall", "wall"), ("work", "seconds"), ("epoch", "epoch"))
                if need in columns]

    def wall_bin(self) -> float:
        """The width of the wall-time bins: WALL_BIN_MIN times the smallest power of two that keeps
        the run so far within WALL_BINS bins (it doubles as the run grows, so bins are rebuilt
        about log2(duration) times over a run, and otherwise only extended)."""
        needed = self._wall_max / (WALL_BINS * WALL_BIN_MIN)
        return WALL_BIN_MIN * 2.0 ** max(0, math.ceil(math.log2(needed))) if needed > 1 else WALL_BIN_MIN

    def bands(self, field: str, axis: str = "iteration") -> pd.DataFrame:
        """Columns "x", "median", "lower", "upper", "count": the band of `field` against `axis`."""
        if axis not in X_AXES:
            raise ValueError(f"unknown x-axis {axis!r}; known: {', '.join(X_AXES)}")
        cached = self._bands.get((field, axis))
        if cached is not None and cached[0] == self.version:
            return cached[1]
        one_vs_all_wall = bool(self._done_at) and axis == "wall"  # draws the labels done, and only them
        if axis not in self.axes() or field not in self.fields() or one_vs_all_wall != (field == "labels_done"):
            return pd.DataFrame(columns=["x", "median", "lower", "upper", "count"])
        if field == "labels_done":
            return self._labels_done()
        width = self.wall_bin() if axis == "wall" else 0.0
        acc, used, acc_width = self._acc.get((field, axis), (None, 0, 0.0))
        if acc is None or acc_width != width:
            acc, used = GroupedQuantiles(self.quantiles), 0
        for batch in self._batches[used:]:
            rows = batch
            if field in FROM_FIRST_STEP and "iteration" in batch:
                rows = batch[batch["iteration"].to_numpy() > 0]
            key = (rows["wall"].to_numpy(np.float64) // width) if axis == "wall" else rows["iteration"].to_numpy()
            acc.add(key.astype(np.int64), rows[field].to_numpy(np.float64))
        self._acc[(field, axis)] = (acc, len(self._batches), width)
        b = acc.bands()
        if axis == "wall":
            x = (b["group"] + 0.5) * width
        elif axis == "work":
            x = np.cumsum(self._work)[b["group"]]
        elif axis == "epoch":
            x = self._epoch[b["group"]]
        else:
            x = b["group"].astype(np.float64)
        out = pd.DataFrame({"x": x, "median": b["median"], "lower": b["lower"], "upper": b["upper"],
                            "count": b["count"]})
        self._bands[(field, axis)] = (self.version, out)
        return out

    def _labels_done(self) -> pd.DataFrame:
        """A one-vs-all run's labels done against wall time: the k-th label to finish at its last
        record's wall time, one point per label (no band: it is one count)."""
        done = np.sort(np.concatenate(self._done_at))
        count = np.arange(1, len(done) + 1, dtype=np.float64)
        out = pd.DataFrame({"x": done, "median": count, "lower": count, "upper": count, "count": 1})
        self._bands[("labels_done", "wall")] = (self.version, out)
        return out

    def records(self) -> pd.DataFrame:
        """All iteration records so far, derived fields included (one concatenation per new batch)."""
        if self._records is None:
            self._records = pd.concat(self._batches, ignore_index=True) if self._batches else pd.DataFrame()
        return self._records

    def trajectory(self, label: int) -> pd.DataFrame:
        """One label's iteration records, by iteration (empty until the label has been recorded)."""
        records = self.records()
        if "label" not in records:
            return records.iloc[:0]
        return records[records["label"].to_numpy() == label].sort_values("iteration")


def smooth(values: np.ndarray, rule: str = "raw", window: int = 10, log: bool = False) -> np.ndarray:
    """Smoothed values along x (axis 0; columns of a 2-D array are smoothed separately): "raw"
    (unchanged), "ema" (exponential moving average with span `window`, i.e. weight 2/(window+1)
    on the newest point, bias-corrected at the start as TensorBoard does), "median" (median of the
    last `window` points). NaN points stay NaN. With `log`, the smoothing is done on log10 of the
    values, as a log axis draws them (values <= 0, which it cannot draw, are left out as NaN): an
    EMA of a gap falling from 1 to 1e-8 on linear values stays near the early large ones and reads
    0.1 on a log axis where the gap is at 1e-8 (issue 40)."""
    if rule == "raw":
        return np.asarray(values, np.float64)
    if window < 1:
        raise ValueError(f"smoothing window must be at least 1, got {window}")
    if log:
        values = np.asarray(values, np.float64)
        logs = np.full(values.shape, np.nan)
        np.log10(values, out=logs, where=values > 0)
        return 10.0 ** smooth(logs, rule, window)
    series = pd.DataFrame(np.asarray(values, np.float64))
    if rule == "ema":
        out = series.ewm(span=window, adjust=True, ignore_na=True).mean()
    elif rule == "median":
        out = series.rolling(window, min_periods=1).median()
    else:
        raise ValueError(f"unknown smoothing {rule!r}; known: {', '.join(SMOOTHING)}")
    out = out.where(series.notna()).to_numpy()
    return out if np.ndim(values) > 1 else out[:, 0]


def smoothing_rule(rule: str, window: int) -> str:
    """The words a plot title uses for a smoothing rule."""
    return {"raw": "raw", "ema": f"EMA span {window}", "median": f"rolling median of {window} points"}[rule]


def downsample(values: np.ndarray, max_points: int = MAX_POINTS) -> tuple[np.ndarray, int]:
    """Indices that keep a curve of n points (`values`: n values, or n x c for c curves drawn at
    the same x, such as a median and its band's edges) within max_points, extremes kept: the x
    range is cut into buckets of k consecutive points, k = ceil(n / buckets) with
    buckets = (max_points - 2) // (2 c), and each bucket keeps the points of its smallest and
    largest value of every column (NaN left out), plus the curve's first and last point. A spike
    of one point therefore survives any thinning, which every-k-th-point sampling drops. Returns
    (sorted indices, k); k = 1 keeps everything. max_points must be at least 2 c + 2."""
    values = np.asarray(values, np.float64)
    columns = values if values.ndim == 2 else values[:, None]
    n, c = columns.shape
    if n <= max_points:
        return np.arange(n), 1
    buckets = max(1, (max_points - 2) // (2 * c))
    k = math.ceil(n / buckets)
    padded = np.full((buckets * k, c), np.nan)
    padded[:n] = columns
    blocks = padded.reshape(buckets, k, c)
    finite = np.isfinite(blocks)
    base = (np.arange(buckets) * k)[:, None]
    keep = [np.array([0, n - 1])]
    for fill, pick in ((np.inf, np.argmin), (-np.inf, np.argmax)):
        at = pick(np.where(finite, blocks, fill), axis=1)  # buckets x c
        has = finite.any(axis=1)
        keep.append((base + at)[has])
    return np.unique(np.concatenate(keep)), k


def slowest_labels(labels: pd.DataFrame, k: int = 10) -> pd.DataFrame:
    """The k labels that took the longest (label records), slowest first."""
    if "seconds" not in labels or not len(labels):
        return labels.iloc[:0]
    return labels.nlargest(k, "seconds")


def eta_seconds(elapsed: float, done: int, total: int) -> float | None:
    """Seconds left if the remaining labels go at the pace of the finished ones (None before any)."""
    if done <= 0 or total <= done:
        return None if done <= 0 else 0.0
    return elapsed * (total - done) / done
