"""Linear-time order statistics (quickselect) used by the RGD-tree.

The tree needs, for every candidate direction, the k-th smallest projection of one class and the
k-th largest of the other (the trimmed margin after discarding the allowed outliers), and the
indices of the k smallest projections (the candidate sets). Sorting would cost O(n log n) per
direction; selection is O(n) expected.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _select_inplace(buf: np.ndarray, k: int) -> float:
    """Rearrange ``buf`` so that ``buf[k]`` is its k-th smallest value (0-based) and return it."""
    lo = 0
    hi = buf.shape[0] - 1
    while hi > lo:
        mid = (lo + hi) // 2
        # median of three as pivot: deterministic and safe on sorted input
        a, b, c = buf[lo], buf[mid], buf[hi]
        if a < b:
            if b < c:
                pivot = b
            elif a < c:
                pivot = c
            else:
                pivot = a
        else:
            if a < c:
                pivot = a
            elif b < c:
                pivot = c
            else:
                pivot = b
        i = lo
        j = hi
        while i <= j:
            while buf[i] < pivot:
                i += 1
            while buf[j] > pivot:
                j -= 1
            if i <= j:
                tmp = buf[i]
                buf[i] = buf[j]
                buf[j] = tmp
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            return buf[k]
    return buf[k]


@njit(cache=True, nogil=True)
def kth_smallest(values: np.ndarray, k: int) -> float:
    """The k-th smallest entry (0-based) of a 1-D array, without modifying it."""
    buf = values.copy()
    return _select_inplace(buf, k)


def kth_smallest_reference(values: np.ndarray, k: int) -> float:
    """NumPy reference for :func:`kth_smallest`."""
    return float(np.partition(values, k)[k])


@njit(cache=True, nogil=True)
def trimmed_widths(
    proj_pos: np.ndarray, proj_neg: np.ndarray, n_discard_pos: int, n_discard_neg: int, norms: np.ndarray
) -> np.ndarray:
    """Margin width of each direction after discarding the allowed outliers of each class.

    Row ``j`` of ``proj_pos`` (``proj_neg``) holds the projections of the positive (negative) points
    on direction ``j`` (unnormalised); the width is ``(the (n_discard_pos)-th smallest positive
    projection - the (n_discard_neg)-th largest negative projection) / norms[j]``. It is negative
    when the trimmed classes overlap along that direction.
    """
    m = proj_pos.shape[0]
    n_pos = proj_pos.shape[1]
    n_neg = proj_neg.shape[1]
    out = np.empty(m)
    buf_pos = np.empty(n_pos)
    buf_neg = np.empty(n_neg)
    for j in range(m):
        for i in range(n_pos):
            buf_pos[i] = proj_pos[j, i]
        for i in range(n_neg):
            buf_neg[i] = -proj_neg[j, i]
        low_pos = _select_inplace(buf_pos, n_discard_pos)
        high_neg = -_select_inplace(buf_neg, n_discard_neg)
        if norms[j] > 0.0:
            out[j] = (low_pos - high_neg) / norms[j]
        else:
            out[j] = -np.inf
    return out


def trimmed_widths_reference(
    proj_pos: np.ndarray, proj_neg: np.ndarray, n_discard_pos: int, n_discard_neg: int, norms: np.ndarray
) -> np.ndarray:
    """NumPy reference for :func:`trimmed_widths`."""
    low_pos = np.partition(proj_pos, n_discard_pos, axis=1)[:, n_discard_pos]
    high_neg = -np.partition(-proj_neg, n_discard_neg, axis=1)[:, n_discard_neg]
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (low_pos - high_neg) / norms
    return np.where(norms > 0.0, out, -np.inf)


@njit(cache=True, nogil=True)
def smallest_k_indices(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k smallest entries (in index order; ties at the threshold by lowest index)."""
    n = values.shape[0]
    if k >= n:
        return np.arange(n)
    threshold = kth_smallest(values, k - 1)
    out = np.empty(k, dtype=np.int64)
    count = 0
    for i in range(n):  # strictly smaller first, then ties, so exactly k come out
        if values[i] < threshold:
            out[count] = i
            count += 1
    for i in range(n):
        if count >= k:
            break
        if values[i] == threshold:
            out[count] = i
            count += 1
    return np.sort(out)


def smallest_k_indices_reference(values: np.ndarray, k: int) -> np.ndarray:
    """NumPy reference for :func:`smallest_k_indices` (same tie rule)."""
    n = values.shape[0]
    if k >= n:
        return np.arange(n)
    order = np.lexsort((np.arange(n), values))  # stable: ties by lowest index
    threshold = values[order[k - 1]]
    strict = np.flatnonzero(values < threshold)
    ties = np.flatnonzero(values == threshold)[: k - strict.size]
    return np.sort(np.concatenate([strict, ties]))
