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
