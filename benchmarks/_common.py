"""Shared by the benchmark scripts: the run header (command, versions, threads, git state)."""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import scipy
import sklearn

import robustream


def git_state() -> dict:
    """Commit and uncommitted changes under src/ (the library may change between runs)."""
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "src"],
                               capture_output=True, text=True, check=True).stdout.split("\n")
        return {"commit": commit, "src_uncommitted": [line.strip() for line in dirty if line.strip()]}
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "src_uncommitted": None}


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
        "git": git_state(),
    }
    print(f"command: {command}")
    print(
        f"versions: python {meta['python']}, numpy {meta['numpy']}, numba {meta['numba']}, "
        f"scikit-learn {meta['scikit-learn']}, scipy {meta['scipy']}, robustream {meta['robustream']}"
    )
    print(f"threads: {meta['threads']}, cpus: {meta['cpu_count']}, {meta['platform']}")
    dirty = meta["git"]["src_uncommitted"]
    print(f"library: git {meta['git']['commit']}, uncommitted under src/: {', '.join(dirty) if dirty else 'none'}")
    return meta
