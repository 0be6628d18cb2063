"""Type checks of parameters, one definition each (the estimators, learners and solvers share them).

>>> import numpy as np
>>> is_integer(3), is_integer(np.int64(3)), is_integer(True), is_integer(3.0)
(True, True, False, False)
>>> is_plain_int(np.int64(3)), is_real(0.5), is_real(np.float32(0.5)), is_real(False)
(False, True, True, False)
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

_BOOLS = (bool, np.bool_)


def is_integer(value: Any) -> bool:
    """An integer of any kind (Python's or NumPy's), not a bool (``True`` would pass as 1)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, _BOOLS)


def is_plain_int(value: Any) -> bool:
    """A Python ``int``, not a bool: what a parameter stored as JSON must be (River learners save theirs)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_real(value: Any) -> bool:
    """A real number of any kind, not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, _BOOLS)
