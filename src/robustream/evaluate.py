"""Label-noise streams and evaluation against the clean labels (built on river.metrics).

>>> from river import datasets, linear_model, preprocessing
>>> from robustream.evaluate import noisy_stream, prequential
>>> stream = noisy_stream(datasets.Phishing(), flip=0.2, seed=0)
>>> model = preprocessing.StandardScaler() | linear_model.LogisticRegression()
>>> prequential(model, stream).get()
0.8984
"""

from __future__ import annotations

import numbers
import random
from typing import Any, Hashable, Iterable, Iterator, Sequence

import numpy as np
from river import metrics as river_metrics


def noisy_stream(
    stream: Iterable[tuple[dict, Any]],
    *,
    flip: float = 0.15,
    seed: int = 0,
    labels: Sequence[Hashable] | None = None,
) -> Iterator[tuple[dict, Any, Any]]:
    """Yield ``(x, y_noisy, y_clean)``: each label is wrong with probability ``flip`` (uniform noise).

    Binary (bool) labels are negated; with ``labels`` given (multi-class, at least two) a wrong label
    is drawn uniformly from the *other* labels, and every label of the stream must be one of them.
    Seeded: the same stream and seed give the same flips (``labels`` given as a set are sorted, so
    the flips do not depend on the set's iteration order). The arguments are checked at the call,
    the labels as the rows arrive.
    """
    if not (isinstance(flip, numbers.Real) and not isinstance(flip, bool) and 0.0 <= flip < 1.0):
        raise ValueError(f"flip must be in [0, 1), got {flip!r}")
    if labels is not None:
        if isinstance(labels, (set, frozenset)):
            try:
                labels = sorted(labels)
            except TypeError:  # labels of several types
                labels = sorted(labels, key=repr)
        labels = list(labels)
        if len(set(labels)) < 2:
            raise ValueError(f"labels must hold at least two distinct labels, got {labels!r}")
    return _flipped(stream, flip, random.Random(seed), labels)


def _flipped(stream, flip: float, rng: random.Random, labels: list | None) -> Iterator[tuple[dict, Any, Any]]:
    for x, y in stream:
        if labels is None:
            if not isinstance(y, (bool, np.bool_)):
                raise ValueError(f"label {y!r} is not a bool: pass labels=[...] for multi-class streams")
        elif y not in labels:
            raise ValueError(f"label {y!r} is not in labels {labels!r}")
        if rng.random() < flip:
            if labels is None:
                yield x, not bool(y), y
            else:
                yield x, rng.choice([c for c in labels if c != y]), y
        else:
            yield x, y, y


def prequential(model, stream: Iterable[tuple[dict, Any, Any]], metric=None):
    """Test-then-train: predict each ``x``, score against the clean label, learn the noisy one."""
    metric = metric if metric is not None else river_metrics.Accuracy()
    for x, y_noisy, y_clean in stream:
        metric.update(y_clean, model.predict_one(x))
        model.learn_one(x, y_noisy)
    return metric


def holdout(model, train: Iterable[tuple[dict, Any, Any]], test: Iterable[tuple[dict, Any]], metric=None):
    """One pass of learning on the noisy training stream, then the metric on clean test rows."""
    metric = metric if metric is not None else river_metrics.Accuracy()
    for x, y_noisy, _ in train:
        model.learn_one(x, y_noisy)
    for x, y in test:
        metric.update(y, model.predict_one(x))
    return metric
