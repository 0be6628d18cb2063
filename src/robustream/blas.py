"""One BLAS thread while a solve runs.

A rebuild multiplies small matrices (a few thousand rows), where a multi-threaded BLAS mostly
synchronises and spins: measured on a busy 2-core machine with OpenBLAS's default of one thread
per core, a streaming rebuild took 2.6x the CPU and 5x the wall time of a single-threaded one, and
a batch ``RGDSVC.fit`` 2-4x the wall time. The solvers therefore run under
:class:`single_threaded_blas`, as scikit-learn's KMeans does around its own loops.

The limit is process-wide for OpenBLAS with its own threads (one count per process): while any
solve runs, matrix products of other threads run single-threaded too. Nested and concurrent solves
share one limit; when the last one ends the original count comes back, unless someone changed it
meanwhile (it no longer reads 1). threadpoolctl finds the libraries; its own per-thread arbitration
of OpenBLAS is bypassed, since our counter arbitrates. Libraries with a count per thread (MKL,
OpenBLAS on OpenMP) are limited in each solving thread only.

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
_local = threading.local()  # .depth: solves running in this thread; .original: its per-thread counts
_libraries: tuple[list, list] | None = None  # (process-wide, per-thread) thread counts
_original: list[int] = []


def _blas_libraries() -> tuple[list, list]:
    """threadpoolctl's controllers of the BLAS libraries loaded in this process (found once), split
    into those with one thread count per process (OpenBLAS with its own threads) and per thread
    (MKL, which threadpoolctl limits per thread, and OpenBLAS built on OpenMP)."""
    global _libraries
    if _libraries is None:
        import scipy.linalg.cython_blas  # noqa: F401  (the BLAS numba's np.dot calls)
        from threadpoolctl import ThreadpoolController

        libraries = ThreadpoolController().select(user_api="blas").lib_controllers
        per_thread = [
            lib for lib in libraries
            if lib.internal_api == "mkl" or getattr(lib, "threading_layer", None) == "openmp"
        ]  # fmt: skip
        _libraries = ([lib for lib in libraries if lib not in per_thread], per_thread)
    return _libraries


def _set_threads(library, n: int) -> None:
    # threadpoolctl ignores an OpenBLAS limit set by a thread other than the first one that set it;
    # our counter already arbitrates, so set it directly
    getattr(library, "_real_set_num_threads", library.set_num_threads)(n)


class single_threaded_blas(ContextDecorator):
    """Context manager and decorator: BLAS limited to one thread inside (re-entrant, thread-safe).

    When the last solve ends, a process-wide count is put back only if it still reads 1: a count
    someone else changed meanwhile is theirs (and a solve that starts after such a change limits
    it again, then puts the changed count back).
    """

    def __enter__(self) -> "single_threaded_blas":
        global _depth, _original
        process_wide, per_thread = _blas_libraries()
        with _lock:
            if _depth == 0:
                _original = [library.num_threads for library in process_wide]
            for i, library in enumerate(process_wide):
                n = library.num_threads
                if n != 1:  # first solve, or someone changed the count during a running one: theirs now
                    _original[i] = n
                    _set_threads(library, 1)
            _depth += 1
        depth = getattr(_local, "depth", 0)
        if depth == 0 and per_thread:
            _local.original = [library.num_threads for library in per_thread]
            for library in per_thread:
                _set_threads(library, 1)
        _local.depth = depth + 1
        return self

    def __exit__(self, *exc) -> bool:
        global _depth
        process_wide, per_thread = _blas_libraries()
        _local.depth -= 1
        if _local.depth == 0 and per_thread:
            for library, n in zip(per_thread, _local.original):
                _set_threads(library, n)
        with _lock:
            _depth -= 1
            if _depth == 0:
                for library, n in zip(process_wide, _original):
                    if library.num_threads == 1:  # still our limit: nobody changed it meanwhile
                        _set_threads(library, n)
        return False


def _after_fork_in_child() -> None:
    # the lock may have been held by a thread the child does not have; the child has only the forking
    # thread, so only its solves are still running
    global _lock, _depth
    _lock = threading.Lock()
    mine = getattr(_local, "depth", 0)
    if _depth and not mine and _libraries is not None:
        for library, n in zip(_libraries[0], _original):
            _set_threads(library, n)
    _depth = mine


os.register_at_fork(after_in_child=_after_fork_in_child)
