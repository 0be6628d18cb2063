"""Shared by the benchmark scripts: the run header (command, versions, threads, git state) and the
warm-up that loads the numba kernels before anything is timed."""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable

import numba
import numpy as np
import scipy
import scipy.sparse as sp
import sklearn

import robustream
from robustream.datasets import make_gaussian_classes


def git_state() -> dict:
    """Commit and uncommitted changes under src/ of the checkout the imported robustream comes from
    (the library may change between runs, and ``PYTHONPATH`` may point at another checkout than the
    benchmark's, e.g. to time an older commit side by side); ``package``: where it was imported from."""
    package = Path(robustream.__file__).resolve().parent
    state = {"commit": None, "src_uncommitted": None, "package": str(package)}
    if package.parent.name != "src":  # an installed copy, not a checkout's src/
        return state
    root = package.parent.parent
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "src"],
                               capture_output=True, text=True, check=True).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        return state
    return {**state, "commit": commit, "src_uncommitted": [line.strip() for line in dirty if line.strip()]}


def blas_kernels() -> str:
    """The BLAS libraries NumPy and SciPy loaded, with the kernel family OpenBLAS picked for this CPU
    (or ``OPENBLAS_CORETYPE``): kernels round matrix products differently in the last bits, and on
    borderline data "auto"'s choices with them (README, "Reproducibility")."""
    from threadpoolctl import threadpool_info  # a scikit-learn dependency

    found = sorted({f"{i.get('internal_api')} {i.get('version')} {i.get('architecture')}" for i in threadpool_info()
                    if i.get("user_api") == "blas"})  # fmt: skip
    return ", ".join(found) or "unknown"


def header() -> dict:
    """Print and return what a reader needs to reproduce the run."""
    command = " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv])
    meta = {
        "command": command,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "scikit-learn": sklearn.__version__,
        "scipy": scipy.__version__,
        "robustream": robustream.__version__,
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "threads": {v: os.environ.get(v) for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")},
        "blas": blas_kernels(),
        "git": git_state(),
    }
    print(f"command: {command}")
    print(
        f"versions: python {meta['python']}, numpy {meta['numpy']}, numba {meta['numba']}, "
        f"scikit-learn {meta['scikit-learn']}, scipy {meta['scipy']}, robustream {meta['robustream']}"
    )
    print(f"threads: {meta['threads']}, cpus: {meta['cpu_count']}, {meta['platform']}, BLAS: {meta['blas']}")
    dirty = meta["git"]["src_uncommitted"]
    print(f"library: git {meta['git']['commit']}, uncommitted under src/: {', '.join(dirty) if dirty else 'none'} "
          f"(imported from {meta['git']['package']})")
    return meta


def warm_up(stream: Iterable[Callable[[], Any]] = (), batch: Iterable[Callable[[], Any]] = (), d: int = 20) -> None:
    """Load the numba kernels (compiled, or read from numba's cache, on their first call in a process)
    before anything is timed, so that this cost does not land on whichever method is timed first.

    Each ``batch()`` estimator fits 200 generated rows; each ``stream()`` model (a learner, or a River
    pipeline ending in one) makes a predict_one + learn_one pass over 600 generated rows, or enough for
    two rebuilds of a learner that rebuilds less often. Both once on dense rows and once on sparse ones:
    sparse data take the kernels' CSR twins. A rebuild still running in the rebuild worker process
    (``rebuild_lag``) is applied at the end, so the worker is idle when the timing starts.
    """
    stream, batch = list(stream), list(batch)
    with warnings.catch_warnings():  # about made-up rows: noise in the benchmark's output
        warnings.simplefilter("ignore")
        for sparse in (False, True):
            X, y = _warm_data(200, d, sparse)
            for make in batch:
                make().fit(sp.csr_matrix(X) if sparse else X, y)
            for make in stream:
                model = make()
                core = model.steps[next(reversed(model.steps))] if hasattr(model, "steps") else model
                X, y = _warm_data(max(600, 2 * getattr(core, "rebuild_every", 0) + 1), d, sparse)
                for row, label in zip(X, y):
                    x = {f"f{j}": float(v) for j, v in enumerate(row) if v != 0.0}
                    model.predict_one(x)
                    model.learn_one(x, bool(label > 0))
                if hasattr(core, "rebuild"):
                    core.rebuild()  # applies the one still running in the worker, if any, then solves once more


def _warm_data(n: int, d: int, sparse: bool) -> tuple[np.ndarray, np.ndarray]:
    """``n`` shuffled rows of two Gaussian classes, 15% of the labels flipped; ``sparse``: 85% of the
    cells set to 0 and the labels taken from a linear rule on what is left (a learnable problem keeps
    the solves short)."""
    rng = np.random.default_rng(0)
    X, y = make_gaussian_classes((n // 2, n - n // 2), d=d, seed=0)
    order = rng.permutation(n)
    X, y = X[order], y[order]
    if sparse:
        X = X * (rng.random(X.shape) < 0.15)
        y = np.where(X @ rng.standard_normal(d) >= 0, 1.0, -1.0)
    return X, np.where(rng.random(n) < 0.15, -y, y)
