"""Keeping the k best (index, value) pairs of a stream, for prediction and PPDSparse's search."""
from numba import njit


@njit(cache=True, nogil=True)
def insert_topk(index, value, k, top_index, top_value, count):
    """Insert (index, value) into the descending top-k arrays holding `count` entries; returns the
    new count. Equal values keep the earlier entry first, so scanning indices in increasing order
    breaks ties towards the smaller index."""
    if count == k and value <= top_value[k - 1]:
        return count
    pos = count if count < k else k - 1
    while pos > 0 and top_value[pos - 1] < value:
        top_value[pos] = top_value[pos - 1]
        top_index[pos] = top_index[pos - 1]
        pos -= 1
    top_value[pos] = value
    top_index[pos] = index
    return count + 1 if count < k else count
