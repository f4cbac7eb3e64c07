"""The derived fields of one-vs-all iteration records, computed on numpy columns.

A one-vs-all batch holds whole labels, one record per (label, iteration). The store derives these
fields for every batch it summarises, in the training's thread, so they are computed here with a
sort and a few reductions over the columns instead of pandas' groupby (whose fixed cost per call
was most of what recording into the store cost on a small data set). `aggregate.with_derived`
uses the same functions on a frame's columns: one rule for the store and for the pages.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np


def _by_label(label: np.ndarray, iteration: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The records' order by (label, iteration), stable, each record's label group (0, 1, ... by
    label) and where each group ends in that order (its last index + 1)."""
    order = np.lexsort((iteration, label))
    sorted_label = label[order]
    new = np.empty(len(order), bool)
    new[:1] = True
    new[1:] = sorted_label[1:] != sorted_label[:-1]
    group_sorted = np.cumsum(new) - 1
    group = np.empty(len(order), np.int64)
    group[order] = group_sorted
    ends = np.append(np.flatnonzero(new)[1:], len(order))
    return order, group, ends


def _relative_to_final(order: np.ndarray, group: np.ndarray, ends: np.ndarray, values: np.ndarray) -> np.ndarray:
    """`relative_to_final_values` with the records' grouping (`_by_label`) given."""
    missing = np.isnan(values[order]) if values.dtype.kind in "fc" else np.zeros(len(order), bool)
    last_valid = np.maximum.accumulate(np.where(missing, -1, np.arange(len(order))))[ends - 1]
    has = last_valid >= np.append(0, ends[:-1])
    final = values[order[np.where(has, last_valid, 0)]]
    if not has.all():
        final = np.where(has, final, np.nan)
    final = final[group]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return (values - final) / np.where(final != 0, np.abs(final), 1.0)


def relative_to_final_values(label: np.ndarray, iteration: np.ndarray, values: np.ndarray) -> np.ndarray:
    """(value - final value) / |final value| per label (a final value of 0 divides by 1), the
    final value being the label's value at its last iteration that has one (missing values, NaN,
    are passed over as pandas' groupby `last` does; a label without any gets NaN throughout)."""
    label, iteration, values = np.asarray(label), np.asarray(iteration), np.asarray(values)
    if not len(values):
        return np.zeros(0)
    return _relative_to_final(*_by_label(label, iteration), values)


def objective_gap(label: np.ndarray, iteration: np.ndarray, objective: np.ndarray) -> np.ndarray:
    """`relative_to_final_values` of the objective, NaN at each label's last iteration (where it is
    0 by definition)."""
    label, iteration, objective = np.asarray(label), np.asarray(iteration), np.asarray(objective)
    if not len(objective):
        return np.zeros(0)
    order, group, ends = _by_label(label, iteration)
    gap = _relative_to_final(order, group, ends, objective)
    last = iteration[order[ends - 1]][group] == iteration
    return np.where(last, np.nan, gap)


def per_label_fields(columns: Mapping[str, np.ndarray], n_rows: int | None = None) -> dict[str, np.ndarray]:
    """The derived fields of a one-vs-all batch (whole labels, no `epoch`): `objective_gap`, and
    with `n_rows` (training rows) `active_fraction` and `rows_fraction` (see `with_derived`)."""
    out: dict[str, np.ndarray] = {}
    if "objective" in columns and "label" in columns and "iteration" in columns:
        out["objective_gap"] = objective_gap(columns["label"], columns["iteration"], columns["objective"])
    if n_rows:
        for source, name in (("active_set", "active_fraction"), ("rows_touched", "rows_fraction")):
            if source in columns:
                out[name] = np.asarray(columns[source]) / n_rows
    return out
