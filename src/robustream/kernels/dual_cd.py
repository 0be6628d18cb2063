"""Dual coordinate descent for the linear L1-loss (hinge) SVM with a per-sample box.

Algorithm 1 of Hsieh, Chang, Lin, Keerthi & Sundararajan (2008), "A dual
coordinate descent method for large-scale linear SVM" -- the solver behind
liblinear's ``-s 3`` -- generalised from the box ``[0, C]`` to an arbitrary
per-sample box ``[lower_i, upper_i]``.  It solves

    min_a  1/2 a^T Q a - sum_i a_i     s.t.  lower_i <= a_i <= upper_i,
    Q_ij = y_i y_j (x_i . x_j + bias_scale^2),

and keeps the primal vector ``w = sum_i a_i y_i x_i`` (plus the weight of the
constant feature, ``w_b = bias_scale * sum_i a_i y_i``) up to date.  The
returned intercept is ``b = bias_scale * w_b``, so the decision function is
``f(x) = w . x + b`` and the primal problem is

    min_{w, b}  1/2 (||w||^2 + (b / bias_scale)^2) + sum_i lin_i(y_i f(x_i))

(the intercept is regularised, exactly as liblinear / scikit-learn's
``LinearSVC`` do with ``intercept_scaling=bias_scale``).  With ``lower = 0``,
``upper = C`` the per-sample term is ``C * max(0, 1 - z)``: the standard hinge
SVM.  With ``lower = -beta``, ``upper = C - beta`` it is
``C * max(0, 1 - z) + beta * z``: the convex CCCP sub-problem of the ramp-loss
SVM (see :mod:`robustream.ramp`).  ``bias_scale <= 0`` means "no intercept".

Each epoch visits the active coordinates in an order drawn by a Fisher--Yates
shuffle driven by a splitmix64 generator seeded with ``seed``; the kernel is
therefore fully deterministic for a given seed.  Shrinking follows liblinear
(coordinates at a bound whose gradient points out of the box by more than the
previous epoch's extreme projected gradient are removed; when the active set
has converged all coordinates are re-activated and re-checked).  The solver
stops when the largest absolute projected gradient over an epoch
(``max_i |PG_i|``) is below ``tol`` on the full set, or after ``max_epochs``
epochs.

Entry points (all arrays in, arrays out, ``@njit(cache=True, nogil=True)``):

* :func:`dual_cd_dense` -- rows of a float64 2-D (C-contiguous) array,
* :func:`dual_cd_csr` -- rows of a CSR matrix given as ``data, indices, indptr``,

each returning ``(alpha, w, b, n_epochs)``.  :func:`dual_cd_dense_reference` and
:func:`dual_cd_csr_reference` are step-for-step NumPy transcriptions of the
same algorithm (same generator, same visiting order, same shrinking) used by
the tests; they are slow and only meant for small problems.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = [
    "dual_cd_dense",
    "dual_cd_csr",
    "dual_cd_dense_reference",
    "dual_cd_csr_reference",
]

# splitmix64 constants (Steele, Lea & Flood 2014).
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)

# coordinates whose projected gradient is below this are not updated (liblinear)
_PG_SKIP = 1e-12


# --------------------------------------------------------------------------- numba


@njit(cache=True, nogil=True)
def _splitmix64(state):
    state = state + _GOLDEN
    z = state
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    z = z ^ (z >> _S31)
    return state, z


@njit(cache=True, nogil=True)
def _row_dot(Xd, data, indices, indptr, sparse, i, w):
    acc = 0.0
    if sparse:
        for p in range(indptr[i], indptr[i + 1]):
            acc += data[p] * w[indices[p]]
    else:
        for j in range(Xd.shape[1]):
            acc += Xd[i, j] * w[j]
    return acc


@njit(cache=True, nogil=True)
def _row_axpy(Xd, data, indices, indptr, sparse, i, coef, w):
    if sparse:
        for p in range(indptr[i], indptr[i + 1]):
            w[indices[p]] += coef * data[p]
    else:
        for j in range(Xd.shape[1]):
            w[j] += coef * Xd[i, j]


@njit(cache=True, nogil=True)
def _row_sqnorm(Xd, data, indices, indptr, sparse, i):
    acc = 0.0
    if sparse:
        for p in range(indptr[i], indptr[i + 1]):
            acc += data[p] * data[p]
    else:
        for j in range(Xd.shape[1]):
            acc += Xd[i, j] * Xd[i, j]
    return acc


@njit(cache=True, nogil=True)
def _dual_cd_core(
    Xd, data, indices, indptr, sparse, n_features,
    y, lower, upper, alpha0, bias_scale, tol, max_epochs, seed, shrinking,
):
    n = y.shape[0]
    B = bias_scale if bias_scale > 0.0 else 0.0
    B2 = B * B

    alpha = np.empty(n, dtype=np.float64)
    w = np.zeros(n_features, dtype=np.float64)
    wb = 0.0
    qd = np.empty(n, dtype=np.float64)
    for i in range(n):
        a = alpha0[i]
        if a < lower[i]:
            a = lower[i]
        if a > upper[i]:
            a = upper[i]
        alpha[i] = a
        qd[i] = _row_sqnorm(Xd, data, indices, indptr, sparse, i) + B2
        if a != 0.0:
            coef = a * y[i]
            _row_axpy(Xd, data, indices, indptr, sparse, i, coef, w)
            wb += coef * B

    index = np.arange(n)
    active = n
    pgmax_old = np.inf
    pgmin_old = -np.inf
    state = np.uint64(seed)
    epoch = 0
    while epoch < max_epochs:
        # Fisher--Yates shuffle of the active coordinates
        for k in range(active):
            state, r = _splitmix64(state)
            j = k + np.int64(r % np.uint64(active - k))
            tmp = index[k]
            index[k] = index[j]
            index[j] = tmp

        pgmax_new = -np.inf
        pgmin_new = np.inf
        k = 0
        while k < active:
            i = index[k]
            yi = y[i]
            G = yi * (_row_dot(Xd, data, indices, indptr, sparse, i, w) + wb * B) - 1.0
            lo = lower[i]
            hi = upper[i]
            ai = alpha[i]
            PG = 0.0
            if hi <= lo:
                PG = 0.0
            elif ai <= lo:
                if shrinking and G > pgmax_old:
                    active -= 1
                    index[k] = index[active]
                    index[active] = i
                    continue
                elif G < 0.0:
                    PG = G
            elif ai >= hi:
                if shrinking and G < pgmin_old:
                    active -= 1
                    index[k] = index[active]
                    index[active] = i
                    continue
                elif G > 0.0:
                    PG = G
            else:
                PG = G

            if PG > pgmax_new:
                pgmax_new = PG
            if PG < pgmin_new:
                pgmin_new = PG

            if abs(PG) > _PG_SKIP:
                if qd[i] > 0.0:
                    anew = ai - G / qd[i]
                    if anew < lo:
                        anew = lo
                    if anew > hi:
                        anew = hi
                elif G < 0.0:
                    anew = hi
                else:
                    anew = lo
                coef = (anew - ai) * yi
                alpha[i] = anew
                _row_axpy(Xd, data, indices, indptr, sparse, i, coef, w)
                wb += coef * B
            k += 1

        epoch += 1
        viol = pgmax_new
        if -pgmin_new > viol:
            viol = -pgmin_new
        if viol < tol:
            if active == n:
                break
            # converged on the active set: re-activate everything and re-check
            active = n
            pgmax_old = np.inf
            pgmin_old = -np.inf
            continue
        pgmax_old = pgmax_new
        pgmin_old = pgmin_new
        if pgmax_old <= 0.0:
            pgmax_old = np.inf
        if pgmin_old >= 0.0:
            pgmin_old = -np.inf

    return alpha, w, wb * B, epoch


@njit(cache=True, nogil=True)
def dual_cd_dense(X, y, lower, upper, alpha0, bias_scale, tol, max_epochs, seed, shrinking):
    """Box-constrained dual CD on the rows of a dense float64 2-D array.

    Parameters
    ----------
    X : (n, d) float64, C-contiguous
    y : (n,) float64 in {-1, +1}
    lower, upper : (n,) float64 per-sample box (``lower <= upper``)
    alpha0 : (n,) float64 warm start (clipped into the box)
    bias_scale : float, value of the constant feature (``<= 0``: no intercept)
    tol : float, stop when ``max_i |PG_i| < tol`` over a full epoch
    max_epochs : int
    seed : int >= 0, seeds the per-epoch shuffles
    shrinking : bool

    Returns
    -------
    alpha : (n,) float64, w : (d,) float64, b : float, n_epochs : int
    """
    empty_f = np.empty(0, dtype=np.float64)
    empty_i = np.empty(0, dtype=np.int64)
    return _dual_cd_core(
        X, empty_f, empty_i, empty_i, False, X.shape[1],
        y, lower, upper, alpha0, bias_scale, tol, max_epochs, seed, shrinking,
    )


@njit(cache=True, nogil=True)
def dual_cd_csr(data, indices, indptr, n_features, y, lower, upper, alpha0,
                bias_scale, tol, max_epochs, seed, shrinking):
    """Box-constrained dual CD on the rows of a CSR matrix ``(data, indices, indptr)``.

    Same parameters and return value as :func:`dual_cd_dense`, with the matrix
    given by its CSR arrays and its number of columns ``n_features``.
    """
    dummy = np.empty((0, 0), dtype=np.float64)
    return _dual_cd_core(
        dummy, data, indices, indptr, True, n_features,
        y, lower, upper, alpha0, bias_scale, tol, max_epochs, seed, shrinking,
    )


# ------------------------------------------------------------- NumPy reference

_MASK64 = (1 << 64) - 1


def _splitmix64_ref(state: int) -> tuple[int, int]:
    state = (state + 0x9E3779B97F4A7C15) & _MASK64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    z = z ^ (z >> 31)
    return state, z


def _dual_cd_reference(rows, n_features, y, lower, upper, alpha0, bias_scale, tol,
                       max_epochs, seed, shrinking):
    """``rows[i]`` is ``(cols, vals)`` (``cols`` None for a dense row)."""
    y = np.asarray(y, dtype=np.float64)
    lower = np.asarray(lower, dtype=np.float64)
    upper = np.asarray(upper, dtype=np.float64)
    n = y.shape[0]
    B = float(bias_scale) if bias_scale > 0.0 else 0.0

    def dot(i, w):
        cols, vals = rows[i]
        return float(vals @ (w if cols is None else w[cols]))

    def axpy(i, coef, w):
        cols, vals = rows[i]
        if cols is None:
            w += coef * vals
        else:
            np.add.at(w, cols, coef * vals)

    alpha = np.minimum(np.maximum(np.asarray(alpha0, dtype=np.float64), lower), upper)
    w = np.zeros(n_features)
    wb = 0.0
    qd = np.array([float(rows[i][1] @ rows[i][1]) + B * B for i in range(n)])
    for i in range(n):
        if alpha[i] != 0.0:
            coef = alpha[i] * y[i]
            axpy(i, coef, w)
            wb += coef * B

    index = np.arange(n)
    active = n
    pgmax_old, pgmin_old = np.inf, -np.inf
    state = int(seed) & _MASK64
    epoch = 0
    while epoch < max_epochs:
        for k in range(active):
            state, r = _splitmix64_ref(state)
            j = k + r % (active - k)
            index[k], index[j] = index[j], index[k]

        pgmax_new, pgmin_new = -np.inf, np.inf
        k = 0
        while k < active:
            i = index[k]
            yi = y[i]
            G = yi * (dot(i, w) + wb * B) - 1.0
            lo, hi, ai = lower[i], upper[i], alpha[i]
            PG = 0.0
            if hi <= lo:
                PG = 0.0
            elif ai <= lo:
                if shrinking and G > pgmax_old:
                    active -= 1
                    index[k], index[active] = index[active], i
                    continue
                elif G < 0.0:
                    PG = G
            elif ai >= hi:
                if shrinking and G < pgmin_old:
                    active -= 1
                    index[k], index[active] = index[active], i
                    continue
                elif G > 0.0:
                    PG = G
            else:
                PG = G
            pgmax_new = max(pgmax_new, PG)
            pgmin_new = min(pgmin_new, PG)
            if abs(PG) > _PG_SKIP:
                if qd[i] > 0.0:
                    anew = min(max(ai - G / qd[i], lo), hi)
                else:
                    anew = hi if G < 0.0 else lo
                coef = (anew - ai) * yi
                alpha[i] = anew
                axpy(i, coef, w)
                wb += coef * B
            k += 1

        epoch += 1
        if max(pgmax_new, -pgmin_new) < tol:
            if active == n:
                break
            active = n
            pgmax_old, pgmin_old = np.inf, -np.inf
            continue
        pgmax_old, pgmin_old = pgmax_new, pgmin_new
        if pgmax_old <= 0.0:
            pgmax_old = np.inf
        if pgmin_old >= 0.0:
            pgmin_old = -np.inf

    return alpha, w, wb * B, epoch


def dual_cd_dense_reference(X, y, lower, upper, alpha0, bias_scale, tol, max_epochs,
                            seed, shrinking):
    """Pure-NumPy twin of :func:`dual_cd_dense` (same arguments, same result)."""
    X = np.asarray(X, dtype=np.float64)
    rows = [(None, X[i]) for i in range(X.shape[0])]
    return _dual_cd_reference(rows, X.shape[1], y, lower, upper, alpha0, bias_scale,
                              tol, max_epochs, seed, shrinking)


def dual_cd_csr_reference(data, indices, indptr, n_features, y, lower, upper, alpha0,
                          bias_scale, tol, max_epochs, seed, shrinking):
    """Pure-NumPy twin of :func:`dual_cd_csr` (same arguments, same result)."""
    data = np.asarray(data, dtype=np.float64)
    indices = np.asarray(indices)
    indptr = np.asarray(indptr)
    rows = [
        (indices[indptr[i]:indptr[i + 1]], data[indptr[i]:indptr[i + 1]])
        for i in range(len(indptr) - 1)
    ]
    return _dual_cd_reference(rows, int(n_features), y, lower, upper, alpha0, bias_scale,
                              tol, max_epochs, seed, shrinking)
