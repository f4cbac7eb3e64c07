"""The update step of MEMOIR's multiclass SGD (Algorithms 1 and 2 of the paper).

Given each batch instance's margin class r_i, the violators (1 + w_r.x - w_y.x > 0) move
w_y += step x and w_r -= step x. Updates are applied one violator after the other, in batch
order, so the result does not depend on the thread count; the cost is O(nnz of the violators).
"""
from numba import njit

from .weightstore import add_scaled_row


@njit(cache=True, nogil=True)
def apply_violations(rows, indptr, indices, data, y, r, step, ref_coef, n_features, table_keys, table_entries,
                     shift, ent_class, ent_feat, val, ref, next_entry, row_head, row_len, n_entries):
    """For every batch row rows[k]: W[y] += step x, W[r] -= step x. Returns (n_entries, change of
    ||W||_F^2)."""
    dsq = 0.0
    for k in range(rows.shape[0]):
        i = rows[k]
        xi = indices[indptr[i]:indptr[i + 1]]
        xv = data[indptr[i]:indptr[i + 1]]
        n_entries, d = add_scaled_row(y[i], step, xi, xv, n_features, table_keys, table_entries, shift, ent_class,
                                      ent_feat, val, ref, ref_coef, next_entry, row_head, row_len, n_entries)
        dsq += d
        n_entries, d = add_scaled_row(r[i], -step, xi, xv, n_features, table_keys, table_entries, shift, ent_class,
                                      ent_feat, val, ref, ref_coef, next_entry, row_head, row_len, n_entries)
        dsq += d
    return n_entries, dsq

