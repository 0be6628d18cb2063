"""Label-noise streams and evaluation against the clean labels (built on river.metrics).

>>> from river import datasets, linear_model, preprocessing
>>> from robustream.evaluate import noisy_stream, prequential
>>> stream = noisy_stream(datasets.Phishing(), flip=0.2, seed=0)
>>> model = preprocessing.StandardScaler() | linear_model.LogisticRegression()
>>> prequential(model, stream).get()
0.8984
"""

from __future__ import annotations

import collections.abc
import numbers
import random
import warnings
from typing import Any, Hashable, Iterable, Iterator, Sequence

import numpy as np
from river import metrics as river_metrics

from .validation import numeric_row


def noisy_stream(
    stream: Iterable[tuple[dict, Any]],
    *,
    flip: float = 0.15,
    seed: int | None = 0,
    labels: Sequence[Hashable] | None = None,
    noise: str = "uniform",
    adversarial_class: bool = True,
) -> Iterable[tuple[dict, Any, Any]]:
    """Rows ``(x, y_noisy, y_clean)``: each label is wrong with probability ``flip`` (uniform noise).

    Binary (bool) labels are negated; with ``labels`` given (multi-class, at least two distinct ones) a
    wrong label is drawn uniformly from the *other* labels, and every label of the stream must be one
    of them (a 0/1 stream is a multi-class one: ``labels=[0, 1]``). ``seed=None`` draws other flips at
    every call (each pass of the result still gives the same rows). Seeded: the same stream and seed
    give the same flips (``labels`` given as a set are sorted, so the flips do not depend on the set's
    iteration order). A wrong label is given the type of the row's label where both are numbers
    (``labels=[0, 1]`` on a bool stream yields False and True). The arguments are checked at the call,
    the labels as the rows arrive.

    ``noise="adversarial"`` (bool labels) is :func:`robustream.datasets.noisy_split`'s adversarial noise
    on one stream: each pass first reads the whole stream (held in memory), fits the clean reference
    boundary of :func:`robustream.datasets.fit_reference_boundary` on its rows (features by key) and
    clean labels, and flips the ``round(flip * n)`` rows of ``adversarial_class`` that lie farthest on
    the correct side of it (a ``RuntimeWarning`` if the class has fewer rows: all of them are flipped).
    The flips are determined by the stream; ``seed`` is not used.

    The result can be read more than once when ``stream`` can (a list, a River data set): every pass
    reads ``stream`` afresh and gives the same rows, so several models can be scored on it in turn.
    A one-shot ``stream`` (a generator, an iterator) gives one pass; a second one raises ValueError.

    >>> rows = [({"a": 1.0}, True), ({"a": 2.0}, False), ({"a": 3.0}, True)]
    >>> noisy = noisy_stream(rows, flip=0.5, seed=1)
    >>> [(y_noisy, y_clean) for _, y_noisy, y_clean in noisy]
    [(False, True), (False, False), (True, True)]
    >>> list(noisy) == list(noisy)
    True
    """
    if not isinstance(stream, collections.abc.Iterable):
        raise TypeError(f"stream: noisy_stream expects an iterable of (x, y) rows, got {type(stream).__name__}")
    if not (isinstance(flip, numbers.Real) and not isinstance(flip, bool) and 0.0 <= flip < 1.0):
        raise ValueError(f"flip must be in [0, 1), got {flip!r}")
    if seed is None:  # fresh flips, as noisy_split's seed=None; drawn once, so that every pass has the same
        seed = random.SystemRandom().randrange(2**63)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an int or None, got {type(seed).__name__} {seed!r}")
    if seed < 0:  # random.Random(-5) draws what random.Random(5) does
        raise ValueError(f"seed must be >= 0, got {seed!r}")
    if noise not in ("uniform", "adversarial"):
        raise ValueError(f"noise must be 'uniform' or 'adversarial', got {noise!r}")
    if not isinstance(adversarial_class, (bool, np.bool_)):
        raise TypeError(f"adversarial_class must be a bool (the class whose labels adversarial noise flips), "
                        f"got {adversarial_class!r}")
    if labels is not None:
        if noise == "adversarial":
            raise ValueError("noise='adversarial' flips bool labels; leave labels=None")
        if isinstance(labels, (set, frozenset)):
            try:
                labels = sorted(labels)
            except TypeError:  # labels of several types
                labels = sorted(labels, key=repr)
        labels = list(labels)
        repeated = [c for i, c in enumerate(labels) if c in labels[:i]]
        if repeated:  # a label listed twice would be drawn twice as often as a wrong label
            raise ValueError(f"labels: {repeated[0]!r} is listed more than once in {labels!r}")
        if len(labels) < 2:
            raise ValueError(f"labels must hold at least two distinct labels, got {labels!r}")
    if noise == "adversarial":
        return _AdversarialStream(stream, flip, bool(adversarial_class))
    return _NoisyStream(stream, flip, int(seed), labels)


class _NoisyStream:
    """What :func:`noisy_stream` returns: each pass starts ``stream`` and the random draws afresh."""

    def __init__(self, stream, flip: float, seed: int, labels: list | None):
        self._stream, self._flip, self._seed, self._labels = stream, flip, seed, labels
        self._read_once = False

    def __iter__(self) -> Iterator[tuple[dict, Any, Any]]:
        return _flipped(self._pass(), self._flip, random.Random(self._seed), self._labels)

    def _pass(self) -> Iterator:
        """A fresh iterator over the stream; ValueError on a second pass over a one-shot iterator."""
        rows = iter(self._stream)
        if rows is self._stream:  # a one-shot iterator: a second pass would silently give no rows
            if self._read_once:
                raise ValueError(
                    "stream: noisy_stream was given a one-shot iterator, already read by an earlier pass; "
                    "pass a list (or a re-iterable data set) to read the noisy rows more than once"
                )
            self._read_once = True
        return rows


class _AdversarialStream(_NoisyStream):
    """What :func:`noisy_stream` returns for ``noise="adversarial"``."""

    def __init__(self, stream, flip: float, adversarial_class: bool):
        super().__init__(stream, flip, 0, None)
        self._class = adversarial_class

    def __iter__(self) -> Iterator[tuple[dict, Any, Any]]:
        rows = list(_checked_rows(self._pass(), 2, "stream", "noisy_stream expects (x, y) rows"))
        for _, y in rows:
            _check_bool_label(y)
        flipped = np.zeros(len(rows), dtype=bool)
        n_flip = int(round(self._flip * len(rows)))
        if n_flip:
            from .datasets import farthest_on_correct_side, fit_reference_boundary

            X = _row_matrix([x for x, _ in rows])
            y = np.array([1.0 if y else -1.0 for _, y in rows])
            label = 1.0 if self._class else -1.0
            candidates = np.flatnonzero(y == label)
            if candidates.size < n_flip:
                warnings.warn(f"noisy_stream: the stream has only {candidates.size} rows of class {self._class} "
                              f"but {n_flip} flips were asked for; flipping all of them", RuntimeWarning,
                              stacklevel=2)  # fmt: skip
            w, b = fit_reference_boundary(X, y)
            flipped[candidates[farthest_on_correct_side(X[candidates], w, b, int(label), n_flip)]] = True
        return ((x, (not bool(y)) if f else y, y) for (x, y), f in zip(rows, flipped))


def _row_matrix(xs: list[dict]):
    """CSR matrix of dict rows, columns in :func:`robustream.coreset.feature_order`; ValueError naming a
    feature whose value is not a finite number."""
    import scipy.sparse as sp

    from .coreset import feature_order

    features = feature_order(xs)
    index = {f: j for j, f in enumerate(features)}
    cols, vals, indptr = [], [], [0]
    for i, x in enumerate(xs):
        try:
            row = numeric_row(x, x)
        except ValueError as exc:
            raise ValueError(f"stream: row {i}: {exc}") from None
        cols.extend(index[k] for k in row)
        vals.extend(row.values())
        indptr.append(len(cols))
    return sp.csr_matrix((np.array(vals, dtype=np.float64), np.array(cols, dtype=np.int64), indptr),
                         shape=(len(xs), len(features)))


def _check_bool_label(y) -> None:
    if not isinstance(y, (bool, np.bool_)):
        raise ValueError(
            f"label {y!r} is not a bool: the labels must be bools, or be listed with labels=[...] "
            "(labels=[0, 1] for a 0/1 stream, or the stream's labels)"
        )


def _flipped(rows: Iterator, flip: float, rng: random.Random, labels: list | None) -> Iterator[tuple[dict, Any, Any]]:
    for x, y in _checked_rows(rows, 2, "stream", "noisy_stream expects (x, y) rows"):
        if labels is None:
            _check_bool_label(y)
        elif y not in labels:
            raise ValueError(f"label {y!r} is not in labels {labels!r}")
        if rng.random() < flip:
            if labels is None:
                yield x, not bool(y), y
            else:
                yield x, _like(rng.choice([c for c in labels if c != y]), y), y
        else:
            yield x, y, y


def _like(label: Any, y: Any) -> Any:
    """A wrong ``label`` drawn from ``labels``, as a number of the row's own label type where it is one
    (``labels=[0, 1]`` on a bool stream gives False, not 0: a stream's labels keep one type)."""
    if type(label) is not type(y) and isinstance(y, (numbers.Number, np.generic)) and isinstance(
            label, (numbers.Number, np.generic)):  # fmt: skip
        try:
            same = type(y)(label)
        except (TypeError, ValueError, OverflowError):
            return label
        if same == label:
            return same
    return label


def _checked_rows(rows: Iterable, size: int, name: str, expected: str) -> Iterator:
    """The rows of the argument ``name``, each checked to hold ``size`` values; TypeError or ValueError
    saying ``expected`` and what the row was otherwise."""
    for row in rows:
        try:
            n = len(row)
        except TypeError:
            raise TypeError(f"{name}: {expected}; got a {type(row).__name__}") from None
        if n != size:
            got = f"a {n}-tuple" if isinstance(row, tuple) else f"a {type(row).__name__} of length {n}"
            raise ValueError(f"{name}: {expected}; got {got}")
        yield row


def _metric(metric):
    """The metric to update: ``metric``, or a new River Accuracy when it is None."""
    if metric is None:
        return river_metrics.Accuracy()
    if isinstance(metric, type):
        raise TypeError(f"metric: give a metric instance, for example {metric.__name__}(), not the class")
    if not callable(getattr(metric, "update", None)):
        raise TypeError(f"metric: {type(metric).__name__} has no update method; give a river.metrics metric")
    return metric


def _scored(metric, y, y_pred) -> None:
    """Update ``metric`` unless the model made no prediction (None, or {} from ``predict_proba_one``),
    as River's ``evaluate.progressive_val_score`` does: a model that has seen no class yet is not scored."""
    if y_pred is not None and y_pred != {}:
        metric.update(y, y_pred)


def _predictor(model, metric):
    """``predict_proba_one`` for the metrics that score probabilities (ROCAUC, LogLoss), as River does."""
    if getattr(metric, "requires_labels", True):
        return model.predict_one
    if not callable(getattr(model, "predict_proba_one", None)):
        raise TypeError(f"model: the metric {type(metric).__name__} scores probabilities, but the model has no "
                        "predict_proba_one")  # fmt: skip
    return model.predict_proba_one


def prequential(model: Any, stream: Iterable[tuple[dict, Any, Any]], metric: river_metrics.base.Metric | None = None
                ) -> river_metrics.base.Metric:
    """Test-then-train: predict each ``x``, score against the clean label, learn the noisy one.

    ``stream`` holds ``(x, y_noisy, y_clean)`` rows, as :func:`noisy_stream` gives; a metric that scores
    probabilities (``metric.requires_labels`` false: ROCAUC, LogLoss) is given ``predict_proba_one``, and a
    row the model makes no prediction for (None or {}, before it has learned a class) is not scored, both
    as in River's ``evaluate.progressive_val_score``. A stream without rows raises ValueError.

    >>> class Yes:
    ...     def predict_one(self, x): return True
    ...     def learn_one(self, x, y): pass
    >>> prequential(Yes(), [({}, False, True), ({}, True, False)]).get()
    0.5
    """
    metric = _metric(metric)
    predict = _predictor(model, metric)
    empty = True
    for x, y_noisy, y_clean in _checked_rows(
        stream, 3, "stream", "prequential expects (x, y_noisy, y_clean) rows, e.g. from noisy_stream"
    ):
        empty = False
        _scored(metric, y_clean, predict(x))
        model.learn_one(x, y_noisy)
    if empty:
        raise ValueError("stream: no rows (a one-shot iterator already consumed?)")
    return metric


def holdout(model: Any, train: Iterable[tuple[dict, Any, Any]], test: Iterable[tuple[dict, Any]],
            metric: river_metrics.base.Metric | None = None) -> river_metrics.base.Metric:
    """One pass of learning on the noisy training stream, then the metric on clean test rows.

    ``train`` holds ``(x, y_noisy, y_clean)`` rows (it may be empty, to score a model trained before),
    ``test`` clean ``(x, y)`` rows; the model predicts and is scored as in :func:`prequential`. A ``test``
    without rows raises ValueError.

    >>> class Last:
    ...     def predict_one(self, x): return self.y
    ...     def learn_one(self, x, y): self.y = y
    >>> holdout(Last(), [({}, True, False)], [({}, True), ({}, False)]).get()
    0.5
    """
    metric = _metric(metric)
    predict = _predictor(model, metric)
    for x, y_noisy, _ in _checked_rows(
        train, 3, "train", "holdout expects (x, y_noisy, y_clean) rows, e.g. from noisy_stream"
    ):
        model.learn_one(x, y_noisy)
    empty = True
    for x, y in _checked_rows(test, 2, "test", "holdout expects clean (x, y) rows (from noisy_stream rows: "
                                               "[(x, y_clean) for x, _, y_clean in rows])"):  # fmt: skip
        empty = False
        _scored(metric, y, predict(x))
    if empty:
        raise ValueError("test: no rows (a one-shot iterator already consumed?)")
    return metric
