"""Input messages from a data set with flipped labels: what ``robustream demo`` and
``examples/produce_noisy.py`` send to the input topic.

Rows are shuffled (seeded), labels are 0/1 (1 = the positive class), and a share ``flip`` of the
labels is flipped (:func:`robustream.evaluate.noisy_stream`): uniformly at random, or adversarially
(the positives farthest on the correct side of a clean reference boundary, as poisoning would). The
clean label is returned beside every message so that predictions can be scored against it.

>>> msgs = list(dataset_messages("synthetic", flip=0.2, seed=1, max_samples=6))
>>> [set(doc) for doc, _ in msgs][0] == {"id", "x", "y"}, len(msgs)
(True, 6)
"""

from __future__ import annotations

import json
from typing import Iterator

import numpy as np
import scipy.sparse as sp

from ..datasets import UnknownDataset, load, make_gaussian_classes
from ..evaluate import noisy_stream

SYNTHETIC = "synthetic"


def _rows(dataset: str, seed: int, max_samples: int | None) -> Iterator[tuple[dict[str, float], bool]]:
    if dataset == SYNTHETIC:
        if max_samples is not None and max_samples < 2:
            raise ValueError(f"--max-samples: {SYNTHETIC!r} draws rows of two classes, at least 2, got {max_samples}")
        X, y = make_gaussian_classes((max_samples or 5000) // 2, seed=seed)
    else:
        try:
            ds = load(dataset)
        except UnknownDataset as exc:  # the generator is one more choice here
            raise UnknownDataset(f"{exc}, or {SYNTHETIC!r} (the built-in generator)") from None
        X, y = ds.X, ds.y
        if len(np.unique(y)) != 2:
            raise ValueError(f"--dataset {dataset}: {len(np.unique(y))} classes; only binary data sets are replayed")
    order = np.random.default_rng(seed).permutation(X.shape[0])
    if max_samples is not None:
        order = order[:max_samples]
    csr = sp.issparse(X)
    if csr:
        X = sp.csr_matrix(X)
    for i in order:
        if csr:
            lo, hi = X.indptr[i], X.indptr[i + 1]
            x = {f"f{j}": float(v) for j, v in zip(X.indices[lo:hi], X.data[lo:hi]) if v != 0}
        else:
            x = {f"f{j}": float(v) for j, v in enumerate(np.asarray(X[i]).ravel()) if v != 0}
        yield x, bool(y[i] > 0)


def dataset_messages(
    dataset: str = "w8a", *, flip: float = 0.15, seed: int = 0, max_samples: int | None = None,
    noise: str = "uniform",
) -> Iterator[tuple[dict, int]]:
    """``(message, clean label)`` pairs; ``message = {"id", "x", "y"}`` with the possibly flipped label.
    ``noise``: ``"uniform"`` or ``"adversarial"`` (which reads the whole data set first)."""
    if not 0.0 <= flip < 0.5:
        raise ValueError(f"--flip must be in [0, 0.5), got {flip!r}")
    if max_samples is not None and max_samples < 1:  # a negative one was a slice: all rows but the last few
        raise ValueError(f"--max-samples: must be at least 1, got {max_samples}")
    if noise not in ("uniform", "adversarial"):
        raise ValueError(f"--noise must be uniform or adversarial, got {noise!r}")
    rows = noisy_stream(_rows(dataset, seed, max_samples), flip=flip, seed=seed, noise=noise)
    for i, (x, y_noisy, y_clean) in enumerate(rows):
        yield {"id": str(i), "x": x, "y": int(y_noisy)}, int(y_clean)


def send_messages(producer, topic: str, messages: Iterator[tuple[dict, int]]) -> dict[str, int]:
    """Send every message (key = id) with a kafka-python producer; returns id -> clean label."""
    clean: dict[str, int] = {}
    for doc, y_clean in messages:
        producer.send(topic, key=doc["id"].encode(), value=json.dumps(doc, separators=(",", ":")).encode())
        clean[doc["id"]] = y_clean
    producer.flush()
    return clean
