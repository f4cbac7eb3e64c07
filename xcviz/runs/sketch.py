"""Per-iteration summaries of a one-vs-all run's records that merge batch by batch, so a finished
run opens without decoding its records.

A summary holds, per (field, iteration): the count, minimum, maximum and sum of the values over
labels (exact), and a histogram of the values in logarithmic buckets (mergeable: counts add).
Bucket b of a positive value x holds gamma^(b-1) < x <= gamma^b, gamma = (1 + ALPHA) / (1 - ALPHA),
and stands for 2 gamma^b / (gamma + 1); negative values mirror it, zero has a bucket of its own.
An order statistic read off the histogram is then within a relative ALPHA of the true one, and
the quantiles are interpolated between order statistics as pandas does (the smallest and the
largest are the exact minimum and maximum), so each band edge is within
ALPHA * max(|x_k|, |x_k+1|) of `quantile_bands`' value, x_k and x_k+1 the order statistics it
lies between. Exact median over labels is not mergeable across batches without keeping every
value; this bound is what the finished-run view states.

Each summary also keeps the labels' last wall times (a one-vs-all run's labels done against wall
time, one value per label) and the number of records, labels and batches it covers.
"""
from __future__ import annotations

import io
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from .aggregate import (
    FROM_FIRST_STEP,
    ID_COLUMNS,
    QUANTILES,
    X_AXES,
    RunAggregate,
    _check_quantiles,
)

ALPHA = 0.005  # relative error of every order statistic read off the histogram
GAMMA = (1 + ALPHA) / (1 - ALPHA)
_LOG_GAMMA = float(np.log(GAMMA))
_SPAN = 1 << 20  # bucket indices are clipped to +-_SPAN: gamma^_SPAN is far beyond float64's range
_HIST = ("h_field", "h_group", "h_code", "h_count")
_STATS = ("s_field", "s_group", "s_count", "s_min", "s_max", "s_sum")
_NUMERIC = "biufc"  # the dtype kinds pandas counts as numeric (bool included)


def _codes(values: np.ndarray) -> np.ndarray:
    """Each value's bucket as a signed code ordered as the values are (0 for zero)."""
    magnitude = np.abs(values)
    with np.errstate(divide="ignore"):
        index = np.ceil(np.log(magnitude) / _LOG_GAMMA)
    index = np.clip(np.nan_to_num(index, nan=-_SPAN, neginf=-_SPAN), -_SPAN, _SPAN).astype(np.int64)
    return np.where(magnitude > 0, np.sign(values).astype(np.int64) * (index + _SPAN + 1), 0)


def _representative(codes: np.ndarray) -> np.ndarray:
    """The value a bucket stands for: 2 gamma^b / (gamma + 1), the point within a relative ALPHA of
    every value of the bucket."""
    index = np.abs(codes) - _SPAN - 1
    return np.where(codes == 0, 0.0, np.sign(codes) * 2.0 * np.exp(index * _LOG_GAMMA) / (GAMMA + 1.0))


def _reduce(keys: tuple[np.ndarray, ...], columns: dict[str, tuple[np.ndarray, np.ufunc]]
            ) -> tuple[tuple[np.ndarray, ...], dict[str, np.ndarray]]:
    """Rows grouped by equal `keys`, each column reduced with its ufunc (add, minimum, maximum)."""
    if not len(keys[0]):
        return keys, {name: values for name, (values, _) in columns.items()}
    order = np.lexsort(keys[::-1])
    keys = tuple(k[order] for k in keys)
    starts = np.flatnonzero(np.any([np.diff(k, prepend=k[:1] - 1) != 0 for k in keys], axis=0))
    return (tuple(k[starts] for k in keys),
            {name: ufunc.reduceat(values[order], starts) for name, (values, ufunc) in columns.items()})


_CODE_OFFSET = 2 * _SPAN + 1  # bucket codes lie in [-_CODE_OFFSET, _CODE_OFFSET] (see _codes)
_CODE_BITS = 23  # so a code + _CODE_OFFSET lies in [0, 4 _SPAN + 2] < 2^23


def _field_arrays(values: np.ndarray, group: np.ndarray) -> dict[str, np.ndarray]:
    """The histogram and statistics arrays of fields x records `values` by `group` (iteration),
    as `_reduce` gives them per field: one stable sort of the groups serves every field (the
    values of a (field, group) keep their record order, so sums add in the same order), and the
    buckets are counted by one sort of (field-group, code) packed into one integer."""
    fields, n = values.shape
    within = np.argsort(group, kind="stable")
    order = (np.arange(fields, dtype=np.int64)[:, None] * n + within[None, :]).ravel()
    flat = values.ravel()
    order = order[np.isfinite(flat[order])]
    field, group, v = order // n, group[order % n], flat[order]
    if not len(v):
        empty = np.zeros(0, np.int64)
        return {"h_field": empty, "h_group": empty, "h_code": empty, "h_count": empty, "s_field": empty,
                "s_group": empty, "s_count": empty, "s_min": v, "s_max": v, "s_sum": v}
    new = np.empty(len(v), bool)
    new[0] = True
    new[1:] = (field[1:] != field[:-1]) | (group[1:] != group[:-1])
    starts = np.flatnonzero(new)
    segment = np.cumsum(new) - 1
    keys, counts = np.unique((segment << _CODE_BITS) | (_codes(v) + _CODE_OFFSET), return_counts=True)
    h_segment = starts[keys >> _CODE_BITS]
    return {"h_field": field[h_segment], "h_group": group[h_segment],
            "h_code": (keys & ((1 << _CODE_BITS) - 1)) - _CODE_OFFSET, "h_count": counts,
            "s_field": field[starts], "s_group": group[starts], "s_count": np.diff(np.append(starts, len(v))),
            "s_min": np.minimum.reduceat(v, starts), "s_max": np.maximum.reduceat(v, starts),
            "s_sum": np.add.reduceat(v, starts)}


class Summary:
    """A mergeable per-iteration summary of iteration records (see the module's docstring)."""

    def __init__(self, fields: list[str], arrays: dict[str, np.ndarray]) -> None:
        self.fields = list(fields)
        self.arrays = arrays

    @classmethod
    def of(cls, batch: Mapping[str, np.ndarray] | pd.DataFrame) -> Summary:
        """The summary of one batch of iteration records (whole labels, derived fields included),
        given as a frame or as equal-length columns: every numeric column but ID_COLUMNS is a
        field. All fields are reduced at once (one sort by field, iteration and bucket), each
        (field, iteration)'s values in record order as a per-field reduction would take them."""
        columns = {name: np.asarray(batch[name]) for name in batch}
        fields = [c for c in columns if c not in ID_COLUMNS and columns[c].dtype.kind in _NUMERIC]
        n = len(columns["iteration"])
        if fields:
            arrays = _field_arrays(np.stack([columns[f].astype(np.float64) for f in fields]),
                                   columns["iteration"].astype(np.int64))
        else:
            arrays = {name: np.zeros(0) for name in (*_HIST, *_STATS)}
        label = columns.get("label")
        done, count = np.zeros(0), 1 if label is None else 0
        if label is not None and len(label):  # each label's last wall time, by label
            order = np.argsort(label, kind="stable")
            sorted_label = label[order]
            starts = np.flatnonzero(np.append(True, sorted_label[1:] != sorted_label[:-1]))
            count = len(starts)
            if "wall" in columns:
                done = np.fmax.reduceat(columns["wall"].astype(np.float64)[order], starts)
        arrays.update(done_at=done, totals=np.array([n, count, 1], np.int64))
        return cls(fields, arrays)

    @classmethod
    def merge(cls, parts: list[Summary]) -> Summary:
        """One summary of the records of all `parts` (counts and sums add, extremes combine)."""
        fields = list(dict.fromkeys(f for p in parts for f in p.fields))
        cat: dict[str, list[np.ndarray]] = {}
        for p in parts:
            remap = np.array([fields.index(f) for f in p.fields], np.int64)
            for name, values in p.arrays.items():
                if name in ("h_field", "s_field"):
                    values = remap[values.astype(np.int64)] if len(values) else values.astype(np.int64)
                cat.setdefault(name, []).append(values)
        a = {name: np.concatenate(v) for name, v in cat.items()}
        (hf, hg, hc), hist = _reduce((a["h_field"], a["h_group"], a["h_code"]), {"n": (a["h_count"], np.add)})
        (sf, sg), stats = _reduce((a["s_field"], a["s_group"]), {
            "n": (a["s_count"], np.add), "lo": (a["s_min"], np.minimum), "hi": (a["s_max"], np.maximum),
            "sum": (a["s_sum"], np.add)})
        totals = np.sum([p.arrays["totals"] for p in parts], axis=0)
        return cls(fields, {"h_field": hf, "h_group": hg, "h_code": hc, "h_count": hist["n"], "s_field": sf,
                            "s_group": sg, "s_count": stats["n"], "s_min": stats["lo"], "s_max": stats["hi"],
                            "s_sum": stats["sum"], "done_at": a["done_at"], "totals": totals})

    def pack(self) -> bytes:
        buf = io.BytesIO()
        np.savez(buf, fields=np.array(self.fields, dtype=str), **self.arrays)
        return buf.getvalue()

    @classmethod
    def unpack(cls, blob: bytes) -> Summary:
        with np.load(io.BytesIO(blob), allow_pickle=False) as z:
            return cls(z["fields"].tolist(), {k: z[k] for k in z.files if k != "fields"})

    @property
    def records(self) -> int:
        return int(self.arrays["totals"][0])

    @property
    def labels(self) -> int:
        """Labels summed over batches (a batch holds whole labels, so each label is counted once)."""
        return int(self.arrays["totals"][1])

    @property
    def batches(self) -> int:
        return int(self.arrays["totals"][2])

    def work(self) -> np.ndarray:
        """Seconds summed over labels per iteration (0 for iterations without any)."""
        if "seconds" not in self.fields:
            return np.zeros(0)
        a = self.arrays
        mine = a["s_field"] == self.fields.index("seconds")
        out = np.zeros(int(a["s_group"][mine].max()) + 1 if mine.any() else 0)
        out[a["s_group"][mine]] = a["s_sum"][mine]
        return out

    def bands(self, field: str, quantiles: tuple[float, float] = QUANTILES) -> dict[str, np.ndarray]:
        """Arrays "group" (iteration), "median", "lower", "upper", "count" of `field`, by iteration
        (from iteration 1 for FROM_FIRST_STEP fields, as `RunAggregate.bands` draws them)."""
        _check_quantiles(quantiles)
        empty = {k: np.zeros(0) for k in ("group", "median", "lower", "upper", "count")}
        if field not in self.fields:
            return empty
        f = self.fields.index(field)
        a = self.arrays
        first = 1 if field in FROM_FIRST_STEP else 0
        s = (a["s_field"] == f) & (a["s_group"] >= first)
        h = (a["h_field"] == f) & (a["h_group"] >= first)
        groups, count, lo, hi = a["s_group"][s], a["s_count"][s], a["s_min"][s], a["s_max"][s]
        if not len(groups):
            return empty
        h_group, h_count, value = a["h_group"][h], a["h_count"][h], _representative(a["h_code"][h])
        cum = np.cumsum(h_count)  # histogram rows are sorted by (field, group, code): by value within a group
        start = np.searchsorted(h_group, groups, "left")
        before = np.where(start > 0, cum[start - 1], 0)
        q_lo, q_hi = quantiles

        def order_stat(k: np.ndarray) -> np.ndarray:
            """The k-th smallest value (0-based) of each group: exact at the ends, a bucket's value
            clamped to the group's range elsewhere."""
            at = np.searchsorted(cum, before + k, "right")
            estimate = np.clip(value[np.minimum(at, len(value) - 1)], lo, hi)
            return np.where(k <= 0, lo, np.where(k >= count - 1, hi, estimate))

        def quantile(q: float) -> np.ndarray:
            position = q * (count - 1)
            below = np.floor(position).astype(np.int64)
            above = np.minimum(below + 1, count - 1)
            x_below = order_stat(below)
            return x_below + (position - below) * (order_stat(above) - x_below)

        return {"group": groups, "median": quantile(0.5), "lower": quantile(q_lo), "upper": quantile(q_hi),
                "count": count}


class SummaryAggregate(RunAggregate):
    """A finished run's `RunAggregate` read from its stored summary instead of its records: the
    same fields, axes (iteration, wall time for labels done, cumulative work) and bands, with band
    edges within the bound of the module's docstring. It holds no records (`records()` is empty);
    `trajectory(label)` asks `trajectories` for the label's records (the store's:
    `label_trajectory.StoredTrajectories`), empty without it. A batch added later (the run was
    resumed) is refused, and the reader goes back to the records (`RecordCache`)."""

    def __init__(self, summary: Summary, n_rows: int | None = None, quantiles: tuple[float, float] = QUANTILES,
                 trajectories: Callable[[int], pd.DataFrame] | None = None) -> None:
        super().__init__(n_rows, quantiles)
        self.summary = summary
        self._trajectories = trajectories
        self.version = 1
        self._work = summary.work()
        self._done = np.sort(summary.arrays["done_at"])

    def add(self, batch: pd.DataFrame) -> None:
        if len(batch):
            raise ValueError("a run read from its summary takes no new records: read it anew from its records")

    def __len__(self) -> int:
        return self.summary.records

    def trajectory(self, label: int) -> pd.DataFrame:
        """One label's iteration records, by iteration, read for this label alone."""
        return self._trajectories(label) if self._trajectories is not None else super().trajectory(label)

    def fields(self) -> list[str]:
        return self.summary.fields + (["labels_done"] if len(self._done) else [])

    def per_label(self) -> bool:
        return self.summary.labels > 1

    def axes(self) -> list[str]:
        return ["iteration", *(["wall"] if len(self._done) else []), *(["work"] if len(self._work) else [])]

    def bands(self, field: str, axis: str = "iteration") -> pd.DataFrame:
        """Columns "x", "median", "lower", "upper", "count"; on the wall-time axis only the labels done."""
        if axis not in X_AXES:
            raise ValueError(f"unknown x-axis {axis!r}; known: {', '.join(X_AXES)}")
        cached = self._bands.get((field, axis))
        if cached is not None:
            return cached[1]
        if axis not in self.axes() or field not in self.fields() or (axis == "wall") != (field == "labels_done"):
            return pd.DataFrame(columns=["x", "median", "lower", "upper", "count"])
        if field == "labels_done":
            count = np.arange(1, len(self._done) + 1, dtype=np.float64)
            out = pd.DataFrame({"x": self._done, "median": count, "lower": count, "upper": count, "count": 1})
        else:
            b = self.summary.bands(field, self.quantiles)
            x = np.cumsum(self._work)[b["group"]] if axis == "work" else b["group"].astype(np.float64)
            out = pd.DataFrame({"x": x, "median": b["median"], "lower": b["lower"], "upper": b["upper"],
                                "count": b["count"]})
        self._bands[(field, axis)] = (self.version, out)
        return out
