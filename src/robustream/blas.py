"""One BLAS thread while a solve runs.

A rebuild multiplies small matrices (a few thousand rows), where a multi-threaded BLAS mostly
synchronises and spins: measured on a busy 2-core machine with OpenBLAS's default of one thread
per core, a streaming rebuild took 2.6x the CPU and 5x the wall time of a single-threaded one, and
a batch ``RGDSVC.fit`` 2-4x the wall time. The solvers therefore run under
:class:`single_threaded_blas`, as scikit-learn's KMeans does around its own loops.

The limit is process-wide (OpenBLAS keeps one thread count per process): while any solve runs,
matrix products of other threads run single-threaded too. Nested and concurrent solves share one
limit, and the original counts come back when the last of them ends, whichever thread that is
(threadpoolctl finds the libraries; its own per-thread arbitration is bypassed for that reason).

>>> import numpy as np
>>> from robustream.blas import single_threaded_blas
>>> with single_threaded_blas():
...     K = np.ones((3, 2)) @ np.ones((2, 3))
>>> float(K[0, 0])
2.0
"""

from __future__ import annotations

import os
import threading
from contextlib import ContextDecorator

__all__ = ["single_threaded_blas"]

_lock = threading.Lock()
_depth = 0  # solves running under the limit, in any thread
_libraries: list | None = None
_original: list[int] = []


def _blas_libraries() -> list:
    """threadpoolctl's controllers of the BLAS libraries loaded in this process (found once)."""
    global _libraries
    if _libraries is None:
        import scipy.linalg.cython_blas  # noqa: F401  (the BLAS numba's np.dot calls)
        from threadpoolctl import ThreadpoolController

        _libraries = ThreadpoolController().select(user_api="blas").lib_controllers
    return _libraries


def _set_threads(library, n: int) -> None:
    # threadpoolctl ignores an OpenBLAS limit set by a thread other than the first one that set it;
    # our counter already arbitrates, so set it directly
    getattr(library, "_real_set_num_threads", library.set_num_threads)(n)


class single_threaded_blas(ContextDecorator):
    """Context manager and decorator: BLAS limited to one thread inside (re-entrant, thread-safe)."""

    def __enter__(self) -> "single_threaded_blas":
        global _depth, _original
        with _lock:
            if _depth == 0:
                libraries = _blas_libraries()
                _original = [library.num_threads for library in libraries]
                for library in libraries:
                    _set_threads(library, 1)
            _depth += 1
        return self

    def __exit__(self, *exc) -> bool:
        global _depth
        with _lock:
            _depth -= 1
            if _depth == 0:
                for library, n in zip(_blas_libraries(), _original):
                    _set_threads(library, n)
        return False


def _after_fork_in_child() -> None:  # the lock may have been held by a thread the child does not have
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)
