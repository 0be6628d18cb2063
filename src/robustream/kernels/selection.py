"""Linear-time order statistics (histogram selection, quickselect as its fallback) used by the RGD-tree.

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


# Histogram selection: equal-width buckets between the least and largest value, keep the bucket that
# holds the wanted rank, repeat; the last few values are ranked by counting. Every step is a branch-free
# pass, where quickselect's comparisons with a pivot are unpredictable branches: on the tree's rows (a
# few hundred projections each) it took 5.3 us per direction, this 1.8 (benchmarks/sketch_speed.py, the
# mnist-0-vs-1 fit's 5,600 directions, both classes).
SELECT_BUCKETS = 64
# at most this many values are ranked by counting (m^2 branch-free comparisons)
SELECT_SMALL = 32
# after this many bucket rounds (values spread geometrically shed few per round) quickselect finishes
SELECT_ROUNDS = 6


@njit(cache=True, nogil=True)
def _rank_select(buf: np.ndarray, m: int, r: int) -> float:
    """The r-th smallest (0-based) of ``buf[:m]``: the value with r values before it, ties in order."""
    out = buf[0]
    for i in range(m):
        v = buf[i]
        rank = 0
        for j in range(m):
            w = buf[j]
            rank += (w < v) | ((w == v) & (j < i))
        if rank == r:
            out = v
    return out


@njit(cache=True, nogil=True)
def _histogram_select(buf: np.ndarray, m: int, r: int, counts: np.ndarray) -> float:
    """The r-th smallest (0-based) of ``buf[:m]``, reordering ``buf``; ``counts`` (``SELECT_BUCKETS``
    integers) is scratch. Exact: the bucket of a value is monotone in the value, so the values
    before the kept bucket are exactly the smaller ones. Each round drops the least or the largest
    value at least (they fall in the first and the last bucket)."""
    for _ in range(SELECT_ROUNDS):
        if m <= SELECT_SMALL:
            return _rank_select(buf, m, r)
        low = buf[0]
        high = buf[0]
        for i in range(1, m):
            low = min(low, buf[i])
            high = max(high, buf[i])
        if high == low:
            return low
        scale = SELECT_BUCKETS / (float(high) - float(low))  # Python floats: an overflow is inf, not a warning
        if not (0.0 < scale < np.inf):  # a range that overflows or is subnormal
            break
        counts[:] = 0
        for i in range(m):
            counts[min(int((buf[i] - low) * scale), SELECT_BUCKETS - 1)] += 1
        kept = 0
        before = 0
        while before + counts[kept] <= r:
            before += counts[kept]
            kept += 1
        n_kept = 0
        for i in range(m):
            v = buf[i]
            buf[n_kept] = v
            n_kept += min(int((v - low) * scale), SELECT_BUCKETS - 1) == kept
        m = n_kept
        r -= before
    if m <= SELECT_SMALL:
        return _rank_select(buf, m, r)
    return _select_inplace(buf[:m], r)


@njit(cache=True, nogil=True)
def kth_smallest(values: np.ndarray, k: int) -> float:
    """The k-th smallest entry (0-based) of a 1-D array, without modifying it; ValueError unless
    0 <= k < len(values) (the selection would read and write past its arrays)."""
    if not 0 <= k < values.shape[0]:
        raise ValueError("kth_smallest: k must be in [0, len(values))")
    return _histogram_select(values.copy(), values.shape[0], k, np.empty(SELECT_BUCKETS, dtype=np.int64))


def kth_smallest_reference(values: np.ndarray, k: int) -> float:
    """NumPy reference for :func:`kth_smallest`."""
    if not 0 <= k < values.shape[0]:
        raise ValueError("kth_smallest: k must be in [0, len(values))")
    return float(np.partition(values, k)[k])


@njit(cache=True, nogil=True)
def _kth_smallest_signed(row: np.ndarray, k: int, sign: float, buf: np.ndarray, counts: np.ndarray) -> float:
    """The k-th smallest (0-based) of ``sign * row``; ``buf`` (>= len(row)) and ``counts`` are scratch."""
    n = row.shape[0]
    for i in range(n):
        buf[i] = sign * row[i]
    return _histogram_select(buf, n, k, counts)


@njit(cache=True, nogil=True)
def trimmed_widths(
    proj_pos: np.ndarray, proj_neg: np.ndarray, n_discard_pos: int, n_discard_neg: int, norms: np.ndarray
) -> np.ndarray:
    """Margin width of each direction after discarding the allowed outliers of each class.

    Row ``j`` of ``proj_pos`` (``proj_neg``) holds the projections of the positive (negative) points
    on direction ``j`` (unnormalised); the width is ``(the (n_discard_pos)-th smallest positive
    projection - the (n_discard_neg)-th largest negative projection) / norms[j]``. It is negative
    when the trimmed classes overlap along that direction. ValueError unless each class keeps a point
    (``0 <= n_discard < its number of points``).
    """
    if not (0 <= n_discard_pos < proj_pos.shape[1] and 0 <= n_discard_neg < proj_neg.shape[1]):
        raise ValueError("trimmed_widths: each class must keep at least one point (0 <= n_discard < n)")
    m = proj_pos.shape[0]
    out = np.empty(m)
    buf_pos = np.empty(proj_pos.shape[1])
    buf_neg = np.empty(proj_neg.shape[1])
    counts = np.empty(SELECT_BUCKETS, dtype=np.int64)
    for j in range(m):
        low_pos = _kth_smallest_signed(proj_pos[j], n_discard_pos, 1.0, buf_pos, counts)
        high_neg = -_kth_smallest_signed(proj_neg[j], n_discard_neg, -1.0, buf_neg, counts)
        if norms[j] > 0.0:
            out[j] = (low_pos - high_neg) / norms[j]
        else:
            out[j] = -np.inf
    return out


def trimmed_widths_reference(
    proj_pos: np.ndarray, proj_neg: np.ndarray, n_discard_pos: int, n_discard_neg: int, norms: np.ndarray
) -> np.ndarray:
    """NumPy reference for :func:`trimmed_widths`."""
    if not (0 <= n_discard_pos < proj_pos.shape[1] and 0 <= n_discard_neg < proj_neg.shape[1]):
        raise ValueError("trimmed_widths: each class must keep at least one point (0 <= n_discard < n)")
    low_pos = np.partition(proj_pos, n_discard_pos, axis=1)[:, n_discard_pos]
    high_neg = -np.partition(-proj_neg, n_discard_neg, axis=1)[:, n_discard_neg]
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (low_pos - high_neg) / norms
    return np.where(norms > 0.0, out, -np.inf)


@njit(cache=True, nogil=True)
def smallest_k_indices(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k smallest entries (in index order; ties at the threshold by lowest index); all of
    them for k >= len(values), none for k <= 0."""
    n = values.shape[0]
    if k <= 0:
        return np.empty(0, dtype=np.int64)
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
    if k <= 0:
        return np.empty(0, dtype=np.int64)
    if k >= n:
        return np.arange(n)
    order = np.lexsort((np.arange(n), values))  # stable: ties by lowest index
    threshold = values[order[k - 1]]
    strict = np.flatnonzero(values < threshold)
    ties = np.flatnonzero(values == threshold)[: k - strict.size]
    return np.sort(np.concatenate([strict, ties]))
