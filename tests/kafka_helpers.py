"""Helpers for the tests that run the daemon against a real (embedded tansu) broker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from robustream.cli import build_parser
from robustream.daemon.config import resolve
from robustream.daemon.embedded import free_port
from robustream.daemon.service import Daemon

# tansu waits on the rebalance timeout before a group's first join completes (DESIGN.md §5)
FAST_GROUP = ["session_timeout_ms=6000", "max_poll_interval_ms=5000", "heartbeat_interval_ms=1000"]
TOPICS = {"input": "in", "predictions": "preds", "dead_letters": "dlq"}


def labelled_messages(n: int, d: int = 5, flip: float = 0.15, seed: int = 0, start: int = 0) -> list[tuple[str, bytes]]:
    """``(id, json bytes)`` of a seeded linear stream with flipped labels."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    out = []
    for i in range(start, start + n):
        x = rng.normal(size=d)
        y = int(x @ w > 0)
        if rng.random() < flip:
            y = 1 - y
        doc = {"id": str(i), "x": {f"f{j}": float(v) for j, v in enumerate(x)}, "y": y}
        out.append((str(i), json.dumps(doc).encode()))
    return out


def produce(bootstrap: str, topic: str, messages: list[tuple[str, bytes]], partitions: int | None = None) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    for i, (key, value) in enumerate(messages):
        producer.send(topic, key=key.encode(), value=value, partition=None if partitions is None else i % partitions)
    producer.flush()
    producer.close()


def read_topic(bootstrap: str, topic: str, expect: int | None = None, timeout: float = 30.0, quiet: float = 0.5) -> list:
    """Every record of ``topic`` (no group: assign + seek to the beginning), waiting for ``expect`` records
    and then for ``quiet`` seconds without a new one."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=500)
    parts = consumer.partitions_for_topic(topic) or set()
    tps = [TopicPartition(topic, p) for p in sorted(parts)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    records: list = []
    deadline = time.monotonic() + timeout
    quiet_since = time.monotonic()
    while time.monotonic() < deadline:
        batch = consumer.poll(timeout_ms=300)
        got = [r for rs in batch.values() for r in rs]
        records.extend(got)
        if got:
            quiet_since = time.monotonic()
        if expect is not None and len(records) >= expect and time.monotonic() - quiet_since > quiet:
            break
        if expect is None and time.monotonic() - quiet_since > 1.5:
            break
    consumer.close()
    return records


def serve_args(bootstrap: str, checkpoint_dir: Path, *extra: str, metrics_port: int = 0) -> list[str]:
    args = ["serve", "--bootstrap-servers", bootstrap, "--input-topic", TOPICS["input"],
            "--predictions-topic", TOPICS["predictions"], "--dead-letter-topic", TOPICS["dead_letters"],
            "--checkpoint-dir", str(checkpoint_dir), "--metrics-port", str(metrics_port), "--group-id", "g1",
            "--poll-timeout-ms", "200", "--param", "rebuild_every=200", "--param", "window_size=400",
            "--param", "coreset_size=200"]  # fmt: skip
    for opt in FAST_GROUP:
        args += ["--kafka-option", opt]
    return args + list(extra)


class DaemonThread:
    """A daemon in this process (for tests that need no signals)."""

    def __init__(self, argv: list[str]):
        self.daemon = Daemon(resolve(build_parser().parse_args(argv), environ={}))
        self.daemon.start_metrics()
        self.exit_code: int | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        self.exit_code = self.daemon.run()

    def __enter__(self) -> "DaemonThread":
        self.thread.start()
        return self

    def wait_processed(self, n: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while self.daemon.n_processed < n:
            if time.monotonic() > deadline:
                raise AssertionError(f"daemon processed {self.daemon.n_processed} of {n} messages in {timeout} s")
            time.sleep(0.1)

    def stop(self) -> int | None:
        self.daemon.request_stop()
        self.thread.join(30)
        assert not self.thread.is_alive(), "daemon did not stop within 30 s"
        return self.exit_code

    def __exit__(self, *exc) -> None:
        if self.thread.is_alive():
            self.stop()


def start_daemon_process(argv: list[str], log_path: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    log = open(log_path, "ab")
    return subprocess.Popen([sys.executable, "-m", "robustream.cli", *argv], stdout=log, stderr=log, env=env)


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        return resp.read().decode()


def wait_for_metric(port: int, name: str, minimum: float, timeout: float = 60.0) -> float:
    """Poll the endpoint until the sum of the samples of ``name`` reaches ``minimum``."""
    from prometheus_client.parser import text_string_to_metric_families

    deadline = time.monotonic() + timeout
    value = 0.0
    while time.monotonic() < deadline:
        try:
            text = scrape(port)
        except OSError:
            time.sleep(0.2)
            continue
        value = sum(s.value for f in text_string_to_metric_families(text) for s in f.samples if s.name == name)
        if value >= minimum:
            return value
        time.sleep(0.2)
    raise AssertionError(f"{name} reached {value}, not {minimum}, within {timeout} s")


__all__ = ["free_port", "labelled_messages", "produce", "read_topic", "serve_args", "DaemonThread",
           "start_daemon_process", "scrape", "wait_for_metric", "TOPICS"]  # fmt: skip
