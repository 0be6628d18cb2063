"""Shared fixtures: an embedded Kafka-compatible broker (tansu) on a free loopback port."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the tests' helper modules

from robustream.daemon.embedded import EmbeddedBroker  # noqa: E402


@pytest.fixture
def broker(tmp_path):
    """A fresh tansu broker (memory store) with the input (2 partitions), predictions and dead-letter topics."""
    with EmbeddedBroker(log_path=str(tmp_path / "tansu.log")) as b:
        b.create_topics({"in": 2, "preds": 1, "dlq": 1})
        yield b


@pytest.fixture(scope="session")
def w8a_split():
    """w8a (3% positives) with 15% of the train and validation labels flipped uniformly, subsampled
    to 4,000 rows, seed 0: the report's protocol (benchmarks/run_all.py)."""
    from robustream.datasets import load, noisy_split, shared_datasets_dir

    if not (shared_datasets_dir() / "w8a.xz").exists():
        pytest.skip(f"shared w8a not found in {shared_datasets_dir()} (/work/shared absent)")
    ds = load("w8a")
    return noisy_split(ds.X, ds.y, flip=0.15, seed=0, max_samples=4000)
