"""Exactly rounded dot products: what ``math.fsum`` gives on the rounded products, at array speed.

A learner's decision ``w . x`` is summed exactly (then rounded once), so it does not depend on the
order the features arrive in. ``math.fsum`` over a Python ``map`` costs about 20 µs for 100
features; :func:`exact_dot` runs the same algorithm (Shewchuk's non-overlapping partials with the
final half-even correction, as CPython's ``math.fsum``) on two aligned arrays. The exactly rounded
sum is unique, so the result is the same bits as ``math.fsum`` whatever the order of the terms.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def exact_dot(weights: np.ndarray, values: np.ndarray) -> float:
    """The exactly rounded ``sum(weights * values)`` of the rounded products (as ``math.fsum``).

    NaN when a product is not finite or a partial sum overflows (where ``math.fsum`` returns a
    special value or raises): the caller then takes its exact path for those cases.

    >>> exact_dot(np.array([1.0, 1e100, 1.0, -1e100]), np.array([1.0, 1.0, 1.0, 1.0]))
    2.0
    """
    n = values.shape[0]
    partials = np.empty(n + 1)
    m = 0  # partials in use: non-overlapping, increasing in magnitude
    for k in range(n):
        x = weights[k] * values[k]
        if not math.isfinite(x):
            return np.nan
        i = 0
        for j in range(m):
            y = partials[j]
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo != 0.0:
                partials[i] = lo
                i += 1
            x = hi
        m = i
        if x != 0.0:
            if not math.isfinite(x):  # a finite product overflowed a partial sum
                return np.nan
            partials[m] = x
            m += 1
    hi = 0.0
    lo = 0.0
    if m > 0:
        m -= 1
        hi = partials[m]
        while m > 0:  # add from the top until the sum becomes inexact
            x = hi
            m -= 1
            y = partials[m]
            hi = x + y
            lo = y - (hi - x)
            if lo != 0.0:
                break
        # half-even rounding across the partials left (CPython's correction)
        if m > 0 and ((lo < 0.0 and partials[m - 1] < 0.0) or (lo > 0.0 and partials[m - 1] > 0.0)):
            y = lo * 2.0
            x = hi + y
            if y == x - hi:
                hi = x
    return hi


def exact_dot_reference(weights: np.ndarray, values: np.ndarray) -> float:
    """NumPy reference of :func:`exact_dot`: ``math.fsum`` of the products, NaN where it is not finite."""
    products = weights * values
    if not np.isfinite(products).all():
        return math.nan
    try:
        return math.fsum(products.tolist())
    except OverflowError:
        return math.nan


@njit(cache=True, nogil=True)
def all_finite_nonzero(values: np.ndarray) -> bool:
    """Whether every value is finite and non-zero (a dense row's test before it is stored as one array).

    >>> all_finite_nonzero(np.array([1.0, -2.0])), all_finite_nonzero(np.array([1.0, 0.0]))
    (True, False)
    """
    for k in range(values.shape[0]):
        v = values[k]
        if v == 0.0 or not math.isfinite(v):
            return False
    return True


def all_finite_nonzero_reference(values: np.ndarray) -> bool:
    """NumPy reference of :func:`all_finite_nonzero`."""
    return bool(np.isfinite(values).all() and values.all())
