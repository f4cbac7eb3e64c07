"""Samples of the labels stratified by their positives: what an estimate trains (runs.estimate) and
what a one-vs-all run trains when its `label_sample` parameter asks for part of the labels (a whole
Amazon-670K run takes days on 2 cores, a sample of it minutes).

The labels are cut by their number of positives into STRATA groups of (nearly) equal size and the
same share of every group is drawn, at least one label a group, with a fixed seed: the same labels
and the same `label_sample` draw the same sample, so a resumed run trains the labels it began with."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

STRATA = 10  # groups of labels by positives, each sampled alike
SEED = 0     # a run's sample is drawn with this seed: reproducible, never the user's to forget


def stratified_sample(n_pos: np.ndarray, sample: int, strata: int = STRATA, seed: int = 0) -> list[tuple]:
    """Labels grouped by positives into `strata` groups of (nearly) equal size, each with the labels
    drawn from it: [(group, drawn)], drawing the same share of every group, at least one label, and
    `sample` labels in all (the rounding's remainder goes to the groups it cut most) unless that
    leaves a group with none."""
    order = np.argsort(n_pos, kind="stable")
    groups = [g for g in np.array_split(order, min(strata, max(1, order.size))) if g.size]
    rng = np.random.default_rng(seed)
    quota = min(1.0, sample / max(1, order.size)) * np.array([g.size for g in groups], dtype=float)
    counts = np.floor(quota).astype(int)
    short = min(round(quota.sum()), order.size) - counts.sum()
    counts[np.argsort(counts - quota, kind="stable")[:short]] += 1
    return [(g, np.sort(rng.choice(g, max(1, c), replace=False))) for g, c in zip(groups, counts)]


def sample_count(value: float, n_labels: int) -> int:
    """The labels a `label_sample` value asks for out of `n_labels`: 0 every label, a value below 1 that
    share of them (at least one), 1 or more that many (at most all)."""
    if not 0 <= value < float("inf"):
        raise ValueError(f"label_sample must be 0 (every label), a share below 1 or a count, not {value}")
    if value == 0:
        return n_labels
    return min(n_labels, max(1, round(value * n_labels if value < 1 else value)))


def draw_labels(n_pos: np.ndarray, value: float, seed: int = SEED) -> np.ndarray | None:
    """The sorted label indices a `label_sample` value draws from labels with `n_pos` positives
    (stratified_sample), or None when it asks for every label."""
    count = sample_count(value, n_pos.size)
    if count >= n_pos.size:
        return None
    return np.sort(np.concatenate([drawn for _, drawn in stratified_sample(n_pos, count, seed=seed)]))


def positives_per_label(Y: sp.spmatrix) -> np.ndarray:
    """Each label's number of positive rows."""
    return np.bincount(sp.csr_matrix(Y).indices, minlength=Y.shape[1])
