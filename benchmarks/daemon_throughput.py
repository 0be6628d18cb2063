"""Daemon throughput and per-message latency against a local broker, side by side with a bare consumer.

    python benchmarks/daemon_throughput.py [--messages 20000] [--features 20] [--learners rgd,river:LogisticRegression]

One embedded tansu broker; the same N labelled JSON messages (15% flipped labels) are read by
  * a bare kafka-python consumer that only decodes the JSON (the ceiling of the target),
  * a relay that decodes and produces one small output record per message, as the daemon must
    (no model: the ceiling of any learner with kafka-python's producer), and
  * `robustream serve`'s loop (robustream.daemon.service.Daemon) for each learner: decode, validate,
    predict, learn, produce the prediction, checkpoint + commit every 1000 messages.
Rates are messages per second from the first record to the last (group join excluded), measured in
one run; each daemon runs in a thread of this process, after a warm-up of its learner (numba kernels
loaded). Latency is the daemon's own per-message measurement (what robustream_process_duration_seconds
and robustream_rebuild_duration_seconds observe: decode .. output queued, one clock reading per
message), split into messages that triggered a rebuild and the others; checkpoint ms is the mean
time to write one checkpoint (encode the model, write, fsync, rename: what
robustream_checkpoint_duration_seconds observes). Targets (issue 4): rate >= 0.5x
bare, p99 < 2 ms outside rebuilds.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

# No thread settings here: users run with their BLAS's defaults, and the solvers limit BLAS to one
# thread themselves (robustream.blas).

import numpy as np  # noqa: E402
from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import header, warm_up  # noqa: E402

from robustream.cli import build_parser  # noqa: E402
from robustream.daemon.codec import encode_prediction  # noqa: E402
from robustream.daemon.config import resolve  # noqa: E402
from robustream.daemon.embedded import EmbeddedBroker  # noqa: E402
from robustream.daemon.service import PRODUCER_DEFAULTS, Daemon, configure_logging  # noqa: E402
from robustream.learners.registry import make_learner  # noqa: E402

FAST_GROUP = ["session_timeout_ms=6000", "max_poll_interval_ms=20000", "heartbeat_interval_ms=1000"]


def make_messages(n: int, d: int, seed: int = 0) -> list[bytes]:
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    out = []
    for i in range(n):
        x = rng.normal(size=d)
        y = int(x @ w > 0) ^ int(rng.random() < 0.15)
        out.append(json.dumps({"id": str(i), "x": {f"f{j}": round(float(v), 6) for j, v in enumerate(x)}, "y": y})
                   .encode())  # fmt: skip
    return out


def read_all(bootstrap: str, topic: str, n: int, on_record, on_batch=lambda: None) -> float:
    """Messages per second of reading the first ``n`` records of ``topic`` (assigned, from the
    beginning), calling ``on_record`` on each record and ``on_batch`` after each poll batch."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, max_poll_records=500)
    tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    got, first = 0, None
    while got < n:
        for records in consumer.poll(timeout_ms=500).values():
            if first is None:
                first = time.perf_counter()
            for r in records:
                on_record(r)
                got += 1
        on_batch()
    elapsed = time.perf_counter() - first
    consumer.close()
    return n / elapsed


def bare_consumer(bootstrap: str, topic: str, n: int) -> float:
    return read_all(bootstrap, topic, n, lambda r: json.loads(r.value))


def relay(bootstrap: str, topic: str, n: int, out_topic: str) -> float:
    """The daemon's I/O alone: decode each message and produce its prediction record, written by the
    daemon's encoder (robustream.daemon.codec.encode_prediction), keyed by the input key, with acks=all
    and the daemon's producer settings, flushed after every poll batch as the daemon does before it
    commits; no validation, model or checkpoint."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", **PRODUCER_DEFAULTS)

    def send(r) -> None:
        doc = json.loads(r.value)
        producer.send(out_topic, key=r.key, value=encode_prediction(doc["id"], doc["y"], None, None, 0))

    rate = read_all(bootstrap, topic, n, send, producer.flush)
    producer.close()
    return rate


class TimedDaemon(Daemon):
    """The daemon, keeping the per-message durations it measured for its histograms, batch by batch."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.process_seconds: list[float] = []
        self.rebuild_seconds: list[float] = []
        self.first: float | None = None
        self.last: float | None = None

    def process_batch(self, batch) -> int:
        start = time.perf_counter()
        if self.first is None:
            self.first = start
        tally = self._tally
        n = super().process_batch(batch)
        self.last = time.perf_counter()
        self.process_seconds += tally.process_seconds
        self.rebuild_seconds += tally.rebuild_seconds
        return n


def run_daemon(bootstrap: str, topic: str, n: int, spec: str, workdir: str) -> dict:
    """``spec`` is a learner name, optionally with parameters: ``rgd[rebuild_every=1000;window_size=1000]``."""
    learner, _, params = spec.partition("[")
    safe = "".join(c if c.isalnum() else "-" for c in spec)
    argv = ["serve", "--bootstrap-servers", bootstrap, "--input-topic", topic, "--group-id", f"bench-{safe}",
            "--predictions-topic", f"preds-{safe}", "--dead-letter-topic", "dlq",
            "--checkpoint-dir", f"{workdir}/{safe}", "--checkpoint-every", "1000",
            "--metrics-port", "0", "--learner", learner, "--max-poll-records", "500"]  # fmt: skip
    for opt in FAST_GROUP:
        argv += ["--kafka-option", opt]
    for p in filter(None, params.rstrip("]").split(";")):
        argv += ["--param", p]
    cfg = resolve(build_parser().parse_args(argv), environ={})
    # the daemon runs in a thread of this process: its kernels load here, not in its first messages
    warm_up(stream=[lambda: make_learner(cfg.learner, cfg.learner_params)])
    daemon = TimedDaemon(cfg)
    thread = threading.Thread(target=daemon.run, daemon=True)
    thread.start()
    while daemon.n_processed < n:
        time.sleep(0.05)
    daemon.request_stop()
    thread.join(60)
    plain, rebuilds = np.array(daemon.process_seconds), np.array(daemon.rebuild_seconds)
    sample = daemon.metrics.registry.get_sample_value
    n_checkpoints = int(sample("robustream_checkpoint_duration_seconds_count") or 0)
    return {
        "learner": spec,
        "rate": n / (daemon.last - daemon.first),
        "p50_us": float(np.percentile(plain, 50) * 1e6),
        "p99_us": float(np.percentile(plain, 99) * 1e6),
        "max_us": float(plain.max() * 1e6),
        "rebuilds": int(rebuilds.size),
        "rebuild_p50_ms": float(np.percentile(rebuilds, 50) * 1e3) if rebuilds.size else None,
        "rebuild_max_ms": float(rebuilds.max() * 1e3) if rebuilds.size else None,
        "rebuild_share_of_time": float(rebuilds.sum() / (rebuilds.sum() + plain.sum())),
        "checkpoints": n_checkpoints,
        "checkpoint_mean_ms": sample("robustream_checkpoint_duration_seconds_sum") / n_checkpoints * 1e3
        if n_checkpoints else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20000)
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--learners", default="rgd,rgd[rebuild_every=1000],river:LogisticRegression",
                        help="comma-separated; parameters in brackets, ';'-separated")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "daemon_throughput.json"))
    args = parser.parse_args()
    meta = header()
    configure_logging("text", "WARNING")
    messages = make_messages(args.messages, args.features)
    rows = []
    with EmbeddedBroker() as broker, tempfile.TemporaryDirectory() as workdir:
        broker.create_topics({"bench-in": 1, "dlq": 1})
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=20, acks="all")
        for i, m in enumerate(messages):
            producer.send("bench-in", key=str(i).encode(), value=m)
        producer.flush()
        producer.close()
        bare = bare_consumer(broker.bootstrap_servers, "bench-in", args.messages)
        relay_rate = relay(broker.bootstrap_servers, "bench-in", args.messages, "relay-out")
        for learner in args.learners.split(","):
            rows.append(run_daemon(broker.bootstrap_servers, "bench-in", args.messages, learner, workdir))
        bare_again = bare_consumer(broker.bootstrap_servers, "bench-in", args.messages)
    bare_rate = (bare + bare_again) / 2
    print(f"\n{args.messages} messages, {args.features} features, 1 partition; bare consumer (decode only): "
          f"{bare:,.0f} and {bare_again:,.0f} msg/s (before / after the daemons; mean used)")  # fmt: skip
    print(f"consume + produce one output per message, no model (the daemon's I/O): {relay_rate:,.0f} msg/s = "
          f"{relay_rate / bare_rate:.2f}x bare: the ceiling of any learner with kafka-python's producer")  # fmt: skip
    print(f"{'learner':<30}{'msg/s':>9}{'x bare':>8}{'p50 µs':>9}{'p99 µs':>9}{'max µs':>9}"
          f"{'rebuilds':>9}{'rebuild p50 ms':>16}{'rebuild max ms':>16}{'rebuild time':>14}"
          f"{'checkpoints':>13}{'checkpoint ms':>15}")  # fmt: skip
    for r in rows:
        print(f"{r['learner']:<30}{r['rate']:>9,.0f}{r['rate'] / bare_rate:>8.2f}{r['p50_us']:>9.0f}"
              f"{r['p99_us']:>9.0f}{r['max_us']:>9.0f}{r['rebuilds']:>9}"
              f"{r['rebuild_p50_ms'] if r['rebuild_p50_ms'] is not None else float('nan'):>16.1f}"
              f"{r['rebuild_max_ms'] if r['rebuild_max_ms'] is not None else float('nan'):>16.1f}"
              f"{r['rebuild_share_of_time']:>13.0%}{r['checkpoints']:>13}"
              f"{r['checkpoint_mean_ms'] if r['checkpoint_mean_ms'] is not None else float('nan'):>15.1f}")  # fmt: skip
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"meta": meta, "bare_rate": [bare, bare_again], "relay_rate": relay_rate, "rows": rows},
                                         indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
