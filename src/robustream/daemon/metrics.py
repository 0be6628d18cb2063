"""The daemon's Prometheus metrics: fixed names (DESIGN.md §5), base units, explicit buckets.

Every metric lives in the :class:`DaemonMetrics` instance's own registry, so several daemons
(or tests) in one process never collide, and ``METRIC_NAMES`` is what the dashboard and the
alert rules are checked against.

The daemon's message path does not touch prometheus_client per message (about 1 µs per ``inc`` or
``observe``): it counts one poll batch in a :class:`BatchTally` (plain integers and a list of
per-message durations) and :meth:`DaemonMetrics.publish` adds the batch to the metrics before the
next poll. The values are the same as with per-message updates; a scrape sees them up to the
previous batch (at most ``--max-poll-records`` messages behind).

>>> m = DaemonMetrics()
>>> m.messages.labels(outcome="ok").inc()
>>> b"robustream_messages_total{outcome=\\"ok\\"} 1.0" in m.exposition()
True
"""

from __future__ import annotations

import bisect
import math
import threading
import time
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from prometheus_client import (
    CollectorRegistry, Counter, Gauge, GCCollector, Histogram, PlatformCollector, ProcessCollector,
    disable_created_metrics, generate_latest,
)
from prometheus_client.core import HistogramMetricFamily
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

OUTCOMES = ("ok", "invalid", "dead_letter", "predict_only")

# Per-message processing is microseconds to milliseconds; rebuilds and checkpoints are longer.
PROCESS_BUCKETS = (1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 0.01, 0.025,
                   0.05, 0.1, 0.25, 0.5, 1.0, 2.5)  # fmt: skip
REBUILD_BUCKETS = (1e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
CHECKPOINT_BUCKETS = (1e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

# Names as they appear in the exposition (counters carry their ``_total`` suffix there).
METRIC_NAMES = (
    "robustream_messages_total",
    "robustream_samples_learned_total",
    "robustream_outliers_total",
    "robustream_rebuild_failures_total",
    "robustream_concept_drifts_total",
    "robustream_checkpoint_fallbacks_total",
    "robustream_checkpoint_failures_total",
    "robustream_broker_errors_total",
    "robustream_outputs_replaced_total",
    "robustream_outputs_dropped_total",
    "robustream_margin_width",
    "robustream_outlier_rate",
    "robustream_prequential_accuracy",
    "robustream_coreset_rows",
    "robustream_consumer_lag_messages",
    "robustream_model_version",
    "robustream_last_rebuild_timestamp_seconds",
    "robustream_last_commit_timestamp_seconds",
    "robustream_broker_last_contact_timestamp_seconds",
    "robustream_rebuild_duration_seconds",
    "robustream_process_duration_seconds",
    "robustream_checkpoint_duration_seconds",
)


class BatchedHistogram(Collector):
    """A Prometheus histogram that takes a whole batch of observations in one call.

    Exposed exactly like ``prometheus_client.Histogram`` (``_bucket{le}``, ``_count``, ``_sum``);
    :meth:`observe_many` finds each value's bucket by bisection (~0.1 µs a value instead of ~1 µs
    for ``Histogram.observe``), under one lock per batch.

    >>> registry = CollectorRegistry()
    >>> h = BatchedHistogram("t_seconds", "test", (0.1, 1.0), registry)
    >>> h.observe_many([0.05, 0.1, 0.5, 7.0])
    >>> [registry.get_sample_value("t_seconds_bucket", {"le": le}) for le in ("0.1", "1.0", "+Inf")]
    [2.0, 3.0, 4.0]
    """

    def __init__(self, name: str, documentation: str, buckets: Iterable[float], registry: CollectorRegistry):
        self.name, self.documentation = name, documentation
        self._bounds = sorted(float(b) for b in buckets)
        if not self._bounds or self._bounds[-1] != float("inf"):
            self._bounds.append(float("inf"))
        self._le = [floatToGoString(b) for b in self._bounds]
        self._counts = [0] * len(self._bounds)
        self._sum = 0.0
        self._lock = threading.Lock()
        registry.register(self)

    def observe(self, amount: float) -> None:
        self.observe_many((amount,))

    def observe_many(self, amounts: Iterable[float]) -> None:
        """Add every value of ``amounts`` (each counts in the first bucket whose bound is >= it)."""
        bounds, counts, find = self._bounds, self._counts, bisect.bisect_left
        with self._lock:
            total = self._sum
            for a in amounts:
                counts[find(bounds, a)] += 1
                total += a  # one at a time, as Histogram.observe adds them
            self._sum = total

    def describe(self) -> Iterator[HistogramMetricFamily]:
        yield HistogramMetricFamily(self.name, self.documentation)

    def collect(self) -> Iterator[HistogramMetricFamily]:
        with self._lock:
            counts, total = list(self._counts), self._sum
        cumulative, acc = [], 0.0
        for le, n in zip(self._le, counts):
            acc += n
            cumulative.append((le, acc))
        yield HistogramMetricFamily(self.name, self.documentation, buckets=cumulative, sum_value=total)


@dataclass(slots=True)
class BatchTally:
    """What one poll batch adds to the metrics; :meth:`DaemonMetrics.publish` adds it and starts a new one.

    ``process_seconds``: per-message durations of the messages that did not rebuild the model;
    ``rebuild_seconds``: of those that did; ``accuracy``: the prequential accuracy after the batch.
    """

    outcomes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    samples_learned: int = 0
    outliers: int = 0
    rebuild_failures: int = 0
    drifts: int = 0
    accuracy: float | None = None
    process_seconds: list[float] = field(default_factory=list)
    rebuild_seconds: list[float] = field(default_factory=list)


class DaemonMetrics:
    """All metrics of one daemon, registered in ``self.registry``."""

    def __init__(self, registry: CollectorRegistry | None = None):
        disable_created_metrics()  # the *_created series only double the exposition's size
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        if registry is None:  # the process's memory, CPU, file descriptors and GC, as the default registry has
            ProcessCollector(registry=r)
            PlatformCollector(registry=r)
            GCCollector(registry=r)
        self.messages = Counter(
            "robustream_messages", "Input messages by outcome: ok (labelled, learned), predict_only (no label), "
            "invalid (failed validation), dead_letter (failed in processing); both kinds go to the dead-letter topic "
            "(as do the outputs counted in robustream_outputs_replaced_total)", ["outcome"], registry=r,
        )  # fmt: skip
        for outcome in OUTCOMES:
            self.messages.labels(outcome=outcome)
        self.samples_learned = Counter("robustream_samples_learned", "Labelled samples passed to learn_one", registry=r)
        self.outliers = Counter(
            "robustream_outliers", "Labelled samples on the wrong side of the current model's margin "
            "(ordi: the labelled samples the filter kept back from its classifier)", registry=r
        )
        self.rebuild_failures = Counter(
            "robustream_rebuild_failures", "Rebuilds that kept the previous model (degenerate data)", registry=r
        )
        self.concept_drifts = Counter(
            "robustream_concept_drifts", "Concept drifts the learner found (its error rose for good): each dropped "
            "the coreset and the window's older rows; each member of a one-vs-rest model counts its own", registry=r,
        )  # fmt: skip
        self.checkpoint_fallbacks = Counter(
            "robustream_checkpoint_fallbacks", "Corrupt checkpoints skipped at start-up for an older one", registry=r
        )
        self.checkpoint_failures = Counter(
            "robustream_checkpoint_failures", "Checkpoints that could not be written (nothing committed)", registry=r
        )
        self.broker_errors = Counter(
            "robustream_broker_errors", "Broker errors survived by retrying with backoff", registry=r
        )
        self.outputs_replaced = Counter(
            "robustream_outputs_replaced", "Prediction records the producer or the broker refused for good (too large, "
            "no permission on the topic), each replaced by a minimal dead letter; their messages keep their outcome",
            registry=r,
        )  # fmt: skip
        self.outputs_dropped = Counter(
            "robustream_outputs_dropped", "Outputs no broker accepts even as a minimal dead letter (see the log)",
            registry=r,
        )  # fmt: skip
        self.margin_width = Gauge("robustream_margin_width", "Margin width after the last rebuild (negative when the "
                                  "kept rows of the two classes overlap: a soft margin; NaN for a learner without "
                                  "one)", registry=r)  # fmt: skip
        self.outlier_rate = Gauge(
            "robustream_outlier_rate", "Fraction (0-1) of the last rebuild's rows discarded as outliers "
            "(ordi: of the recent labelled messages kept back from its classifier; more than two labels: "
            "the mean over the per-label filters; NaN for a learner that discards nothing)", registry=r
        )
        self.prequential_accuracy = Gauge(
            "robustream_prequential_accuracy", "Accuracy (0-1) of predictions on the recent labelled messages "
            "(NaN until this process has scored one)", registry=r,
        )  # fmt: skip
        self.prequential_accuracy.set(math.nan)  # 0 would read as "every prediction wrong"
        self.coreset_rows = Gauge("robustream_coreset_rows", "Rows in the learner's maintained coreset (NaN for a "
                                  "learner without one)", registry=r)  # fmt: skip
        # 0 would read as "the classes touch" or "nothing is discarded" where the learner has no such value
        # (River's learners; ordi has no margin); the robustream learners and ordi set theirs
        for gauge in (self.margin_width, self.outlier_rate, self.coreset_rows):
            gauge.set(math.nan)
        self.consumer_lag = Gauge(
            "robustream_consumer_lag_messages", "Messages behind the end of each assigned partition", ["partition"],
            registry=r,
        )  # fmt: skip
        self.model_version = Gauge("robustream_model_version", "Model version: rebuilds of the robustream learners "
                                   "(kept across restarts), else samples learned", registry=r)
        self.last_rebuild = Gauge(
            "robustream_last_rebuild_timestamp_seconds", "Unix time of the last successful rebuild", registry=r
        )
        # both start at the daemon's start: a daemon that never reaches the brokers, or never commits, ages
        # from there (alerts RobustreamBrokersUnreachable, RobustreamNotCommitting)
        self.last_commit = Gauge(
            "robustream_last_commit_timestamp_seconds", "Unix time of the last checkpoint whose offsets were "
            "committed: where a restart resumes (the daemon's start until the first)", registry=r,
        )  # fmt: skip
        self.broker_contact = Gauge(
            "robustream_broker_last_contact_timestamp_seconds", "Unix time the brokers last answered: records "
            "fetched, offsets committed, or a probe of a partition's end offset after 30 s without either (the "
            "daemon's start until the first)", registry=r,
        )  # fmt: skip
        started = time.time()
        self.last_commit.set(started)
        self.broker_contact.set(started)
        self.rebuild_duration = Histogram(
            "robustream_rebuild_duration_seconds", "Time of one rebuild (inside learn_one)", buckets=REBUILD_BUCKETS,
            registry=r,
        )  # fmt: skip
        self.process_duration = BatchedHistogram(
            "robustream_process_duration_seconds", "Time to decode, predict, learn and queue the output of one "
            "message (messages that triggered a rebuild count in robustream_rebuild_duration_seconds)",
            PROCESS_BUCKETS, r,
        )  # fmt: skip
        self.checkpoint_duration = Histogram(
            "robustream_checkpoint_duration_seconds", "Time to write one checkpoint", buckets=CHECKPOINT_BUCKETS,
            registry=r,
        )  # fmt: skip

    def publish(self, tally: BatchTally) -> BatchTally:
        """Add one batch's counts and durations to the metrics; returns a new, empty tally."""
        for outcome, n in tally.outcomes.items():
            if n:
                self.messages.labels(outcome=outcome).inc(n)
        if tally.samples_learned:
            self.samples_learned.inc(tally.samples_learned)
        if tally.outliers:
            self.outliers.inc(tally.outliers)
        if tally.rebuild_failures:
            self.rebuild_failures.inc(tally.rebuild_failures)
        if tally.drifts:
            self.concept_drifts.inc(tally.drifts)
        if tally.accuracy is not None:
            self.prequential_accuracy.set(tally.accuracy)
        if tally.process_seconds:
            self.process_duration.observe_many(tally.process_seconds)
        for seconds in tally.rebuild_seconds:
            self.rebuild_duration.observe(seconds)
        return BatchTally()

    def value(self, name: str, **labels: str) -> float:
        """Current value of one sample (e.g. ``"robustream_outlier_rate"``), 0 if it has none yet."""
        return self.registry.get_sample_value(name, labels or None) or 0.0

    def exposition(self) -> bytes:
        """The text exposition format, as served on ``/metrics``."""
        return generate_latest(self.registry)
