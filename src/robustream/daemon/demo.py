"""``robustream demo``: the whole service on one machine, with no Kafka installed.

Starts the embedded broker (tansu) on a free loopback port, creates the topics, runs the daemon,
replays a shared data set with flipped labels as a producer (plus a few malformed messages, to show
the dead-letter topic), follows the predictions topic to score the daemon against the *clean*
labels while it learns from the noisy ones, shows progress with the live accuracy, outlier rate and
margin width, prints the metrics URL and a summary, and shuts everything down.
"""

from __future__ import annotations

import json
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections import deque

from ..datasets import shared_datasets_dir
from .clients import kafka_client
from .config import resolve
from .embedded import TANSU_GROUP_OPTIONS, BrokerUnavailable, EmbeddedBroker
from .producer import SYNTHETIC, dataset_messages, send_messages
from .service import Daemon, _binary_parts, _sample_filters, configure_logging

DEFAULT_DATASET = "mushrooms"
TOPICS = {"input": "robustream-input", "predictions": "robustream-predictions",
          "dead_letters": "robustream-dead-letters"}  # fmt: skip
MALFORMED = [b"{not json", b'{"id": "bad-x", "x": [1, 2]}', b'{"id": "bad-value", "x": {"f1": "NaN"}}',
             b'{"id": "bad-label", "x": {"f1": 1.0}, "y": 7}']  # fmt: skip


def _pick_dataset(name: str) -> str:
    """The default data set falls back to the built-in generator when the shared folder is absent."""
    if name != DEFAULT_DATASET:
        return name
    folder = shared_datasets_dir()
    if not (folder.is_dir() and any(folder.glob(f"{name}*"))):
        print(f"(shared datasets not found at {folder}: replaying the synthetic generator instead)")
        return SYNTHETIC
    return name


class _Progress:
    def __init__(self, total: int, enabled: bool):
        self.total, self.done, self.last_line = total, 0, 0.0
        self.bar = None
        if enabled:
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, unit="msg", dynamic_ncols=True, file=sys.stderr)
            except ImportError:
                pass

    def update(self, n: int, **stats: str) -> None:
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
            self.bar.set_postfix(stats, refresh=False)
        elif time.monotonic() - self.last_line > 2 or self.done >= self.total:
            self.last_line = time.monotonic()
            print(f"{self.done}/{self.total} messages  " + "  ".join(f"{k}={v}" for k, v in stats.items()))

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def demo_params(learner: str, params: list[str]) -> list[str]:
    """The ``--param`` items of the demo's learner: the user's, and for ``rgd`` ``outlier_fraction=auto``
    unless they set it (the flip rate is unknown to the demo's learner too).

    >>> demo_params("rgd", ["nu=0.2"]), demo_params("rgd", ["outlier_fraction =0.1"])
    (['nu=0.2', 'outlier_fraction=auto'], ['outlier_fraction =0.1'])
    """
    if learner == "rgd" and "outlier_fraction" not in {p.partition("=")[0].strip() for p in params}:
        return [*params, "outlier_fraction=auto"]
    return list(params)


def run_demo(args) -> int:
    """Entry point of ``robustream demo``; returns the exit code."""
    # SIGTERM ends the demo like Ctrl-C, from the first line on: through the finally below, so the
    # broker (in its own session) never outlives the demo, not even one stopped while it starts
    previous_term = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        return _run_demo(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous_term)


def _run_demo(args) -> int:
    try:
        for flag, value, least in (("--partitions", args.partitions, 1), ("--max-samples", args.max_samples, 1),
                                   ("--seed", args.seed, 0)):  # fmt: skip
            if value < least:  # a negative --max-samples was a slice: all rows but the last few
                raise ValueError(f"{flag}: must be at least {least}, got {value}")
        dataset = _pick_dataset(args.dataset)
        messages = list(dataset_messages(dataset, flip=args.flip, seed=args.seed, max_samples=args.max_samples))
    except (ValueError, OSError) as exc:
        print(f"robustream demo: error: {exc}", file=sys.stderr)
        return 2
    configure_logging("text", "WARNING")
    workdir = tempfile.mkdtemp(prefix="robustream-demo-")
    broker = daemon = worker = None
    try:
        try:
            broker = EmbeddedBroker().start()
        except BrokerUnavailable as exc:
            print(f"robustream demo: error: {exc}", file=sys.stderr)
            return 2
        broker.create_topics({TOPICS["input"]: args.partitions, TOPICS["predictions"]: 1, TOPICS["dead_letters"]: 1})
        argv = ["--bootstrap-servers", broker.bootstrap_servers, "--input-topic", TOPICS["input"],
                "--predictions-topic", TOPICS["predictions"], "--dead-letter-topic", TOPICS["dead_letters"],
                "--checkpoint-dir", f"{workdir}/checkpoints", "--metrics-port", str(args.metrics_port),
                "--checkpoint-every", "1000", "--learner", args.learner]  # fmt: skip
        for option in TANSU_GROUP_OPTIONS:
            argv += ["--kafka-option", option]
        params = demo_params(args.learner, args.param)
        for p in params:
            argv += ["--param", p]
        from ..cli import build_parser

        try:
            cfg = resolve(build_parser().parse_args(["serve", *argv]), environ={})
            daemon = Daemon(cfg)
        except (ValueError, OSError, OverflowError) as exc:
            print(f"robustream demo: error: {exc}", file=sys.stderr)
            return 2
        try:
            port = daemon.start_metrics()
        except OSError as exc:
            print(f"robustream demo: error: --metrics-port {args.metrics_port}: cannot listen ({exc.strerror or exc})",
                  file=sys.stderr)  # fmt: skip
            daemon.close()  # as serve does: its checkpoint folder is let go
            return 2
        print(f"embedded broker (tansu) on {broker.bootstrap_servers}; "
              f"metrics on http://127.0.0.1:{port}/metrics")  # fmt: skip
        print(f"replaying {dataset}: {len(messages)} messages, {args.flip:.0%} of the labels flipped, "
              f"{len(MALFORMED)} malformed; learner {args.learner} {' '.join(params)}")  # fmt: skip
        exit_code: list[int] = []
        worker = threading.Thread(target=lambda: exit_code.append(daemon.run()), daemon=True)
        worker.start()
        clean = _produce(broker.bootstrap_servers, messages)
        summary = _follow(broker.bootstrap_servers, daemon, clean, messages, total=len(messages) + len(MALFORMED),
                          progress=not args.no_progress)  # fmt: skip
        daemon.request_stop()
        worker.join(60)
        _print_summary(summary, daemon, port)
        return 0 if exit_code == [0] and summary["complete"] else 1
    finally:
        # a second Ctrl-C or SIGTERM must not cut the clean-up short: tansu runs in its own session
        # and would outlive the demo
        previous_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            if worker is not None and worker.is_alive():  # interrupted: the daemon goes before its broker
                daemon.request_stop()
                worker.join(10)
        finally:
            if broker is not None:
                broker.stop()
            shutil.rmtree(workdir, ignore_errors=True)
            signal.signal(signal.SIGINT, previous_int)
            signal.signal(signal.SIGTERM, _raise_interrupt)


def _raise_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _produce(bootstrap: str, messages: list) -> dict[str, int]:
    from kafka import KafkaProducer

    # closed before the broker stops, also when interrupted (no reconnection errors)
    make = lambda: KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=20)  # noqa: E731
    with kafka_client(make, timeout=5) as producer:
        clean = send_messages(producer, TOPICS["input"], iter(messages))
        for i, raw in enumerate(MALFORMED):
            producer.send(TOPICS["input"], key=f"malformed-{i}".encode(), value=raw)
        producer.flush()
    return clean


def _follow(bootstrap: str, daemon: Daemon, clean: dict, messages: list, total: int, progress: bool) -> dict:
    """Read predictions and dead letters until every message is accounted for (or nothing moves for 60 s)."""
    from kafka import KafkaConsumer, TopicPartition

    tps = [TopicPartition(TOPICS["predictions"], 0), TopicPartition(TOPICS["dead_letters"], 0)]
    noisy = {doc["id"]: doc["y"] for doc, _ in messages}
    seen, correct, agree_noisy, dead = set(), 0, 0, 0
    flagged = flagged_flipped = 0
    recent: deque = deque(maxlen=500)
    start = last_move = time.monotonic()
    m = daemon.metrics
    rebuilding = bool(_binary_parts(daemon.model))  # a margin and an outlier rate to show
    filtering = _sample_filters(daemon.model) is not None  # an outlier rate to show
    # closed before the broker stops, also when interrupted (no reconnection errors)
    with kafka_client(lambda: KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)) as consumer:
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        bar = _Progress(total, progress)
        try:
            while len(seen) + dead < total and time.monotonic() - last_move < 60:
                batch = consumer.poll(timeout_ms=300)
                n = 0
                for tp, records in batch.items():
                    for r in records:
                        if tp.topic == TOPICS["dead_letters"]:
                            dead += 1
                            n += 1
                            continue
                        out = json.loads(r.value)
                        if out["id"] in seen:
                            continue
                        seen.add(out["id"])
                        n += 1
                        ok = out["y_pred"] == clean[out["id"]]
                        correct += ok
                        recent.append(ok)
                        agree_noisy += out["y_pred"] == noisy[out["id"]]
                        if out.get("outlier"):
                            flagged += 1
                            flagged_flipped += noisy[out["id"]] != clean[out["id"]]
                if n:
                    last_move = time.monotonic()
                    shown = {"acc_clean": f"{sum(recent) / max(1, len(recent)):.3f}"}
                    if rebuilding or filtering:
                        shown["outlier_rate"] = f"{m.value('robustream_outlier_rate'):.3f}"
                    if rebuilding:
                        shown["margin"] = f"{m.value('robustream_margin_width'):.3f}"
                    bar.update(n, **shown)
        finally:
            bar.close()
    n_pred = max(1, len(seen))
    return {
        "predictions": len(seen), "dead_letters": dead, "complete": len(seen) + dead >= total,
        "accuracy_clean": correct / n_pred, "accuracy_noisy": agree_noisy / n_pred,
        "recent_accuracy_clean": sum(recent) / max(1, len(recent)),
        "flagged": flagged, "flagged_precision": flagged_flipped / flagged if flagged else float("nan"),
        "flipped": sum(noisy[i] != clean[i] for i in clean), "seconds": time.monotonic() - start,
        "majority": max(sum(clean.values()), len(clean) - sum(clean.values())) / max(1, len(clean)),
    }  # fmt: skip


def _print_summary(s: dict, daemon: Daemon, port: int) -> None:
    m = daemon.metrics
    rebuilding = bool(_binary_parts(daemon.model))  # a robustream learner: outliers, rebuilds, margin
    filtering = _sample_filters(daemon.model) is not None  # ORDI: outliers (the samples it kept back)
    rows = [
        ("messages predicted", f"{s['predictions']}"),
        ("dead letters (malformed input)", f"{s['dead_letters']}"),
        ("prequential accuracy vs clean labels", f"{s['accuracy_clean']:.4f}"),
        ("  ... on the last 500 messages", f"{s['recent_accuracy_clean']:.4f}"),
        ("  (always predicting the majority class)", f"{s['majority']:.4f}"),
        ("agreement with the noisy labels it learned from", f"{s['accuracy_noisy']:.4f}"),
        ("labels flipped in the stream", f"{s['flipped']}"),
        ("messages flagged as outliers", f"{s['flagged']} ({s['flagged_precision']:.1%} of them truly flipped)"
         if rebuilding or filtering else "n/a (this learner flags none)"),
        ("rebuilds (model version)", f"{int(m.value('robustream_model_version'))}" if rebuilding
         else f"n/a (model version = samples learned, {int(m.value('robustream_model_version'))})"),
        ("margin width (< 0: the kept classes overlap) / outlier rate of the last rebuild",
         f"{m.value('robustream_margin_width'):.4f} / {m.value('robustream_outlier_rate'):.3f}" if rebuilding
         else "n/a"),
        *([("outlier rate (share of the recent labelled messages the filter kept back)",
            f"{m.value('robustream_outlier_rate'):.3f}")] if filtering else []),
        ("wall time", f"{s['seconds']:.1f} s"),
    ]  # fmt: skip
    width = max(len(k) for k, _ in rows)
    print()
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    print(f"(metrics were served on http://127.0.0.1:{port}/metrics; the broker and daemon are now stopped)")
    if not s["complete"]:
        print("WARNING: not every message was accounted for before the demo gave up", file=sys.stderr)
