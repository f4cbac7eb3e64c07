"""The live weight matrix of a multiclass SGD run: W = scale * V, V a sparse row per class.

"Lazy" scaling (MEMOIR, section 6): multiplying W by a number only changes `scale`, so a step
costs O(nnz of the batch) and not O(nnz(W)). When the scale gets small, one O(nnz) pass folds it
into V. The store also keeps what the averaged iterate needs (see `average`) and answers the
`ClassVectors` questions of the margin oracles, about V (the common scale does not change an argmax).
"""
from __future__ import annotations

from typing import Callable

import numba
import numpy as np
import scipy.sparse as sp

from ..engine import weightstore as ws
from ..engine.memoir import apply_violations


# Fold the scale into V below this: a smaller bound folds less often, but the average's
# acc + scale_sum * V - ref then cancels larger numbers (1e-3 keeps it near 1e-12 relative).
FOLD_BELOW = 1e-3


class ClassWeights:
    """C x D sparse weights, growable; memory O(nnz(W) + C)."""

    def __init__(self, n_classes: int, n_features: int, capacity: int = 1 << 12) -> None:
        self.n_classes = int(n_classes)
        self.n_features = int(n_features)
        self.scale = 1.0
        self.sumsq = 0.0  # ||V||_F^2, kept up to date incrementally, recomputed at every fold
        # averaging: sum of iterates = acc + scale_sum * V - ref (ref collects scale_sum * each change of V)
        self.scale_sum = 0.0
        self.iterates = 0
        self.n_entries = 0
        self.version = 0  # counts changes of V, so readers (the exact oracle) know when to re-read
        self._snapshot = None  # V class-major at _snapshot_version (`_class_rows`)
        self._snapshot_version = -1
        self.on_fold: list[Callable[[float], None]] = []  # told the factor V was multiplied by
        self.row_head = np.full(self.n_classes, -1, np.int64)
        self.row_len = np.zeros(self.n_classes, np.int64)
        self._alloc_entries(max(16, capacity))
        self._alloc_table(max(16, capacity))

    @classmethod
    def from_matrix(cls, W: sp.spmatrix) -> "ClassWeights":
        """A store holding W (C x D), e.g. to resume from or to test against."""
        coo = sp.coo_matrix(W)
        coo.sum_duplicates()
        store = cls(coo.shape[0], coo.shape[1], capacity=max(16, coo.nnz))
        n = coo.nnz
        store.ent_class[:n], store.ent_feat[:n], store.val[:n] = coo.row, coo.col, coo.data
        store.n_entries = n
        ws.link_rows(store.ent_class, n, store.next_entry, store.row_head, store.row_len)
        store._alloc_table(max(16, n))
        store.sumsq = float(np.dot(coo.data, coo.data))
        return store

    def _alloc_entries(self, size: int) -> None:
        old = self.n_entries
        pools = {"ent_class": np.int64, "ent_feat": np.int64, "next_entry": np.int64, "val": np.float64,
                 "ref": np.float64, "acc": np.float64}
        for name, dtype in pools.items():
            new = np.zeros(size, dtype)
            if old:
                new[:old] = getattr(self, name)[:old]
            setattr(self, name, new)

    def _alloc_table(self, entries: int) -> None:
        bits = max(4, int(np.ceil(np.log2(2 * entries))))
        self.shift = 64 - bits
        self.table_keys = np.full(1 << bits, ws.EMPTY, np.int64)
        self.table_entries = np.empty(1 << bits, np.int64)
        ws.rehash(self.ent_class, self.ent_feat, self.n_entries, self.n_features, self.table_keys,
                  self.table_entries, self.shift)

    def reserve(self, extra: int) -> None:
        """Make room for `extra` more entries (the pools must not grow inside a kernel)."""
        need = self.n_entries + int(extra)
        if need > self.val.shape[0]:
            self._alloc_entries(max(need, 2 * self.val.shape[0]))
        if 2 * need > self.table_keys.shape[0]:
            self._alloc_table(max(need, self.table_keys.shape[0]))

    @property
    def _table(self) -> tuple:
        return self.n_features, self.table_keys, self.table_entries, self.shift

    # -- updates ------------------------------------------------------------------------------

    def apply(self, rows: np.ndarray, indptr, indices, data, y: np.ndarray, r: np.ndarray, step: float) -> None:
        """W[y_i] += step x_i and W[r_i] -= step x_i (true units) for the instances `rows`."""
        if rows.size == 0:
            return
        self.reserve(2 * int((indptr[rows + 1] - indptr[rows]).sum()))
        v_step = step / self.scale
        self.n_entries, dsq = apply_violations(
            rows, indptr, indices, data, y, r, v_step, self.scale_sum, *self._table, self.ent_class, self.ent_feat,
            self.val, self.ref, self.next_entry, self.row_head, self.row_len, self.n_entries)
        self.sumsq += dsq
        self.version += 1

    def multiply(self, factor: float) -> None:
        """W <- factor * W in O(1); folds the scale into V when it gets small."""
        self.scale *= factor
        if self.scale < FOLD_BELOW:
            self.fold()

    def fold(self) -> None:
        """V <- scale * V and scale <- 1 (one O(nnz) pass), keeping the running sum of iterates;
        the `on_fold` listeners (oracle indices built on V) are told the factor."""
        n = self.n_entries
        factor = self.scale
        self.sumsq, _ = ws.fold_scale(self.val[:n], self.ref[:n], self.acc[:n], n, self.scale, self.scale_sum)
        self.scale_sum = 0.0
        self.scale = 1.0
        self.version += 1
        if factor != 1.0:
            for listener in self.on_fold:
                listener(factor)

    def end_iterate(self) -> None:
        """Count the current W as one iterate of the average."""
        self.scale_sum += self.scale
        self.iterates += 1

    def truncation_change(self, classes: np.ndarray, threshold: float) -> float:
        """How much soft-thresholding the rows of `classes` by `threshold` (true units) would lower
        ||W||_2 (MEMOIR's Theorem 3 assumes every truncation changes it by at most epsilon)."""
        before, after = ws.threshold_effect(classes.astype(np.int64), threshold / self.scale, self.row_head,
                                            self.next_entry, self.val)
        return self.scale * (np.sqrt(max(self.sumsq, 0.0)) - np.sqrt(max(self.sumsq - before + after, 0.0)))

    def soft_threshold(self, classes: np.ndarray, threshold: float) -> int:
        """Truncate the rows of `classes` (in true units); returns how many entries became zero."""
        if self.scale != 1.0:
            self.fold()
        zeroed, _ = ws.soft_threshold_rows(classes.astype(np.int64), threshold, self.row_head, self.next_entry,
                                           self.val, self.ref, self.scale_sum)
        self.version += 1
        self.sumsq = float(np.dot(self.val[:self.n_entries], self.val[:self.n_entries]))
        return int(zeroed)

    def compact(self, keep_average: bool = True) -> None:
        """Drop the entries truncation zeroed, so memory follows nnz(W); entries the running average
        still needs stay unless keep_average is false (the average is then given up)."""
        self.fold()
        n = self.n_entries
        keep = self.val[:n] != 0.0
        if keep_average:
            keep |= self.acc[:n] != 0.0
        else:
            self.acc[:n] = 0.0
            self.iterates = 0
        pools = {k: getattr(self, k)[:n][keep] for k in ("ent_class", "ent_feat", "val", "acc")}
        m = int(keep.sum())
        self.n_entries = 0
        self._alloc_entries(max(16, m))
        for k, v in pools.items():
            getattr(self, k)[:m] = v
        self.n_entries = m
        ws.link_rows(self.ent_class, m, self.next_entry, self.row_head, self.row_len)
        self._alloc_table(max(16, m))

    # -- reads --------------------------------------------------------------------------------

    @property
    def norm(self) -> float:
        """||W||_F."""
        return self.scale * float(np.sqrt(max(self.sumsq, 0.0)))

    @property
    def nnz(self) -> int:
        return int(np.count_nonzero(self.val[:self.n_entries]))

    @property
    def memory_bytes(self) -> int:
        """Bytes of the pools, the hash table, the per-class heads and the re-ranking snapshot."""
        pools = sum(getattr(self, k).nbytes for k in ("ent_class", "ent_feat", "next_entry", "val", "ref", "acc"))
        snapshot = sum(a.nbytes for a in self._snapshot) if self._snapshot is not None else 0
        return int(pools + self.table_keys.nbytes + self.table_entries.nbytes + self.row_head.nbytes
                   + self.row_len.nbytes + snapshot)

    def l1_norm(self) -> float:
        return self.scale * float(np.abs(self.val[:self.n_entries]).sum())

    def pair_scores(self, indptr, indices, data, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(W[a_i] . x_i, W[b_i] . x_i) in true units."""
        sa, sb = ws.pair_scores(indptr, indices, data, a, b, *self._table, self.val)
        return self.scale * sa, self.scale * sb

    def rows(self, classes: np.ndarray) -> sp.csr_matrix:
        """Rows of V (W up to the positive scale) of `classes`, zeros dropped."""
        classes = np.asarray(classes, np.int64)
        ptr, idx, val = ws.gather_rows(classes, self.row_head, self.row_len, self.next_entry, self.ent_feat,
                                       self.val, True)
        return sp.csr_matrix((val, idx, ptr), shape=(classes.size, self.n_features))

    def best_among(self, cand_indptr, candidates, indptr, indices, data, exclude) -> tuple[np.ndarray, np.ndarray]:
        """Exact re-ranking of candidates by V . x (see oracles.base.ClassVectors), over the
        class-major snapshot of the current version."""
        threads = numba.get_num_threads()
        return ws.best_among(np.asarray(cand_indptr, np.int64), np.asarray(candidates, np.int64), indptr, indices,
                             data, np.asarray(exclude, np.int64), *self._class_rows(), self.n_features, 4 * threads)

    def _class_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """V as class-major CSR arrays, rebuilt when V changed since the last call (`version`)."""
        if self._snapshot_version != self.version:
            self._snapshot = ws.group_entries(self.ent_class, self.ent_feat, self.val, self.n_entries, self.n_classes,
                                              numba.get_num_threads())
            self._snapshot_version = self.version
        return self._snapshot

    def columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """V feature-major (features x classes CSR arrays), for exact search."""
        return ws.group_entries(self.ent_feat, self.ent_class, self.val, self.n_entries, self.n_features,
                                numba.get_num_threads())

    def matrix(self) -> sp.csr_matrix:
        """W itself, C x D CSR."""
        W = self.rows(np.arange(self.n_classes))
        W.data *= self.scale
        return W

    def average(self) -> sp.csr_matrix:
        """The average of the iterates counted by `end_iterate` (W itself before the first)."""
        if self.iterates == 0:
            return self.matrix()
        n = self.n_entries
        total = self.acc[:n] + self.scale_sum * self.val[:n] - self.ref[:n]
        A = sp.csr_matrix((total / self.iterates, (self.ent_class[:n], self.ent_feat[:n])),
                          shape=(self.n_classes, self.n_features))
        A.eliminate_zeros()
        return A
