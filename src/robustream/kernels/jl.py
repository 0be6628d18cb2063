"""Johnson-Lindenstrauss transforms on dense and CSR rows (arrays only).

* :func:`csr_times_dense` - sparse rows times a dense projection (gaussian / achlioptas).
* :func:`fwht_rows` - in-place fast Walsh-Hadamard transform of each row (the SRHT's fast part).
* :func:`srht_rows` / :func:`srht_csr_rows` - subsampled randomized Hadamard transform.
* :func:`hashed_csr_rows` - sparse JL where feature ``j`` adds ``signs[j, r] * scale`` to
  coordinate ``positions[j, r]`` of the sketch (the hashed sketch: positions and signs come from a
  stable hash of the feature key, computed by the caller).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def csr_times_dense(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, R: np.ndarray) -> np.ndarray:
    """``X @ R`` for CSR ``X`` given by its arrays; O(nnz * k)."""
    n = indptr.shape[0] - 1
    k = R.shape[1]
    out = np.zeros((n, k))
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            v = data[p]
            j = indices[p]
            for c in range(k):
                out[i, c] += v * R[j, c]
    return out


def csr_times_dense_reference(data, indices, indptr, R, n_features):
    """NumPy reference for :func:`csr_times_dense` (densifies)."""
    n = indptr.shape[0] - 1
    X = np.zeros((n, n_features))
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            X[i, indices[p]] += data[p]
    return X @ R


@njit(cache=True, nogil=True)
def fwht_rows(Y: np.ndarray) -> None:
    """Unnormalised fast Walsh-Hadamard transform of every row, in place (row length 2^m)."""
    n, D = Y.shape
    for i in range(n):
        h = 1
        while h < D:
            for start in range(0, D, 2 * h):
                for j in range(start, start + h):
                    a = Y[i, j]
                    b = Y[i, j + h]
                    Y[i, j] = a + b
                    Y[i, j + h] = a - b
            h *= 2


def hadamard_reference(D: int) -> np.ndarray:
    """Sylvester Hadamard matrix of order D (power of two), for tests."""
    H = np.ones((1, 1))
    while H.shape[0] < D:
        H = np.block([[H, H], [H, -H]])
    return H


@njit(cache=True, nogil=True)
def srht_rows(X: np.ndarray, signs: np.ndarray, sample: np.ndarray) -> np.ndarray:
    """SRHT of dense rows: ``(H diag(signs) x_padded)[sample] / sqrt(k)``; ``signs`` has length 2^m."""
    n, d = X.shape
    D = signs.shape[0]
    k = sample.shape[0]
    Y = np.zeros((n, D))
    for i in range(n):
        for j in range(d):
            Y[i, j] = X[i, j] * signs[j]
    fwht_rows(Y)
    out = np.empty((n, k))
    scale = 1.0 / np.sqrt(k)
    for i in range(n):
        for c in range(k):
            out[i, c] = Y[i, sample[c]] * scale
    return out


@njit(cache=True, nogil=True)
def srht_csr_rows(data, indices, indptr, signs: np.ndarray, sample: np.ndarray) -> np.ndarray:
    """SRHT of CSR rows (each row is densified to length 2^m one at a time)."""
    n = indptr.shape[0] - 1
    D = signs.shape[0]
    k = sample.shape[0]
    row = np.zeros((1, D))
    out = np.empty((n, k))
    scale = 1.0 / np.sqrt(k)
    for i in range(n):
        row[0, :] = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            row[0, indices[p]] += data[p] * signs[indices[p]]
        fwht_rows(row)
        for c in range(k):
            out[i, c] = row[0, sample[c]] * scale
    return out


def srht_reference(X: np.ndarray, signs: np.ndarray, sample: np.ndarray) -> np.ndarray:
    """NumPy reference for :func:`srht_rows` (explicit Hadamard matrix)."""
    D = signs.shape[0]
    Xp = np.zeros((X.shape[0], D))
    Xp[:, : X.shape[1]] = X
    return (Xp * signs) @ hadamard_reference(D).T[:, sample] / np.sqrt(sample.shape[0])


@njit(cache=True, nogil=True)
def hashed_csr_rows(data, indices, indptr, positions: np.ndarray, signs: np.ndarray, k: int, scale: float):
    """Hashed sparse JL of CSR rows: feature j spreads ``signs[j] * scale`` over ``positions[j]``."""
    n = indptr.shape[0] - 1
    s = positions.shape[1]
    out = np.zeros((n, k))
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            v = data[p] * scale
            for r in range(s):
                out[i, positions[j, r]] += v * signs[j, r]
    return out


def hashed_reference(X: np.ndarray, positions: np.ndarray, signs: np.ndarray, k: int, scale: float) -> np.ndarray:
    """NumPy reference for :func:`hashed_csr_rows`: the explicit d x k projection."""
    d = X.shape[1]
    R = np.zeros((d, k))
    for j in range(d):
        for r in range(positions.shape[1]):
            R[j, positions[j, r]] += signs[j, r] * scale
    return X @ R
