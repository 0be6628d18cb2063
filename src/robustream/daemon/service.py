"""``robustream serve``: the Kafka consumer daemon.

Loop: poll a batch -> decode and validate -> predict (and learn when labelled) -> produce
predictions and dead letters -> add the batch to the metrics -> (every ``--checkpoint-every``
messages or ``--checkpoint-interval`` seconds) flush -> checkpoint model + next offsets -> commit.
Offsets are stored in the checkpoint and sought on assignment (the larger of the checkpoint's and
the group's committed offset), so a restart resumes exactly where the last checkpoint left off:
at-least-once, with duplicates limited to what was processed after the last checkpoint.

Nothing here depends on a particular broker: it is plain kafka-python against any Kafka cluster.
"""

from __future__ import annotations

import collections
import errno
import functools
import json
import logging
import math
import os
import signal
import socket
import sys
import tempfile
import threading
import time
import zlib
from typing import Any, NamedTuple

from kafka import ConsumerRebalanceListener, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import (
    CommitFailedError,
    IllegalGenerationError,
    InvalidRecordError,
    InvalidTopicError,
    KafkaConfigurationError,
    KafkaError,
    MessageSizeTooLargeError,
    PolicyViolationError,
    RebalanceInProgressError,
    RecordListTooLargeError,
    TopicAuthorizationFailedError,
    UnknownMemberIdError,
)
from kafka.structs import OffsetAndMetadata
from prometheus_client import start_http_server

from ..learners.ordi import ORDIFilter
from ..learners.registry import learner_flags, make_learner, trial_learner
from ..validation import FeatureValueError
from .checkpoint import CheckpointStore, CheckpointUnreadable, FolderInUse
from .clients import QuietWhileClosing, close_client
from .state import StateError, decode_state, encode_state
from .codec import InvalidMessage, LabelSpace, dead_letter, decode_message, encode_json, encode_prediction
from .config import ServeConfig, resolve
from .metrics import BatchTally, DaemonMetrics

log = logging.getLogger("robustream.daemon")

_TOO_LARGE = (MessageSizeTooLargeError, RecordListTooLargeError)  # refused for its size: re-sending cannot help
# refused for what the record is or where it goes (no write permission on the topic, a broker-side policy, a
# record the topic cannot take such as a null key on a compacted topic): no producer or retry can help
_REFUSED = _TOO_LARGE + (TopicAuthorizationFailedError, InvalidRecordError, PolicyViolationError, InvalidTopicError)
# a commit refused because the group is rebalancing or this member was replaced: the checkpoint holds the offsets
_MEMBERSHIP_ERRORS = (CommitFailedError, RebalanceInProgressError, IllegalGenerationError, UnknownMemberIdError)
# A fetch's high watermark below the position must last this long (Kafka's replica.lag.time.max.ms), and
# the partition leader's end offset must not contradict it, before the partition counts as re-created or
# truncated: a newly elected leader, or a follower read with client_rack, reports a high watermark behind
# the end for a while.
PAST_END_SECONDS = 30.0
# After this long without an answer from the brokers (no records fetched, no offsets committed: an idle
# topic, or brokers that hang, where kafka-python's poll returns nothing and raises nothing) the daemon asks
# a partition leader for its end offset, waiting at most PROBE_TIMEOUT_MS
CONTACT_PROBE_SECONDS = 30.0
PROBE_TIMEOUT_MS = 5000
OUTLIER_THRESHOLD = 1.0  # margin units on the wrong side beyond which a labelled message is flagged
# Output producer settings that --kafka-option may override. Fewer, larger produce requests: kafka-python
# pays for each request and each sender wake-up while the message loop waits for the GIL; an output
# waits at most linger_ms (every checkpoint flushes). acks is not among them: outputs count as
# produced (and their inputs may be committed) only once every in-sync replica has them.
PRODUCER_DEFAULTS = {"linger_ms": 20, "batch_size": 65536}


def _mark(record) -> list[int]:
    """What tells a record from another at the same offset of a re-created partition."""
    timestamp = record.timestamp if record.timestamp is not None else -1  # none in message format v0
    return [int(timestamp), zlib.crc32(record.value or b"")]


def _log_resume(tp: TopicPartition, target: int, position: int) -> None:
    log.info("%s/%d: resuming at checkpoint offset %d (group offset %d)", tp.topic, tp.partition, target, position)


class ClientSettingsError(ValueError):
    """kafka-python refused the client settings (a bad ``--kafka-option`` combination)."""


class _Output(NamedTuple):
    """One output record queued for the broker, and the input message it answers."""

    future: Any  # the producer's future; None until handed to a producer that accepted it
    topic: str
    key: bytes | None
    value: bytes
    source: tuple[str, int, int]  # input topic, partition, offset
    minimal: bool  # a dead letter that replaced an output too large to send


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
    # the learners' warnings (a failed rebuild, a fraction that discards most of a class) as log lines of the
    # same format: printed by Python, they broke the JSON log's one object per line
    logging.captureWarnings(False)  # (re)installed: a capture left on by an earlier call may have been undone since
    logging.captureWarnings(True)
    py_warnings = logging.getLogger("py.warnings")
    py_warnings.handlers[:] = [handler]
    py_warnings.setLevel(level.upper())
    py_warnings.propagate = False
    kafka_log = logging.getLogger("kafka")
    kafka_handler = logging.StreamHandler(sys.stderr)
    kafka_handler.setFormatter(handler.formatter)
    kafka_handler.addFilter(QuietWhileClosing())
    if level.upper() != "DEBUG":
        # an unreachable broker makes kafka-python log the same connection error several times a second,
        # which buries the daemon's own one-line warnings: each kind once per REPEAT_SECONDS
        kafka_handler.addFilter(_OncePer(REPEAT_SECONDS))
    kafka_log.handlers[:] = [kafka_handler]
    kafka_log.setLevel(logging.ERROR if level.upper() != "DEBUG" else logging.INFO)
    kafka_log.propagate = False


REPEAT_SECONDS = 60.0


class _OncePer(logging.Filter):
    """Lets a record through once per ``seconds`` for each kind: logger, message template and the types
    of the errors among its arguments (kafka-python shares templates such as "Error sending %s to node
    %s [%s]" between errors). The next one let through says how many were held back."""

    def __init__(self, seconds: float):
        super().__init__()
        self.seconds = seconds
        self._last: dict[tuple, float] = {}
        self._held: dict[tuple, int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        key = (record.name, str(record.msg), tuple(type(a).__name__ for a in args if isinstance(a, BaseException)))
        now = time.monotonic()
        if now - self._last.get(key, -math.inf) < self.seconds:
            self._held[key] = self._held.get(key, 0) + 1
            return False
        if len(self._last) > 1000:  # kinds are few; this only bounds a pathological logger
            self._last.clear()
            self._held.clear()
        self._last[key] = now
        held = self._held.pop(key, 0)
        if held:
            record.msg = f"{record.msg} ({held} more like this in the last {self.seconds:.0f} s not shown)"
        return True


class _RateLimitedLog:
    """A logger's ``warning``/``error``/``exception`` through :class:`_OncePer`: each message template once per
    ``seconds``."""

    def __init__(self, logger: logging.Logger, seconds: float):
        self._logger = logger
        self._once = _OncePer(seconds)

    def _log(self, level: int, msg: str, *args: Any, exc_info: Any = None, fields: dict | None = None) -> None:
        if not self._logger.isEnabledFor(level):
            return
        extra = None if fields is None else {"fields": fields}  # the JSON log's own keys
        record = self._logger.makeRecord(self._logger.name, level, "(daemon)", 0, msg, args, exc_info, extra=extra)
        if self._once.filter(record):
            self._logger.handle(record)

    def exception(self, msg: str, *args: Any, fields: dict | None = None) -> None:
        """``error`` with the traceback of the exception being handled."""
        self._log(logging.ERROR, msg, *args, exc_info=sys.exc_info(), fields=fields)

    def warning(self, msg: str, *args: Any, fields: dict | None = None) -> None:
        self._log(logging.WARNING, msg, *args, fields=fields)

    def error(self, msg: str, *args: Any, fields: dict | None = None) -> None:
        self._log(logging.ERROR, msg, *args, fields=fields)


def describe(exc: BaseException) -> str:
    """``Type: message``, once: kafka-python's errors already start their text with their type's name."""
    text = str(exc)
    name = type(exc).__name__
    return text if text.startswith(name) else f"{name}: {text}" if text else name


def _split_client_settings(settings: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    consumer, producer = {}, {}
    for key, value in settings.items():
        if key == "acks" and value not in ("all", -1):
            raise ValueError(f"--kafka-option acks={value}: the daemon produces with acks=all (at-least-once)")
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


def _sample_filters(model: Any) -> list[ORDIFilter] | None:
    """The :class:`~robustream.learners.ORDIFilter` s of ``model`` (itself, or a one-vs-rest model's
    members, one per class learned so far), None when it is none. A filter flags the labelled samples
    it keeps back from its classifier (no rebuilds, no margin); its ``outlier_rate_`` is their share of
    the recent ones."""
    if isinstance(model, ORDIFilter):
        return [model]
    members = getattr(model, "classifiers", None)
    if isinstance(getattr(model, "classifier", None), ORDIFilter) and isinstance(members, dict):
        return list(members.values())
    return None


def _filter_of(model: Any, label: Any) -> ORDIFilter | None:
    """The filter that decides on a sample of ``label`` (a one-vs-rest model: that class's member)."""
    return model if isinstance(model, ORDIFilter) else model.classifiers.get(label)


def _members_may_change(model: Any) -> bool:
    """Whether learning can add binary learners to ``model`` (a one-vs-rest model adds one per new class)."""
    while model is not None and not hasattr(model, "margin_width_"):
        if isinstance(getattr(model, "classifiers", None), dict):
            return True
        model = getattr(model, "classifier", None)
    return False


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
        # the learner and its parameters first: a usage error leaves nothing on disk (no folder, no lock)
        fresh_model = self._checked_new_model()
        try:
            self.store = CheckpointStore(cfg.checkpoint_dir, cfg.checkpoint_keep, exclusive=True)
            with tempfile.TemporaryFile(dir=cfg.checkpoint_dir):  # writable: found now, not at the first checkpoint
                pass
        except FolderInUse as exc:
            raise ValueError(f"{self._checkpoint_flag}: {exc}") from None
        except OSError as exc:
            problem = "a file, not a folder" if os.path.isfile(cfg.checkpoint_dir) else exc.strerror or str(exc)
            raise ValueError(f"{self._checkpoint_flag}: cannot keep checkpoints there ({problem})") from None
        try:
            self._fell_back = False
            self._last_rebuild_at: float | None = None  # Unix time of the last successful rebuild (checkpointed)
            # after a fallback to an older checkpoint: the partitions this member may take back to that
            # checkpoint's offsets, each decided once (see _seek_to_checkpoint)
            self._rewind: set[tuple[str, int]] = set()
            self._own_commits = self.store.load_commits()  # what this daemon last committed, per partition
            self._failed_step = ""
            self._stop = threading.Event()
            self.consumer: KafkaConsumer | None = None
            self.producer: KafkaProducer | None = None
            self.metrics_server = None
            self.metrics_port: int | None = None
            # which record sits just before each checkpointed offset: [timestamp, crc32 of the value]; a
            # partition whose record there differs was re-created (see _seek_to_checkpoint)
            self.checkpoint_marks: dict[tuple[str, int], list[int]] = {}
            self._last_marks: dict[tuple[str, int], list[int]] = {}  # of the last record processed per partition
            self._verifying: dict[TopicPartition, tuple[int, int]] = {}  # partition -> (checkpoint offset, group's)
            self._past_end_since: dict[TopicPartition, float] = {}  # position seen past the fetch's high watermark
            self._lag_labels: set[str] = set()  # partitions with a consumer-lag gauge
            self._commit_error: KafkaError | None = None
            self._refusals = _RateLimitedLog(log, REPEAT_SECONDS)  # a topic refusing everything: one line a minute
            self._failures = _RateLimitedLog(log, REPEAT_SECONDS)
            self.model, self.checkpoint_offsets = self._restore(fresh_model)
            self.next_offsets: dict[tuple[str, int], int] = {}  # processed, not yet checkpointed
            self._pending: list[_Output] = []  # sends not yet confirmed
            self._producer_failed = False  # to be replaced once its records in flight are settled
            self._newly_assigned: set[TopicPartition] = set()
            self._since_checkpoint = 0
            self._last_checkpoint = time.monotonic()
            self._last_contact = self._last_probe = time.monotonic()  # (the gauge starts at the start, too)
            self._retry_at = 0.0
            self._backoff = 0.5
            self._recent = collections.deque(maxlen=cfg.accuracy_window)
            self._recent_correct = 0
            self._tally = BatchTally()  # the current poll batch's metric updates (DaemonMetrics.publish)
            self._decode = functools.partial(decode_message, labels=self.labels, max_bytes=cfg.max_message_bytes,
                                             max_features=cfg.max_features)  # fmt: skip
            self._parts = _binary_parts(self.model)  # looked up per message only when they may change
            self._parts_may_change = _members_may_change(self.model)
            self._filtering = _sample_filters(self.model) is not None
            self.n_processed = 0
            self.n_learned = getattr(self, "_restored_learned", 0)
            self._publish_model_gauges()
        except BaseException:  # a half-made daemon lets go of the folder (a test may make the next one)
            self.store.release()
            raise

    # -- model -----------------------------------------------------------------------------------
    def _learner_meta(self) -> dict:
        return {"learner": self.cfg.learner, "params": self.cfg.learner_params, "labels": self.labels.values}

    @property
    def _checkpoint_flag(self) -> str:
        """How messages name the checkpoint folder: the flag, its value and where it came from."""
        return f"--checkpoint-dir {self.cfg.checkpoint_dir}{self.cfg.came_from('checkpoint_dir')}"

    def _new_model(self) -> Any:
        return make_learner(self.cfg.learner, self.cfg.learner_params, multiclass=not self.labels.binary)

    def _restore(self, fresh_model: Any) -> tuple[Any, dict[tuple[str, int], int]]:
        """The newest readable checkpoint's model and offsets, else ``fresh_model`` and none."""
        def corrupt(path, reason):
            self.metrics.checkpoint_fallbacks.inc()
            self._fell_back = True

        try:
            ckpt = self.store.load_latest(on_corrupt=corrupt)
        except CheckpointUnreadable as exc:
            raise ValueError(f"{self._checkpoint_flag}: {exc}") from None
        if ckpt is None:
            model = fresh_model
            log.info("no checkpoint in %s: starting a new %s model", self.cfg.checkpoint_dir, self.cfg.learner)
            return model, {}
        made_by = {k: ckpt.meta.get(k) for k in ("learner", "params", "labels")}
        if made_by != json.loads(json.dumps(self._learner_meta())):
            raise ValueError(
                f"{self._checkpoint_flag}: the checkpoint was made with {made_by}, not with "
                f"{self._learner_meta()}; use the same settings or another checkpoint directory"
            )
        log.info("restored %s (%d partition offsets)", ckpt.path, len(ckpt.offsets))
        self._restored_learned = int(ckpt.meta.get("samples_learned", 0))
        last_rebuild = ckpt.meta.get("last_rebuild_at")  # absent from checkpoints written before it was kept
        if isinstance(last_rebuild, (int, float)) and not isinstance(last_rebuild, bool) and math.isfinite(last_rebuild):
            # else the gauge reads 0 after every restart until the next rebuild ("56 years since the last one")
            self._last_rebuild_at = float(last_rebuild)
            self.metrics.last_rebuild.set(self._last_rebuild_at)
        if self._fell_back:
            self._rewind = set(ckpt.offsets)
        self.checkpoint_marks = {(str(t), int(p)): [int(ts), int(crc)]
                                 for t, p, ts, crc in ckpt.meta.get("last_records", [])}  # fmt: skip
        return ckpt.model, dict(ckpt.offsets)

    def _checked_new_model(self) -> Any:
        """A new model, once it has shown that it can learn, predict and be checkpointed: a learner
        parameter of the wrong type, or a model whose state could not be loaded back, stops the
        daemon at start-up (exit 2) instead of failing every labelled message or every restart."""
        where = learner_flags(self.cfg.learner, self.cfg.values["param"]) + self.cfg.came_from("learner", "param")
        try:
            model = self._new_model()
            trial = trial_learner(self.cfg.learner, self.cfg.learner_params, self.labels.to_internal(self.labels.values[0]),
                                  multiclass=not self.labels.binary)  # fmt: skip
        except (ValueError, TypeError) as exc:  # a parameter the learner refuses, at once or on a first message
            raise ValueError(f"{where}: {exc}") from None
        try:
            decode_state(encode_state(trial))
        except StateError as exc:
            raise ValueError(f"{where}: the model cannot be checkpointed ({exc})") from None
        return model

    def _model_version(self, parts: list | None = None) -> int:
        """Rebuilds of the robustream learners in the model, else the number of samples learned."""
        parts = _binary_parts(self.model) if parts is None else parts
        return int(sum(p.n_rebuilds_ for p in parts)) if parts else self.n_learned

    def _rebuild_counts(self, parts: list | None = None) -> tuple[int, int, int]:
        """(successful, failed) rebuilds and concept drifts found: a change means the last message
        triggered one (a drift is found as a rebuild starts, which with rebuild_lag is not when it is applied)."""
        parts = _binary_parts(self.model) if parts is None else parts
        return (sum(p.n_rebuilds_ for p in parts), sum(p.n_failed_rebuilds_ for p in parts),
                sum(getattr(p, "n_drifts_", 0) for p in parts))

    def _publish_model_gauges(self) -> None:
        parts = _binary_parts(self.model)
        m = self.metrics
        if parts:
            m.margin_width.set(sum(p.margin_width_ for p in parts) / len(parts))
            m.outlier_rate.set(sum(p.outlier_rate_ for p in parts) / len(parts))
            m.coreset_rows.set(sum(len(p._buffer.coreset) for p in parts))
        elif self._filtering:
            self._publish_filter_rate()
        m.model_version.set(self._model_version(parts))

    def _publish_filter_rate(self) -> None:
        filters = _sample_filters(self.model)
        if filters:
            self.metrics.outlier_rate.set(sum(f.outlier_rate_ for f in filters) / len(filters))

    # -- one poll batch, one message ------------------------------------------------------------------
    def process_batch(self, batch: dict[TopicPartition, list]) -> int:
        """Process every record of one poll in order, then add the batch to the metrics; returns its size.

        Each message's duration (decode .. output queued, one clock reading per message) goes to
        robustream_process_duration_seconds, or to robustream_rebuild_duration_seconds when learning
        it rebuilt the model.
        """
        clock = time.perf_counter
        process = self.process
        tally = self._tally
        durations, rebuild_durations = tally.process_seconds, tally.rebuild_seconds
        n = 0
        start = clock()
        for tp, records in batch.items():
            if not records:
                continue
            topic, partition = tp.topic, tp.partition
            for r in records:
                rebuilt = process(topic, partition, r.offset, r.key, r.value)
                end = clock()
                (rebuild_durations if rebuilt else durations).append(end - start)
                start = end
            last = records[-1]
            self.next_offsets[(topic, partition)] = last.offset + 1
            self._last_marks[(topic, partition)] = _mark(last)
            n += len(records)
        if tally.samples_learned:
            tally.accuracy = self._recent_correct / len(self._recent)
            if not (_binary_parts(self.model) if self._parts_may_change else self._parts):
                self.metrics.model_version.set(self.n_learned)  # no rebuilding learner: samples learned
            if self._filtering:
                self._publish_filter_rate()
        self._tally = self.metrics.publish(tally)
        self._since_checkpoint += n
        self.n_processed += n
        return n

    def process(self, topic: str, partition: int, offset: int, key: bytes | None, raw: bytes | None) -> bool:
        """Decode, predict, learn, and queue the output record of one input message; counts it in the
        batch tally. True when learning it completed a rebuild (successfully or not); a concept drift found
        as a background rebuild starts (``rebuild_lag``) is not one: that rebuild completes later."""
        tally = self._tally
        try:
            msg = self._decode(raw)
        except InvalidMessage as exc:
            self._dead_letter(raw, key, (topic, partition, offset), str(exc), "invalid")
            return False
        parts = _binary_parts(self.model) if self._parts_may_change else self._parts
        before = self._rebuild_counts(parts) if parts else (0, 0, 0)
        try:
            out, outcome = self._predict_and_learn(msg, parts)
        except FeatureValueError as exc:  # a value the learner cannot take (1e200 for a solve): invalid input
            self._dead_letter(raw, key, (topic, partition, offset), f"field 'x': {exc}", "invalid")
            return False
        except Exception as exc:  # noqa: BLE001 - the daemon never crashes on input
            # one traceback a minute per kind: a producer sending what always fails must not flood the log
            self._failures.exception("processing message %s at %s/%d/%d failed: %s", msg.id, topic, partition, offset,
                                     exc, fields={"event": "processing_failed", "id": msg.id, "topic": topic,
                                                  "partition": partition, "offset": offset, "error": describe(exc)})
            self._dead_letter(raw, key, (topic, partition, offset), f"processing failed: {type(exc).__name__}: {exc}",
                              "dead_letter")  # fmt: skip
            return False
        self._send(self.cfg.predictions_topic, key, out, (topic, partition, offset))
        tally.outcomes[outcome] += 1
        if self._parts_may_change:
            parts = _binary_parts(self.model)  # a one-vs-rest model may have grown a member
        if not parts:
            return False
        after = self._rebuild_counts(parts)
        if after == before:
            return False
        tally.rebuild_failures += after[1] - before[1]
        if after[2] > before[2]:
            tally.drifts += after[2] - before[2]
            log.warning("concept drift at %s/%d/%d: the model's error rose, so its coreset and older window rows "
                        "were dropped (%d drift(s) since the model was created)", topic, partition, offset, after[2],
                        extra={"fields": {"event": "concept_drift", "topic": topic, "partition": partition,
                                          "offset": offset, "drifts": after[2]}})  # fmt: skip
        self._publish_model_gauges()
        if after[0] != before[0]:
            self._last_rebuild_at = time.time()
            self.metrics.last_rebuild.set(self._last_rebuild_at)
        return after[:2] != before[:2]

    def _dead_letter(self, raw: bytes | None, key: bytes | None, source: tuple[str, int, int], error: str,
                     outcome: str) -> None:
        """Queue the dead letter of the input message at ``source`` (topic, partition, offset) and count its
        outcome (``invalid`` or ``dead_letter``)."""
        topic, partition, offset = source
        record = dead_letter(raw, error=error, topic=topic, partition=partition, offset=offset)
        self._send(self.cfg.dead_letter_topic, key, encode_json(record), source)
        self._tally.outcomes[outcome] += 1

    def _predict_and_learn(self, msg, parts: list) -> tuple[bytes, str]:
        """The encoded prediction record and the outcome (ok: labelled and learned; predict_only).

        The output is encoded before learning, so a message that fails either way is neither
        learned nor counted (it goes to the dead-letter topic). With ORDI it is encoded again
        after learning, with only ``outlier`` changed (the filter decides as it learns); that
        second encoding takes the values the first accepted, so it cannot fail.
        """
        model = self.model
        labels = self.labels
        x = msg.x
        proba = model.predict_proba_one(x)
        pred = max(proba, key=proba.get) if proba else model.predict_one(x)
        margin = -float(parts[0].outlier_score_one(x, True)) if parts and labels.binary else None
        if margin is not None and not math.isfinite(margin):
            margin = None  # huge feature values overflow w.x; JSON has no infinity
        p_pred = float(proba[pred]) if proba and pred in proba else None
        if p_pred is not None and not math.isfinite(p_pred):
            p_pred = None
        y_pred = labels.to_external(pred)
        version = self._model_version(parts)
        if msg.y is None:
            return encode_prediction(msg.id, y_pred, p_pred, margin, version), "predict_only"
        target = labels.to_internal(msg.y)
        score = None
        if margin is not None:
            score = -margin if target else margin  # = outlier_score_one(x, target)
        elif parts:
            member = getattr(model, "classifiers", {}).get(target)
            if member is not None:
                score = float(member.outlier_score_one(x, True))
        outlier = None if score is None else bool(score > OUTLIER_THRESHOLD)
        out = encode_prediction(msg.id, y_pred, p_pred, margin, version, outlier=outlier)
        judge = _filter_of(model, target) if self._filtering else None
        kept_back = judge.n_skipped_ if judge is not None else 0
        model.learn_one(x, target)
        if self._filtering:  # the filter decides as it learns: a sample it kept back is its outlier
            judge = _filter_of(model, target)  # one-vs-rest: a class's member is made with its first sample
            outlier = judge is not None and judge.n_skipped_ > kept_back
            out = encode_prediction(msg.id, y_pred, p_pred, margin, version, outlier=outlier)
        tally = self._tally
        tally.samples_learned += 1
        if outlier:
            tally.outliers += 1
        correct = y_pred == msg.y
        recent = self._recent
        if len(recent) == recent.maxlen:
            self._recent_correct -= recent[0]
        recent.append(correct)
        self._recent_correct += correct
        self.n_learned += 1
        return out, "ok"

    # -- output and offsets --------------------------------------------------------------------------
    def _send(self, topic: str, key: bytes | None, value: bytes, source: tuple[str, int, int],
              minimal: bool = False) -> None:  # fmt: skip
        """Queue one output record of the input message at ``source`` (topic, partition, offset); it
        stays in ``_pending`` until the broker acknowledged it."""
        try:
            future = self.producer.send(topic, key=key, value=value)
        except _REFUSED as exc:  # never sendable as it is
            self._replace_refused(_Output(None, topic, key, value, source, minimal), exc)
            return
        except KafkaError as exc:  # no metadata yet, buffer full, closed producer: the next flush re-sends
            log.debug("send to %s deferred: %s", topic, exc)
            future = None
        self._pending.append(_Output(future, topic, key, value, source, minimal))

    def _replace_refused(self, output: _Output, exc: Exception) -> None:
        """An output the producer or the broker refuses for good: for its size (a huge key, or a small
        ``--kafka-option max_request_size``), or for its topic (no permission, a policy). A minimal dead
        letter (no copy of the message; its key only up to 1 KiB) stands for its input instead, so that
        offset is still accounted for (counted in ``robustream_outputs_replaced_total``); a dead letter
        refused in turn is dropped and counted (``robustream_outputs_dropped_total``), so that the
        offsets move on."""
        in_topic, partition, offset = output.source
        why = "too large" if isinstance(exc, _TOO_LARGE) else "refused by the broker"
        fields = {"topic": in_topic, "partition": partition, "offset": offset, "output_topic": output.topic,
                  "error": describe(exc)}  # fmt: skip
        if output.minimal or output.topic == self.cfg.dead_letter_topic and not isinstance(exc, _TOO_LARGE):
            self._refusals.error("output of %s/%d/%d to %s dropped: %s (%s)", in_topic, partition, offset,
                                 output.topic, why, describe(exc), fields={"event": "output_dropped", **fields})
            self.metrics.outputs_dropped.inc()
            return
        self._refusals.warning("output of %s/%d/%d to %s %s (%s): dead-lettered instead", in_topic, partition, offset,
                               output.topic, why, describe(exc), fields={"event": "output_replaced", **fields})
        self.metrics.outputs_replaced.inc()
        record = dead_letter(None, error=f"output record {why}: {describe(exc)}", topic=in_topic, partition=partition,
                             offset=offset)  # fmt: skip
        key = output.key if output.key is None or len(output.key) <= 1024 else None
        self._send(self.cfg.dead_letter_topic, key, encode_json(record), output.source, minimal=True)

    def _flush_outputs(self, timeout: float, replace_producer: bool = True) -> None:
        """Block until every queued output is acknowledged, re-sending failures; raises KafkaError.

        A record leaves ``_pending`` only once acknowledged, so whatever raises here, nothing that was
        queued can be checkpointed or committed without its output. A record still in flight keeps
        its future: sending it again would duplicate it once the broker answers.
        """
        deadline = time.monotonic() + timeout
        while self._pending:
            try:
                self.producer.flush(timeout=max(0.1, deadline - time.monotonic()))
            except KafkaError:
                pass  # the records still unacknowledged are found below
            outputs, self._pending = self._pending, []
            kept, errors = [], set()
            for output in outputs:
                future = output.future
                if future is not None and not future.is_done:
                    kept.append(output)  # in flight
                elif future is None:
                    kept.append(output)  # never handed to a producer
                elif future.failed():
                    if isinstance(future.exception, _REFUSED):
                        self._replace_refused(output, future.exception)  # queues its dead letter
                        continue
                    errors.add(type(future.exception).__name__)
                    kept.append(output._replace(future=None))
            self._pending = kept + self._pending
            if not self._pending:
                return
            if errors and replace_producer:
                # e.g. UnknownProducerIdError after a broker lost its state: this producer will not recover
                n_failed = sum(output.future is None for output in self._pending)
                log.warning("%d output records failed (%s): they go again on a new producer", n_failed,
                            ", ".join(sorted(errors)))  # fmt: skip
                self._producer_failed = True
            # replaced only once nothing is in flight on it: a replaced producer's futures are never flushed
            if self._producer_failed and replace_producer and all(o.future is None for o in self._pending):
                self._new_producer()  # raises KafkaError while the brokers are unreachable; records stay queued
                self._producer_failed = False
            if time.monotonic() >= deadline:
                raise KafkaError(f"{len(self._pending)} output records not acknowledged within {timeout:.1f} s")
            if self._producer_failed:
                continue  # the next flush waits for the records in flight
            retry = [output for output in self._pending if output.future is None]
            self._pending = [output for output in self._pending if output.future is not None]
            for n_sent, output in enumerate(retry):
                if time.monotonic() >= deadline:  # a send may block (max_block_ms): the rest stays queued
                    self._pending.extend(retry[n_sent:])
                    break
                self._send(output.topic, output.key, output.value, output.source, output.minimal)

    def _new_producer(self) -> None:
        """Build a new producer, then swap it in and close the old one (the old one stays if building fails)."""
        settings = {**PRODUCER_DEFAULTS, **self.producer_settings, "acks": "all"}
        fresh = KafkaProducer(bootstrap_servers=self.cfg.bootstrap_servers.split(","), **settings)
        old, self.producer = self.producer, fresh
        if old is not None:
            close_client(old, timeout=1)

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
            previous_offsets, previous_marks = dict(self.checkpoint_offsets), dict(self.checkpoint_marks)
            self.checkpoint_offsets.update(self.next_offsets)
            self.checkpoint_marks.update({key: self._last_marks[key] for key in self.next_offsets})
            start = time.perf_counter()
            marks = sorted([t, p, *mark] for (t, p), mark in self.checkpoint_marks.items()
                           if (t, p) in self.checkpoint_offsets)  # fmt: skip
            meta = {**self._learner_meta(), "saved_at": time.time(), "model_version": self._model_version(),
                    "samples_learned": self.n_learned, "last_records": marks,
                    "last_rebuild_at": self._last_rebuild_at}  # fmt: skip
            try:
                self.store.save(self.model, self.checkpoint_offsets, meta)
            except (OSError, ValueError) as exc:  # ValueError: StateError, or a value JSON cannot hold
                # nothing is committed without its checkpoint: keep processing, retry at the next one
                then = "not retried: stopping" if self.stopping else f"retrying in {self._backoff:.1f} s"
                log.error("cannot write a checkpoint to %s: %s; %s", self.cfg.checkpoint_dir, exc, then,
                          extra={"fields": {"event": "checkpoint_failed", "error": str(exc),
                                            "checkpoint_dir": str(self.cfg.checkpoint_dir)}})  # fmt: skip
                self._failed_step = "writing the checkpoint"
                self.metrics.checkpoint_failures.inc()
                # not at every poll: each try encodes the whole model, and a full disk stays full for a while
                self._retry_at = time.monotonic() + self._backoff
                self._backoff = min(self._backoff * 2, 30.0)
                self.checkpoint_offsets, self.checkpoint_marks = previous_offsets, previous_marks
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
                self._commit_error = exc
                self._broker_trouble("committing offsets", exc)
                return False
            self._record_commits(to_commit)
            self.next_offsets.clear()
            self._brokers_answered()
        self._backoff = 0.5
        self.metrics.last_commit.set(time.time())
        return True

    def _brokers_answered(self) -> None:
        self._last_contact = time.monotonic()
        self.metrics.broker_contact.set(time.time())

    def _probe_brokers(self) -> None:
        """After ``CONTACT_PROBE_SECONDS`` without an answer from the brokers, ask the leader of a partition
        (an assigned one, else the input topic's first) for its end offset: an answer renews
        ``robustream_broker_last_contact_timestamp_seconds``; none within ``PROBE_TIMEOUT_MS`` counts a broker
        error and logs (once a minute). Brokers that hang are otherwise silent: kafka-python's poll returns
        nothing and raises nothing, and the lag gauge keeps its last value."""
        now = time.monotonic()
        if self.consumer is None or now - max(self._last_contact, self._last_probe) < CONTACT_PROBE_SECONDS:
            return
        self._last_probe = now
        assigned = sorted(self.consumer.assignment())
        tp = assigned[0] if assigned else TopicPartition(self.cfg.input_topic, 0)
        try:
            self.consumer.end_offsets([tp], timeout_ms=PROBE_TIMEOUT_MS)
        except (KafkaError, AssertionError, ValueError, TypeError) as exc:
            # (also when the input topic does not exist and nothing is assigned: kafka-python then waits for its
            # metadata until the timeout; such a member has nothing to do either)
            self.metrics.broker_errors.inc()
            silent = time.monotonic() - self._last_contact
            self._refusals.warning("broker trouble: no answer from the brokers for %.0f s (asked for the end of %s/%d: "
                                   "%s)", silent, tp.topic, tp.partition, describe(exc),
                                   fields={"event": "broker_unanswered", "seconds": round(silent, 1),
                                           "topic": tp.topic, "partition": tp.partition, "error": describe(exc)})
            return
        self._brokers_answered()

    def _on_revoked(self, revoked) -> None:
        # Runs inside poll (on kafka-python's IO thread in 3.x, where blocking consumer calls are not
        # allowed): flush + checkpoint are local or the producer's; the commit is asynchronous. If that
        # commit loses the race with the rebalance, the next owner redoes at most one checkpoint interval.
        if self.next_offsets or self._pending:
            # on the IO thread heartbeats wait for us: short, and no new producer (its bootstrap blocks)
            to_commit = self._flush_and_checkpoint(min(2.0, self._flush_timeout), replace_producer=False)
            # never a partition revoked before (kept in next_offsets by a flush that failed then): its
            # new owner may have committed past it since
            owned = set(revoked) | set(self.consumer.assignment())
            to_commit = {tp: om for tp, om in (to_commit or {}).items() if tp in owned}
            if to_commit:
                self.consumer.commit_async(offsets=to_commit)
                self._record_commits(to_commit)  # if this commit is lost, the group's offset is not ours
                self.next_offsets.clear()
        for tp in revoked:
            # flushed or not, not this member's to commit any more (its outputs still flush later)
            self.next_offsets.pop((tp.topic, tp.partition), None)
            self._past_end_since.pop(tp, None)
            self._verifying.pop(tp, None)
        self._drop_lag_gauges({str(tp.partition) for tp in revoked})

    def _seek_to_checkpoint(self, batch: dict) -> dict:
        """For newly assigned partitions, skip ahead to the checkpoint's offset when the group's committed
        offset is behind it (a crash between checkpoint and commit), or go back to it after a fallback to an
        older checkpoint when the group's offset is this daemon's own last commit (so that the model learns
        what it missed; another member's work stands); drops the records fetched before.

        Decided on the first records fetched from the partition, whose high watermark tells whether the
        checkpoint's offset exists at all: a partition shorter than the checkpoint was re-created or
        truncated, and is then read from the group's offset instead. So is one whose record just before
        the checkpoint's offset is not the one processed there (its timestamp and value checksum are in
        the checkpoint): a partition re-created and refilled past that offset.
        """
        for tp in list(self._newly_assigned):
            records = batch.get(tp)
            if not records:
                continue  # nothing fetched yet, so nothing would be redone
            self._newly_assigned.discard(tp)
            key = (tp.topic, tp.partition)
            may_rewind = key in self._rewind
            self._rewind.discard(key)  # decided once
            target = self.checkpoint_offsets.get(key)
            position = records[0].offset
            if target is None or position == target:
                continue
            if position > target and not (may_rewind and self._own_commits.get(key) == position):
                continue  # ahead, and not by this daemon's own commits since the restored checkpoint
            # behind: the group's commit trails this checkpoint. Ahead after a fallback to an older
            # checkpoint: redo the messages the restored model has not learned (their outputs repeat).
            high = self.consumer.highwater(tp)
            if high is not None and target > high:
                high = self._end_offset(tp) or high  # the leader's word: a follower's high watermark may trail
            if high is not None and target > high:
                log.warning("%s/%d: checkpoint offset %d is past the end of the partition (%d): re-created or "
                            "truncated? reading from offset %d", tp.topic, tp.partition, target, high, position)  # fmt: skip
                self._forget_checkpoint(key)
                continue
            mark = self.checkpoint_marks.get(key)
            before = next((r for r in records if r.offset == target - 1), None)
            if mark is not None and before is None and target >= 1:
                # is the record before the checkpoint's offset the one processed? Fetch it first.
                self.consumer.seek(tp, target - 1)
                batch.pop(tp, None)
                self._verifying[tp] = (target, position)
                continue
            if mark is not None and before is not None and _mark(before) != mark:
                self._recreated(tp, target, position)
                continue  # the records fetched from the group's offset are processed
            self.consumer.seek(tp, target)
            batch.pop(tp, None)
            _log_resume(tp, target, position)
        for tp in list(self._verifying):
            records = batch.get(tp)
            if not records:
                continue
            target, position = self._verifying.pop(tp)
            mark = self.checkpoint_marks.get((tp.topic, tp.partition))
            # a first record before the one asked for: the partition changed under us (re-created or
            # truncated and refilled between the two fetches)
            changed = records[0].offset < target - 1 or (records[0].offset == target - 1 and mark is not None
                                                          and _mark(records[0]) != mark)  # fmt: skip
            if changed:
                self._recreated(tp, target, position)
                self.consumer.seek(tp, position)  # back to the group's offset
                batch.pop(tp)
                continue
            # the record checkpointed (or, in a compacted partition, none to compare): resume after it
            kept = [r for r in records if r.offset >= target]
            if kept:
                batch[tp] = kept
            else:
                batch.pop(tp)
            _log_resume(tp, target, position)
        return batch

    def _recreated(self, tp: TopicPartition, target: int, position: int) -> None:
        log.warning("%s/%d: the record before checkpoint offset %d is not the one processed: the partition was "
                    "re-created; reading from offset %d", tp.topic, tp.partition, target, position)  # fmt: skip
        self._forget_checkpoint((tp.topic, tp.partition))

    def _forget_checkpoint(self, key: tuple[str, int]) -> None:
        self.checkpoint_offsets.pop(key, None)
        self.checkpoint_marks.pop(key, None)

    def _record_commits(self, committed: dict) -> None:
        self._own_commits.update({(tp.topic, tp.partition): om.offset for tp, om in committed.items()})
        try:
            self.store.save_commits(self._own_commits)
        except OSError as exc:
            log.warning("cannot record the committed offsets in %s: %s", self.cfg.checkpoint_dir, exc)

    def _broker_trouble(self, what: str, exc: Exception) -> None:
        self._failed_step = what
        self.metrics.broker_errors.inc()
        self._retry_at = time.monotonic() + self._backoff
        log.warning("broker trouble while %s (%s); retrying in %.1f s", what, describe(exc), self._backoff,
                    extra={"fields": {"event": "broker_trouble", "while": what, "error": describe(exc)}})
        self._backoff = min(self._backoff * 2, 30.0)

    def _update_lag(self) -> None:
        assignment = self.consumer.assignment()
        # a poll may return while the group rejoins, with the revoked partitions still assigned: their
        # gauges were set again after the revocation removed them; drop every one this member no longer owns
        self._drop_lag_gauges(self._lag_labels - {str(tp.partition) for tp in assignment})
        for tp in assignment:
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
            if position > high:
                since = self._past_end_since.setdefault(tp, time.monotonic())
                if time.monotonic() - since >= PAST_END_SECONDS:
                    del self._past_end_since[tp]  # asked again PAST_END_SECONDS later if the leader disagrees
                    end = self._end_offset(tp)
                    if end is not None and position > end:
                        self._past_the_end(tp, position, end)
                continue
            self._past_end_since.pop(tp, None)
            self.metrics.consumer_lag.labels(partition=str(tp.partition)).set(max(0, high - position))
            self._lag_labels.add(str(tp.partition))

    def _drop_lag_gauges(self, partitions: set[str]) -> None:
        """Stop exporting the consumer lag of these partitions (labels): not this member's any more."""
        for label in partitions & self._lag_labels:
            self.metrics.consumer_lag.remove(label)
        self._lag_labels -= partitions

    def _end_offset(self, tp: TopicPartition) -> int | None:
        """The partition leader's end offset (ListOffsets), or None when it cannot tell. Some brokers answer
        with less than the end (tansu: the last record batch's first offset), never with more."""
        try:
            return self.consumer.end_offsets([tp], timeout_ms=5000).get(tp)
        except (KafkaError, AssertionError, ValueError, TypeError):
            return None

    def _past_the_end(self, tp: TopicPartition, position: int, high: int) -> None:
        """A position past the end of its partition: the partition was re-created or truncated (a broker
        that lost its data, with a group offset committed before). Some brokers answer such fetches with
        no records and no error, so nothing would ever be read: read the partition from its beginning."""
        log.warning("%s/%d: position %d is past the end of the partition (%d): re-created or truncated? reading "
                    "it from the beginning", tp.topic, tp.partition, position, high)  # fmt: skip
        key = (tp.topic, tp.partition)
        self.next_offsets.pop(key, None)
        self._forget_checkpoint(key)
        self._verifying.pop(tp, None)
        self.consumer.seek_to_beginning(tp)

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
                    daemon._verifying.pop(tp, None)
                    daemon._past_end_since.pop(tp, None)
                daemon._drop_lag_gauges({str(tp.partition) for tp in lost})
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
            except (KafkaConfigurationError, AssertionError, TypeError, ValueError) as exc:
                # the clients check their settings when built (AssertionError, ValueError for an unknown
                # codec, ...): a bad setting, which retrying cannot mend
                self.close()
                problem = describe(exc)
                raise ClientSettingsError(f"kafka-python refuses the client settings: {problem}") from None
            except KafkaError as exc:
                self.metrics.broker_errors.inc()
                log.warning("cannot reach the brokers (%s); retrying in %.1f s", describe(exc), backoff)
                for client in (self.producer, self.consumer):
                    if client is not None:
                        close_client(client)
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
                if batch:
                    self._brokers_answered()
                batch = self._seek_to_checkpoint(batch)
                if batch:
                    self.process_batch(batch)
                self._update_lag()
                self._probe_brokers()
                due = self._since_checkpoint >= cfg.checkpoint_every or (
                    (self._since_checkpoint or self.next_offsets or self._pending)
                    and time.monotonic() - self._last_checkpoint >= cfg.checkpoint_interval
                )
                if due and time.monotonic() >= self._retry_at:
                    self.checkpoint_and_commit()
            self._commit_error = None
            ok = self.checkpoint_and_commit(timeout=max(1.0, cfg.shutdown_timeout / 2))
            if ok:
                log.info("stopping: final checkpoint written and committed")
            elif isinstance(self._commit_error, _MEMBERSHIP_ERRORS):
                # a stop during a rolling deploy: nothing is lost, the offsets are in the checkpoint
                log.warning("stopping: final checkpoint written; the group refused its commit while rebalancing "
                            "(%s): a restart here resumes from the checkpoint, another member from the group's last "
                            "committed offset", describe(self._commit_error))  # fmt: skip
                ok = True
            else:
                log.error("stopping: final checkpoint and commit FAILED while %s", self._failed_step or "?")
            return 0 if ok else 1
        finally:
            self.close()

    def close(self) -> None:
        """Close the clients and the metrics server and let go of the checkpoint folder."""
        for name in ("consumer", "producer"):
            client = getattr(self, name)
            if client is not None:
                settings = {"timeout": 5} if name == "producer" else {"autocommit": False, "timeout_ms": 5000}
                close_client(client, **settings)
                setattr(self, name, None)
        if self.metrics_server is not None:
            self.metrics_server.shutdown()
            self.metrics_server.server_close()
            self.metrics_server = None
        self.store.release()


def run_serve(args, parser=None) -> int:
    """Entry point of ``robustream serve``."""
    try:
        cfg = resolve(args)
    except ValueError as exc:
        print(f"robustream serve: error: {exc}", file=sys.stderr)
        return 2
    configure_logging(cfg.log_format, cfg.log_level)
    for problem in cfg.ignored_environment:
        log.warning("ignoring the environment variable %s", problem)
    try:
        daemon = Daemon(cfg)
    except ValueError as exc:
        print(f"robustream serve: error: {exc}", file=sys.stderr)
        return 2

    def on_signal(signum, frame):
        if daemon.stopping:  # a second signal: the operator will not wait (at-least-once: nothing is committed)
            log.warning("signal %d again: exiting now, without the final checkpoint; a restart resumes from the "
                        "last one", signum)  # fmt: skip
            logging.shutdown()
            os._exit(1)
        log.info("signal %d: finishing the batch, then checkpoint, commit and exit (a second signal exits at once)",
                 signum)  # fmt: skip
        daemon.request_stop()
        # bounded: if the graceful path hangs (e.g. broker gone), leave without it
        timer = threading.Timer(cfg.shutdown_timeout, lambda: os._exit(1))
        timer.daemon = True
        timer.start()

    try:
        daemon.start_metrics()
    except OSError as exc:
        host_problem = isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL  # not this machine's
        where = (f"--metrics-host {cfg.metrics_host}{cfg.came_from('metrics_host')}" if host_problem
                 else f"--metrics-port {cfg.metrics_port}{cfg.came_from('metrics_port')}")
        print(f"robustream serve: error: {where}: cannot listen ({exc.strerror or exc})", file=sys.stderr)
        daemon.close()
        return 2
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        return daemon.run()
    except ClientSettingsError as exc:  # settings only the clients could check
        print(f"robustream serve: error: {exc}", file=sys.stderr)
        return 2
