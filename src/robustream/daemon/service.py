"""``robustream serve``: the Kafka consumer daemon.

Loop: poll a batch -> decode and validate -> predict (and learn when labelled) -> produce
predictions and dead letters -> (every ``--checkpoint-every`` messages or ``--checkpoint-interval``
seconds) flush -> checkpoint model + next offsets -> commit. Offsets are stored in the checkpoint and
sought on assignment (the larger of the checkpoint's and the group's committed offset), so a
restart resumes exactly where the last checkpoint left off: at-least-once, with duplicates limited
to what was processed after the last checkpoint.

Nothing here depends on a particular broker: it is plain kafka-python against any Kafka cluster.
"""

from __future__ import annotations

import collections
import json
import logging
import math
import os
import signal
import sys
import threading
import time
from typing import Any

from kafka import ConsumerRebalanceListener, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata
from prometheus_client import start_http_server

from ..learners.registry import make_learner
from .checkpoint import CheckpointStore
from .state import StateError
from .codec import InvalidMessage, LabelSpace, dead_letter, decode_message, encode_json
from .config import ServeConfig, resolve
from .metrics import OUTCOMES, DaemonMetrics

log = logging.getLogger("robustream.daemon")

OUTLIER_THRESHOLD = 1.0  # margin units on the wrong side beyond which a labelled message is flagged


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc = {"ts": round(record.created, 3), "level": record.levelname, "logger": record.name,
               "msg": record.getMessage()}  # fmt: skip
        doc.update(getattr(record, "fields", {}))
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str)


def configure_logging(fmt: str = "text", level: str = "INFO") -> None:
    """Text or one-JSON-object-per-line logs on stderr for the daemon's loggers."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        _JsonFormatter() if fmt == "json" else logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    root = logging.getLogger("robustream")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False
    kafka_log = logging.getLogger("kafka")
    kafka_log.handlers[:] = [handler]
    kafka_log.setLevel(logging.ERROR if level.upper() != "DEBUG" else logging.INFO)
    kafka_log.propagate = False


def _split_client_settings(settings: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    consumer, producer = {}, {}
    for key, value in settings.items():
        known = False
        if key in KafkaConsumer.DEFAULT_CONFIG:
            consumer[key], known = value, True
        if key in KafkaProducer.DEFAULT_CONFIG:
            producer[key], known = value, True
        if not known:
            raise ValueError(f"--kafka-option {key}: not a kafka-python consumer or producer setting")
    return consumer, producer


# -- learner statistics (robustream learners, River wrappers around them, or plain River models) ----
def _binary_parts(model: Any) -> list[Any]:
    """The robustream binary learners inside ``model`` (itself, a OneVsRest's members, ...)."""
    if hasattr(model, "margin_width_"):
        return [model]
    members = getattr(model, "classifiers", None)
    if isinstance(members, dict):
        return [m for m in members.values() if hasattr(m, "margin_width_")]
    inner = getattr(model, "classifier", None)
    return _binary_parts(inner) if inner is not None else []


class Daemon:
    """One consumer of the group: owns the model, the clients and the metrics.

    Build with a resolved :class:`~robustream.daemon.config.ServeConfig`; :meth:`run` returns the
    exit code. :meth:`request_stop` (also bound to SIGTERM/SIGINT by :func:`run_serve`) ends it
    gracefully after the current batch.
    """

    def __init__(self, cfg: ServeConfig, metrics: DaemonMetrics | None = None):
        self.cfg = cfg
        self.metrics = metrics or DaemonMetrics()
        self.labels = LabelSpace(cfg.label_values)
        self.consumer_settings, self.producer_settings = _split_client_settings(cfg.kafka_settings())
        for settings in (self.consumer_settings, self.producer_settings):
            # the clients probe the broker version when built; keep each try short so that a stop
            # request or the metrics stay responsive while the brokers are unreachable
            if "bootstrap_timeout_ms" in KafkaConsumer.DEFAULT_CONFIG:
                settings.setdefault("bootstrap_timeout_ms", 5000)
        self.store = CheckpointStore(cfg.checkpoint_dir, cfg.checkpoint_keep)
        self._fell_back = False
        self._stop = threading.Event()
        self.consumer: KafkaConsumer | None = None
        self.producer: KafkaProducer | None = None
        self.metrics_server = None
        self.metrics_port: int | None = None
        self.model, self.checkpoint_offsets = self._restore()
        self.next_offsets: dict[tuple[str, int], int] = {}  # processed, not yet checkpointed
        self._pending: list[tuple[Any, str, bytes | None, bytes]] = []  # sends not yet confirmed
        self._newly_assigned: set[TopicPartition] = set()
        self._since_checkpoint = 0
        self._last_checkpoint = time.monotonic()
        self._retry_at = 0.0
        self._backoff = 0.5
        self._recent = collections.deque(maxlen=cfg.accuracy_window)
        self._recent_correct = 0
        self._outcome = {o: self.metrics.messages.labels(outcome=o) for o in OUTCOMES}
        self.n_processed = 0
        self.n_learned = getattr(self, "_restored_learned", 0)
        self._publish_model_gauges()

    # -- model -----------------------------------------------------------------------------------
    def _learner_meta(self) -> dict:
        return {"learner": self.cfg.learner, "params": self.cfg.learner_params, "labels": self.labels.values}

    def _new_model(self) -> Any:
        return make_learner(self.cfg.learner, self.cfg.learner_params, multiclass=not self.labels.binary)

    def _restore(self) -> tuple[Any, dict[tuple[str, int], int]]:
        def corrupt(path, reason):
            self.metrics.checkpoint_fallbacks.inc()
            self._fell_back = True

        ckpt = self.store.load_latest(on_corrupt=corrupt)
        if ckpt is None:
            log.info("no checkpoint in %s: starting a new %s model", self.cfg.checkpoint_dir, self.cfg.learner)
            return self._new_model(), {}
        made_by = {k: ckpt.meta.get(k) for k in ("learner", "params", "labels")}
        if made_by != json.loads(json.dumps(self._learner_meta())):
            raise ValueError(
                f"--checkpoint-dir {self.cfg.checkpoint_dir}: the checkpoint was made with {made_by}, not with "
                f"{self._learner_meta()}; use the same settings or another checkpoint directory"
            )
        log.info("restored %s (%d partition offsets)", ckpt.path, len(ckpt.offsets))
        self._restored_learned = int(ckpt.meta.get("samples_learned", 0))
        return ckpt.model, dict(ckpt.offsets)

    def _model_version(self, parts: list | None = None) -> int:
        """Rebuilds of the robustream learners in the model, else the number of samples learned."""
        parts = _binary_parts(self.model) if parts is None else parts
        return int(sum(p.n_rebuilds_ for p in parts)) if parts else self.n_learned

    def _rebuild_count(self, parts: list | None = None) -> int:
        """Rebuild attempts (successful or not): a change means the last message triggered one."""
        parts = _binary_parts(self.model) if parts is None else parts
        return sum(p.n_rebuilds_ + p.n_failed_rebuilds_ for p in parts)

    def _publish_model_gauges(self) -> None:
        parts = _binary_parts(self.model)
        m = self.metrics
        if parts:
            m.margin_width.set(sum(p.margin_width_ for p in parts) / len(parts))
            m.outlier_rate.set(sum(p.outlier_rate_ for p in parts) / len(parts))
            m.coreset_rows.set(sum(len(p._buffer.coreset) for p in parts))
        m.model_version.set(self._model_version(parts))

    # -- one message -------------------------------------------------------------------------------
    def process(self, topic: str, partition: int, offset: int, key: bytes | None, raw: bytes | None) -> None:
        """Decode, predict, learn, and queue the output record of one input message."""
        m = self.metrics
        start = time.perf_counter()
        try:
            msg = decode_message(
                raw, labels=self.labels, max_bytes=self.cfg.max_message_bytes, max_features=self.cfg.max_features
            )
        except InvalidMessage as exc:
            record = dead_letter(raw, error=str(exc), topic=topic, partition=partition, offset=offset)
            self._send(self.cfg.dead_letter_topic, key, encode_json(record))
            self._outcome["invalid"].inc()
            m.process_duration.observe(time.perf_counter() - start)
            return
        parts = _binary_parts(self.model)
        rebuilds_before, successes_before = self._rebuild_count(parts), sum(p.n_rebuilds_ for p in parts)
        try:
            out = encode_json(self._predict_and_learn(msg, parts))
        except Exception as exc:  # noqa: BLE001 - the daemon never crashes on input
            log.exception("processing message %s at %s/%d/%d failed", msg.id, topic, partition, offset)
            record = dead_letter(raw, error=f"processing failed: {type(exc).__name__}: {exc}", topic=topic,
                                 partition=partition, offset=offset)  # fmt: skip
            self._send(self.cfg.dead_letter_topic, key, encode_json(record))
            self._outcome["dead_letter"].inc()
            m.process_duration.observe(time.perf_counter() - start)
            return
        self._send(self.cfg.predictions_topic, key, out)
        elapsed = time.perf_counter() - start
        parts = _binary_parts(self.model)  # a one-vs-rest model may have grown a member
        if self._rebuild_count(parts) != rebuilds_before:
            m.rebuild_duration.observe(elapsed)
            self._publish_model_gauges()
            if sum(p.n_rebuilds_ for p in parts) != successes_before:
                m.last_rebuild.set(time.time())
        else:
            m.process_duration.observe(elapsed)

    def _predict_and_learn(self, msg, parts: list) -> dict:
        m = self.metrics
        model = self.model
        binary = self.labels.binary
        proba = model.predict_proba_one(msg.x)
        pred = max(proba, key=proba.get) if proba else model.predict_one(msg.x)
        margin = -float(parts[0].outlier_score_one(msg.x, True)) if parts and binary else None
        if margin is not None and not math.isfinite(margin):
            margin = None  # huge feature values overflow w.x; JSON has no infinity
        p_pred = float(proba[pred]) if proba and pred in proba else None
        out: dict[str, Any] = {
            "id": msg.id,
            "y_pred": self.labels.to_external(pred),
            "proba": p_pred if p_pred is not None and math.isfinite(p_pred) else None,
            "margin": margin,
            "model_version": self._model_version(parts),
        }
        if msg.y is None:
            self._outcome["predict_only"].inc()
            return out
        target = self.labels.to_internal(msg.y)
        score = None
        if margin is not None:
            score = -margin if target else margin  # = outlier_score_one(x, target)
        elif parts:
            member = getattr(model, "classifiers", {}).get(target)
            if member is not None:
                score = float(member.outlier_score_one(msg.x, True))
        out["outlier"] = None if score is None else bool(score > OUTLIER_THRESHOLD)
        if out["outlier"]:
            m.outliers.inc()
        correct = out["y_pred"] == msg.y
        if len(self._recent) == self._recent.maxlen:
            self._recent_correct -= self._recent[0]
        self._recent.append(correct)
        self._recent_correct += correct
        m.prequential_accuracy.set(self._recent_correct / len(self._recent))
        failed_before = sum(p.n_failed_rebuilds_ for p in parts)
        model.learn_one(msg.x, target)
        failed = sum(p.n_failed_rebuilds_ for p in parts) - failed_before
        if failed > 0:
            m.rebuild_failures.inc(failed)
        m.samples_learned.inc()
        self.n_learned += 1
        self._outcome["ok"].inc()
        return out

    # -- output and offsets --------------------------------------------------------------------------
    def _send(self, topic: str, key: bytes | None, value: bytes) -> None:
        """Queue one output record; it stays in ``_pending`` until the broker acknowledged it."""
        try:
            future = self.producer.send(topic, key=key, value=value)
        except KafkaError as exc:  # no metadata yet, buffer full, closed producer: the next flush re-sends
            log.debug("send to %s deferred: %s", topic, exc)
            future = None
        self._pending.append((future, topic, key, value))

    def _flush_outputs(self, timeout: float, replace_producer: bool = True) -> None:
        """Block until every queued output is acknowledged, re-sending failures; raises KafkaError.

        A record leaves ``_pending`` only once acknowledged, so whatever raises here, nothing that was
        queued can be checkpointed or committed without its output.
        """
        deadline = time.monotonic() + timeout
        while self._pending:
            try:
                self.producer.flush(timeout=max(0.1, deadline - time.monotonic()))
            except KafkaError:
                pass  # the records still unacknowledged are found below
            unacked = [(f, t, k, v) for f, t, k, v in self._pending if f is None or not f.is_done or f.failed()]
            errors = {type(f.exception).__name__ for f, *_ in unacked if f is not None and f.is_done}
            self._pending = [(None, t, k, v) for _, t, k, v in unacked]
            if not unacked:
                return
            if errors and replace_producer:
                # e.g. UnknownProducerIdError after a broker lost its state: this producer will not recover
                log.warning("%d output records failed (%s): new producer, sending them again", len(unacked),
                            ", ".join(sorted(errors)))  # fmt: skip
                self._new_producer()  # raises KafkaError while the brokers are unreachable; records stay queued
            if time.monotonic() >= deadline:
                raise KafkaError(f"{len(unacked)} output records not acknowledged within {timeout:.1f} s")
            retry, self._pending = self._pending, []
            for _, t, k, v in retry:
                self._send(t, k, v)

    def _new_producer(self) -> None:
        """Build a new producer, then swap it in and close the old one (the old one stays if building fails)."""
        fresh = KafkaProducer(bootstrap_servers=self.cfg.bootstrap_servers.split(","), acks="all", linger_ms=5,
                              **self.producer_settings)  # fmt: skip
        old, self.producer = self.producer, fresh
        if old is not None:
            try:
                old.close(timeout=1)
            except Exception:  # noqa: BLE001 - the old producer is being replaced
                pass

    @property
    def _flush_timeout(self) -> float:
        # shorter than max.poll.interval: a flush that blocks past it gets this member evicted from the group
        interval = self.consumer.config["max_poll_interval_ms"] / 1000.0 if self.consumer is not None else 300.0
        return max(1.0, min(30.0, 0.4 * interval))

    def _flush_and_checkpoint(self, timeout: float, replace_producer: bool = True) -> dict | None:
        """Flush outputs, then checkpoint model + next offsets; the offsets to commit, or None on broker trouble."""
        try:
            self._flush_outputs(timeout, replace_producer)
        except KafkaError as exc:
            self._broker_trouble("flushing outputs", exc)
            return None
        if self.next_offsets or self._since_checkpoint:
            previous_offsets = dict(self.checkpoint_offsets)
            self.checkpoint_offsets.update(self.next_offsets)
            start = time.perf_counter()
            meta = {**self._learner_meta(), "saved_at": time.time(), "model_version": self._model_version(),
                    "samples_learned": self.n_learned}  # fmt: skip
            try:
                self.store.save(self.model, self.checkpoint_offsets, meta)
            except (OSError, StateError) as exc:
                # nothing is committed without its checkpoint: keep processing, retry at the next one
                log.error("cannot write a checkpoint to %s: %s", self.cfg.checkpoint_dir, exc)
                self.metrics.checkpoint_failures.inc()
                self.checkpoint_offsets = previous_offsets
                return None
            self.metrics.checkpoint_duration.observe(time.perf_counter() - start)
        self._since_checkpoint = 0
        self._last_checkpoint = time.monotonic()
        return {TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in self.next_offsets.items()}

    def checkpoint_and_commit(self, timeout: float | None = None) -> bool:
        """Flush -> checkpoint model + next offsets -> commit. False (and a retry later) on broker trouble."""
        timeout = self._flush_timeout if timeout is None else timeout
        to_commit = self._flush_and_checkpoint(timeout)
        if to_commit is None:
            return False
        # only partitions this member still owns; the checkpoint keeps the others' offsets for a later assignment
        owned = self.consumer.assignment()
        to_commit = {tp: om for tp, om in to_commit.items() if tp in owned}
        if not to_commit:
            self.next_offsets.clear()
        else:
            try:
                # bounded: a commit that retries for long keeps poll() from running and gets the member evicted
                self.consumer.commit(offsets=to_commit, timeout_ms=int(min(timeout, 10.0) * 1000))
            except KafkaError as exc:
                # the checkpoint already holds these offsets; they are sought on the next assignment
                self._broker_trouble("committing offsets", exc)
                return False
            self.next_offsets.clear()
        self._backoff = 0.5
        return True

    def _on_revoked(self, revoked) -> None:
        # Runs inside poll (on kafka-python's IO thread in 3.x, where blocking consumer calls are not
        # allowed): flush + checkpoint are local or the producer's; the commit is asynchronous. If that
        # commit loses the race with the rebalance, the next owner redoes at most one checkpoint interval.
        if self.next_offsets or self._pending:
            # on the IO thread heartbeats wait for us: short, and no new producer (its bootstrap blocks)
            to_commit = self._flush_and_checkpoint(min(2.0, self._flush_timeout), replace_producer=False)
            if to_commit:
                self.consumer.commit_async(offsets=to_commit)
                self.next_offsets.clear()
        for tp in revoked:
            try:
                self.metrics.consumer_lag.remove(str(tp.partition))
            except KeyError:
                pass

    def _seek_to_checkpoint(self, batch: dict) -> dict:
        """For newly assigned partitions, skip ahead to the checkpoint's offset when the group's committed
        offset is behind it (a crash between checkpoint and commit), or go back to it after a fallback to an
        older checkpoint (so that the model learns what it missed); drops the records fetched before.

        Decided on the first records fetched from the partition, whose high watermark tells whether the
        checkpoint's offset exists at all: a partition shorter than the checkpoint was re-created or
        truncated, and is then read from the group's offset instead.
        """
        for tp in list(self._newly_assigned):
            records = batch.get(tp)
            if not records:
                continue  # nothing fetched yet, so nothing would be redone
            self._newly_assigned.discard(tp)
            target = self.checkpoint_offsets.get((tp.topic, tp.partition))
            position = records[0].offset
            if target is None or position == target:
                continue
            if position > target and not self._fell_back:
                continue  # another member went further since: its outputs and commits stand
            # behind: the group's commit trails this checkpoint. Ahead after a fallback to an older
            # checkpoint: redo the messages the restored model has not learned (their outputs repeat).
            high = self.consumer.highwater(tp)
            if high is not None and target > high:
                log.warning("%s/%d: checkpoint offset %d is past the end of the partition (%d): re-created or "
                            "truncated? reading from offset %d", tp.topic, tp.partition, target, high, position)  # fmt: skip
                self.checkpoint_offsets.pop((tp.topic, tp.partition), None)
                continue
            self.consumer.seek(tp, target)
            batch.pop(tp, None)
            log.info("%s/%d: resuming at checkpoint offset %d (group offset %d)", tp.topic, tp.partition, target,
                     position)  # fmt: skip
        return batch

    def _broker_trouble(self, what: str, exc: Exception) -> None:
        self.metrics.broker_errors.inc()
        self._retry_at = time.monotonic() + self._backoff
        log.warning("broker trouble while %s (%s: %s); retrying in %.1f s", what, type(exc).__name__, exc,
                    self._backoff)  # fmt: skip
        self._backoff = min(self._backoff * 2, 30.0)

    def _update_lag(self) -> None:
        for tp in self.consumer.assignment():
            high = self.consumer.highwater(tp)
            if high is None:
                continue
            position = self.next_offsets.get((tp.topic, tp.partition))
            if position is None:
                try:
                    position = self.consumer.position(tp, timeout_ms=0)
                except (KafkaError, TypeError):
                    continue
                if position is None:
                    continue
            self.metrics.consumer_lag.labels(partition=str(tp.partition)).set(max(0, high - position))

    # -- group membership --------------------------------------------------------------------------------
    def _listener(self) -> ConsumerRebalanceListener:
        daemon = self

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                try:
                    daemon._on_revoked(revoked)
                except Exception:  # noqa: BLE001 - a failing listener must not break the group protocol
                    log.exception("checkpoint on revocation failed")

            def on_partitions_assigned(self, assigned):
                daemon._newly_assigned.update(assigned)
                log.info("assigned %s", sorted(f"{tp.topic}/{tp.partition}" for tp in assigned))

            def on_partitions_lost(self, lost):
                # another member owns them now: what was processed here after the last checkpoint is redone there
                for tp in lost:
                    daemon.next_offsets.pop((tp.topic, tp.partition), None)
                    try:
                        daemon.metrics.consumer_lag.remove(str(tp.partition))
                    except KeyError:
                        pass
                log.warning("lost %s", sorted(f"{tp.topic}/{tp.partition}" for tp in lost))

        return Listener()

    # -- lifecycle ----------------------------------------------------------------------------------------
    def request_stop(self) -> None:
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def start_metrics(self) -> int:
        self.metrics_server, _ = start_http_server(
            self.cfg.metrics_port, addr=self.cfg.metrics_host, registry=self.metrics.registry
        )
        self.metrics_port = self.metrics_server.server_port
        log.info("metrics on http://%s:%d/metrics", self.cfg.metrics_host, self.metrics_port)
        return self.metrics_port

    def _connect(self) -> bool:
        """Create the clients, retrying with backoff while the broker is unreachable."""
        backoff = 0.5
        while not self.stopping:
            try:
                common = {"bootstrap_servers": self.cfg.bootstrap_servers.split(",")}
                self._new_producer()
                consumer_settings = {"enable_auto_commit": False, "auto_offset_reset": "earliest",
                                     "max_poll_records": self.cfg.max_poll_records, **self.consumer_settings}  # fmt: skip
                self.consumer = KafkaConsumer(**common, group_id=self.cfg.group_id, **consumer_settings)
                self.consumer.subscribe([self.cfg.input_topic], listener=self._listener())
                log.info("connected to %s, group %s, topic %s", self.cfg.bootstrap_servers, self.cfg.group_id,
                         self.cfg.input_topic)  # fmt: skip
                return True
            except KafkaError as exc:
                self.metrics.broker_errors.inc()
                log.warning("cannot reach the brokers (%s: %s); retrying in %.1f s", type(exc).__name__, exc, backoff)
                for client in (self.producer, self.consumer):
                    if client is not None:
                        try:
                            client.close()
                        except Exception:  # noqa: BLE001
                            pass
                self.producer = self.consumer = None
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 30.0)
        return False

    def run(self) -> int:
        """Serve until :meth:`request_stop`; returns the process exit code."""
        if self.metrics_server is None:
            self.start_metrics()
        if not self._connect():
            return 0
        cfg = self.cfg
        try:
            while not self.stopping:
                try:
                    batch = self.consumer.poll(timeout_ms=cfg.poll_timeout_ms)
                except KafkaError as exc:
                    self._broker_trouble("polling", exc)
                    self._stop.wait(min(self._backoff, 1.0))
                    continue
                batch = self._seek_to_checkpoint(batch)
                for tp, records in batch.items():
                    for r in records:
                        self.process(tp.topic, tp.partition, r.offset, r.key, r.value)
                        self.next_offsets[(tp.topic, tp.partition)] = r.offset + 1
                        self._since_checkpoint += 1
                        self.n_processed += 1
                self._update_lag()
                due = self._since_checkpoint >= cfg.checkpoint_every or (
                    (self._since_checkpoint or self.next_offsets or self._pending)
                    and time.monotonic() - self._last_checkpoint >= cfg.checkpoint_interval
                )
                if due and time.monotonic() >= self._retry_at:
                    self.checkpoint_and_commit()
            ok = self.checkpoint_and_commit(timeout=max(1.0, cfg.shutdown_timeout / 2))
            log.info("stopping: final checkpoint %s", "written and committed" if ok else "FAILED")
            return 0 if ok else 1
        finally:
            self.close()

    def close(self) -> None:
        for name in ("consumer", "producer"):
            client = getattr(self, name)
            if client is not None:
                try:
                    client.close(timeout=5) if name == "producer" else client.close(autocommit=False)
                except Exception:  # noqa: BLE001 - closing is best effort
                    pass
                setattr(self, name, None)
        if self.metrics_server is not None:
            self.metrics_server.shutdown()
            self.metrics_server.server_close()
            self.metrics_server = None


def run_serve(args, parser=None) -> int:
    """Entry point of ``robustream serve``."""
    try:
        cfg = resolve(args)
    except ValueError as exc:
        print(f"robustream serve: error: {exc}", file=sys.stderr)
        return 2
    configure_logging(cfg.log_format, cfg.log_level)
    try:
        daemon = Daemon(cfg)
    except ValueError as exc:
        print(f"robustream serve: error: {exc}", file=sys.stderr)
        return 2

    def on_signal(signum, frame):
        if daemon.stopping:
            return
        log.info("signal %d: finishing the batch, then checkpoint, commit and exit", signum)
        daemon.request_stop()
        # bounded: if the graceful path hangs (e.g. broker gone), leave without it
        timer = threading.Timer(cfg.shutdown_timeout, lambda: os._exit(1))
        timer.daemon = True
        timer.start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        daemon.start_metrics()
    except OSError as exc:
        print(f"robustream serve: error: --metrics-port {cfg.metrics_port}: cannot listen ({exc.strerror})",
              file=sys.stderr)  # fmt: skip
        return 2
    return daemon.run()
