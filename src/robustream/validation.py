"""Type checks of parameters, one definition each (the estimators, learners and solvers share them),
and the estimators' one warning for a solve stopped at its iteration cap.

>>> import numpy as np
>>> is_integer(3), is_integer(np.int64(3)), is_integer(True), is_integer(3.0)
(True, True, False, False)
>>> is_real(0.5), is_real(np.float32(0.5)), is_real(False)
(True, True, False)
>>> is_plain_real(3), is_plain_real(0.5), is_plain_real(np.float32(0.5)), is_plain_real(True)
(True, True, False, False)
"""

from __future__ import annotations

import math
import numbers
import sys
import warnings
from collections.abc import Mapping
from typing import Any, Hashable, Iterable

import numpy as np
from sklearn.exceptions import ConvergenceWarning

_BOOLS = (bool, np.bool_)
_FLOAT_ONLY = frozenset([float])


class FeatureValueError(ValueError):
    """A feature value a learner cannot take: not a number, not finite, or beyond the range its solve
    takes. Raised before the learner changes anything; the daemon dead-letters such a message as
    invalid input (outcome ``invalid``), not as a failure of its own."""


def is_integer(value: Any) -> bool:
    """An integer of any kind (Python's or NumPy's), not a bool (``True`` would pass as 1)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, _BOOLS)


def check_length(name: str, value: int) -> None:
    """ValueError naming ``name`` when ``value`` is beyond the largest length of a Python container
    (``sys.maxsize``): a buffer of that size would fail later with a bare OverflowError."""
    if value > sys.maxsize:
        raise ValueError(f"{name} must be at most {sys.maxsize}, got {value!r}")


def check_count(name: str, value: Any, low: int) -> None:
    """ValueError naming ``name`` unless ``value`` is an integer in ``[low, 2**62]`` (``low``: 0 or 1): numba kernels
    count in int64, and a larger loop cap (``max_epochs=10**30``) overflowed inside one.

    >>> check_count("max_epochs", 10**30, 1)
    Traceback (most recent call last):
    ValueError: max_epochs must be a positive integer at most 2**62; got 1000000000000000000000000000000
    """
    if not (is_integer(value) and low <= value <= 2**62):
        kind = "a positive" if low else "a non-negative"
        raise ValueError(f"{name} must be {kind} integer at most 2**62; got {value!r}")


def check_seed(seed: Any, allow_none: bool = False) -> None:
    """ValueError unless ``seed`` is an integer in ``[0, 2**63)`` (or None, with ``allow_none``): NumPy's
    own errors for -1 or 1.5 ("expected non-negative integer") do not say which argument they mean."""
    if (seed is None and allow_none) or (is_integer(seed) and 0 <= seed < 2**63):
        return
    raise ValueError(f"seed must be an integer in [0, 2**63){' or None' if allow_none else ''}; got {seed!r}")


def is_plain_real(value: Any) -> bool:
    """A Python ``int`` or ``float`` (NumPy's float64 is one), not a bool: a real number parameter stored as JSON."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_real(value: Any) -> bool:
    """A real number of any kind, not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, _BOOLS)


def finite_floats(values: Iterable) -> bool:
    """Whether every value is a finite plain ``float`` (not a subclass), in two C-speed passes: the
    fast path of every reader of feature values (learners, the daemon's decoder, its state writer).

    False also for finite floats whose sum is beyond floats (callers then check value by value).
    ``values`` must be re-iterable (a list, a tuple, ``dict.values()``).

    >>> finite_floats([1.0, -2.5]), finite_floats([1.0, float("nan")]), finite_floats([1, 2.0])
    (True, False, False)
    """
    return _FLOAT_ONLY.issuperset(map(type, values)) and math.isfinite(sum(values))


def check_features(x: Any) -> None:
    """TypeError unless ``x`` is a mapping of feature -> value (a dict, as River passes rows).

    >>> check_features([1.0, 2.0])
    Traceback (most recent call last):
    ...
    TypeError: x must be a dict of feature -> value, got list
    """
    if not isinstance(x, Mapping):
        hint = "; a pandas row becomes one with row.to_dict()" if hasattr(x, "to_dict") else ""
        raise TypeError(f"x must be a dict of feature -> value, got {type(x).__name__}{hint}")


def non_number_message(x: dict) -> str:
    """The message for a row with a feature value that is not a number (naming the first one)."""
    return _first_non_number(x) or "a feature value is not a number"


def _first_non_number(x: dict) -> str | None:
    for k, v in x.items():
        if not (isinstance(v, (numbers.Real, np.number, np.bool_)) or _real_scalar_array(v)):  # not text, bytes, Decimal
            return f"feature {k!r}: {v!r} is not a number"
    return None


def _real_scalar_array(v) -> bool:
    """A 0-d NumPy array of a real number (``np.array(1.5)``): read as its number, as NumPy reads it."""
    return isinstance(v, np.ndarray) and v.ndim == 0 and v.dtype.kind in "biuf"


_PLAIN_NUMBERS = frozenset([float, int, bool])


def _overflows(value) -> bool:
    try:
        float(value)
    except OverflowError:
        return True
    except (TypeError, ValueError):
        pass
    return False


def numeric_row(x: dict, keys: Iterable[Hashable], drop_zeros: bool = True) -> dict[Hashable, float]:
    """``{k: float(x[k])}`` for the ``keys`` (those whose value is non-zero with ``drop_zeros``);
    :class:`FeatureValueError` naming the first feature that is not a finite number (one NaN or inf
    would poison every later solve or score)."""
    if finite_floats(x.values()):  # what River's transformers output: no conversion, no value-by-value test
        row = {k: x[k] for k in keys}
        return {k: v for k, v in row.items() if v} if drop_zeros and not all(row.values()) else row
    if not _PLAIN_NUMBERS.issuperset(map(type, x.values())) and (problem := _first_non_number(x)):
        raise FeatureValueError(problem)  # float() would take "1.5", b"2" or Decimal, which w.x then refuses
    try:
        row = {k: float(x[k]) for k in keys if x[k] or not drop_zeros}
    except (TypeError, ValueError):
        raise FeatureValueError(non_number_message(x)) from None
    except OverflowError:  # an int beyond floats
        k = next(k for k in keys if _overflows(x[k]))
        raise FeatureValueError(f"feature {k!r} is not a finite number: an integer beyond floats") from None
    if not all(map(math.isfinite, row.values())):
        k = next(k for k, v in row.items() if not math.isfinite(v))
        raise FeatureValueError(f"feature {k!r} is not a finite number: {row[k]!r}")
    return row


def refuse_values_beyond(row: dict, limit: float, what: str) -> None:
    """:class:`FeatureValueError` naming the first feature of ``row`` (finite floats) larger than
    ``limit`` in absolute value, which ``what`` cannot take (its squares and sums of squares would
    overflow)."""
    # the norm (C speed, without overflow) is at least the largest |value|: most rows end the test there
    if math.hypot(*row.values()) > limit and (too_large := [k for k, v in row.items() if abs(v) > limit]):
        k = too_large[0]
        raise FeatureValueError(f"feature {k!r} is {row[k]:g}, larger in absolute value than the {limit:g} {what} "
                                "can take; rescale the features (for example, standardise them)")


def warn_stopped_at_cap(what: str, cap_name: str, cap: int, tol: float) -> None:
    """The ``ConvergenceWarning`` of a fit whose solves (``what``, e.g. "RGDSVC: the polish") stopped
    at their iteration cap ``cap_name=cap`` before reaching ``tol``; raised at the estimator's caller."""
    warnings.warn(f"{what} stopped at {cap_name}={cap} before reaching tol={tol}; the model may be off. "
                  f"Standardise the features, or raise {cap_name} or tol.", ConvergenceWarning, stacklevel=3)
