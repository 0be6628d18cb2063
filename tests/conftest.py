"""Shared fixtures: an embedded Kafka-compatible broker (tansu) on a free loopback port.

Before NumPy loads, this pins OpenBLAS to one kernel family on x86-64 machines that can run it (AVX2
and FMA). OpenBLAS picks its kernels by CPU, and they round matrix products differently in the last
bits: the learners are bit-identical for one kernel (same seed, same data), but a fit may then differ,
and on a few borderline data sets "auto"'s discrete choices with it (the stream learner's side test:
7.3% test error with the Haswell kernel, 19.6% with SkylakeX's; README, "Reproducibility"). The
tests check the logic on one arithmetic, whatever machine runs them; subprocesses inherit it, except
where a test sets a kernel itself (test_batch.py runs one fit under each).
"""

import os
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # the tests' helper modules

from cpu_flags import cpu_flags  # noqa: E402


def _pin_openblas_kernel() -> None:
    if os.environ.get("OPENBLAS_CORETYPE") or platform.machine() not in ("x86_64", "AMD64"):
        return
    flags = cpu_flags()
    if flags is not None and {"avx2", "fma"} <= flags:
        os.environ["OPENBLAS_CORETYPE"] = "Haswell"


_pin_openblas_kernel()

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from robustream.daemon.embedded import EmbeddedBroker  # noqa: E402


@pytest.fixture
def broker(tmp_path):
    """A fresh tansu broker (memory store) with the input (2 partitions), predictions and dead-letter topics."""
    with EmbeddedBroker(log_path=str(tmp_path / "tansu.log")) as b:
        b.create_topics({"in": 2, "preds": 1, "dlq": 1})
        yield b


@pytest.fixture(scope="session")
def w8a():
    """The shared w8a data set (3% positives)."""
    from shared_data import require_shared

    from robustream.datasets import load

    require_shared("w8a.xz")
    return load("w8a")


@pytest.fixture(scope="session", params=[(0.15, 0), (0.05, 1)], ids=["flip15-seed0", "flip5-seed1"])
def w8a_split(request, w8a):
    """w8a with 15% (seed 0) or 5% (seed 1) of the train and validation labels flipped uniformly,
    subsampled to 4,000 rows: the report's protocol (benchmarks/run_all.py)."""
    from robustream.datasets import noisy_split

    flip, seed = request.param
    return noisy_split(w8a.X, w8a.y, flip=flip, seed=seed, max_samples=4000)


@pytest.fixture(scope="session")
def minority_flipped_one_sided():
    """Two Gaussian classes in d = 20 (500 positives, 2,000 negatives, Bayes error 1%), 60/40
    train/test; 60% of the train positives, the farthest on the correct side, labelled negative
    (adversarial, one-sided). Returns (X_train, y_train noisy, X_test, y_test clean), labels +-1."""
    rng = np.random.default_rng(0)
    y = np.r_[np.ones(500), -np.ones(2000)]
    X = rng.standard_normal((y.size, 20))
    X[:, 0] += y * 2.326  # class means 4.65 apart: 1% of each class across the midpoint
    order = rng.permutation(y.size)
    X, y = X[order], y[order]
    X_train, y_train, X_test, y_test = X[:1500], y[:1500].copy(), X[1500:], y[1500:]
    positives = np.flatnonzero(y_train > 0)
    y_train[positives[np.argsort(-X_train[positives, 0], kind="stable")[: round(0.6 * positives.size)]]] = -1.0
    return X_train, y_train, X_test, y_test
