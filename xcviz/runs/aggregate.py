"""Summaries of iteration records over labels: the median and quantile bands of the MSI paper.

A one-vs-all run has one trajectory per label; plotting them all hides the picture. Figures show,
per iteration, the median over the labels still training and a 5-95% band, plus how many labels
remain, which is what these functions compute (on the server side, for any number of records).
"""
from __future__ import annotations

import numpy as np
import pandas as pd


def quantile_bands(records: pd.DataFrame, field: str, by: str = "iteration",
                   quantiles: tuple[float, float] = (0.05, 0.95)) -> pd.DataFrame:
    """Per value of `by`: the median of `field` over labels, the lower and upper quantiles, the count.

    Columns: `by`, "median", "lower", "upper", "count"."""
    if field not in records or by not in records:
        raise KeyError(f"records have no column {field if field not in records else by!r}")
    lo, hi = quantiles
    if not 0.0 <= lo <= 0.5 <= hi <= 1.0:
        raise ValueError(f"quantiles must satisfy 0 <= lower <= 0.5 <= upper <= 1, got {quantiles}")
    grouped = records.groupby(by)[field]
    out = pd.DataFrame({"median": grouped.median(), "lower": grouped.quantile(lo),
                        "upper": grouped.quantile(hi), "count": grouped.count()})
    return out.reset_index()


def relative_to_final(records: pd.DataFrame, field: str = "objective") -> pd.Series:
    """(value - final value) / |final value| per label: how far each iteration is from where the
    label ended, comparable across labels of very different scale."""
    final = records.sort_values("iteration").groupby("label")[field].transform("last")
    return (records[field] - final) / np.abs(final).where(final != 0, 1.0)
