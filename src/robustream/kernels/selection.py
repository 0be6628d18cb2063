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


# A sample of this many evenly spaced values brackets the k-th smallest before the one full pass
BAND_SAMPLE = 64


@njit(cache=True, nogil=True)
def _kth_smallest_signed(row: np.ndarray, k: int, sign: float, buf: np.ndarray, sample: np.ndarray) -> float:
    """The k-th smallest (0-based) of ``sign * row``; ``buf`` (>= len(row)) and ``sample`` are scratch.

    Floyd-Rivest-style: two order statistics of an evenly spaced sample bracket the answer with a
    margin of 2.5 standard deviations of its rank; one pass counts the values below the bracket and
    keeps those inside, and the answer is selected among them (about a quarter of the row instead
    of all of it). When the bracket misses (rare), the whole row is selected. Exact either way.
    """
    n = row.shape[0]
    s = min(sample.shape[0], n // 8)
    if s >= 16:
        stride = n // s
        for t in range(s):
            sample[t] = sign * row[t * stride]
        p = (k + 1.0) / n
        margin = 2.5 * np.sqrt(s * p * (1.0 - p)) + 1.0
        centre = (k + 0.5) * s / n
        i_lo = int(centre - margin)
        i_hi = int(centre + margin) + 1
        lo = -np.inf
        hi = np.inf
        if i_lo >= 0:
            lo = _select_inplace(sample[:s], i_lo)
        if i_hi < s:
            start = i_lo + 1 if i_lo >= 0 else 0  # after selecting i_lo, larger values sit above it
            hi = _select_inplace(sample[start:s], i_hi - start)
        below = 0
        m = 0
        for i in range(n):
            v = sign * row[i]
            below += v < lo
            buf[m] = v
            m += (v >= lo) & (v <= hi)
        if below <= k < below + m:
            return _select_inplace(buf[:m], k - below)
    for i in range(n):
        buf[i] = sign * row[i]
    return _select_inplace(buf[:n], k)


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
    out = np.empty(m)
    buf_pos = np.empty(proj_pos.shape[1])
    buf_neg = np.empty(proj_neg.shape[1])
    sample = np.empty(BAND_SAMPLE)
    for j in range(m):
        low_pos = _kth_smallest_signed(proj_pos[j], n_discard_pos, 1.0, buf_pos, sample)
        high_neg = -_kth_smallest_signed(proj_neg[j], n_discard_neg, -1.0, buf_neg, sample)
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
