"""The shared layer of robustream's River learners: a window + coreset buffer rebuilt by a batch solve."""

from __future__ import annotations

import math
import os
from typing import Any, Hashable

import numpy as np
from river import base

from .. import persist
from ..coreset import RowBuffer, feature_order, key_order, rows_to_matrix


DENSE_ABOVE = 0.25  # share of non-zero cells above which a rebuild works on a dense matrix


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


class RebuildingLinearClassifier(base.MiniBatchClassifier):
    """Shared machinery of the windowed River learners: buffer, warm start, rebuilds, proba, persistence.

    A subclass sets its parameters in ``__init__`` (then calls :meth:`_init_state`) and implements
    :meth:`_fit_rows`, one batch solve on the buffered rows.
    """

    def _init_state(self) -> None:
        """Validate the buffer parameters every learner has, then start from an empty model."""
        for name in ("window_size", "rebuild_every"):
            v = getattr(self, name)
            if not (isinstance(v, int) and v >= 1):
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        seed = getattr(self, "seed", 0)
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise ValueError(f"seed must be an integer, got {seed!r}")
        if not (isinstance(self.coreset_size, int) and self.coreset_size >= 0):
            raise ValueError(f"coreset_size must be a non-negative integer, got {self.coreset_size!r}")
        self.weights: dict[Hashable, float] = {}
        self.intercept_ = 0.0
        self.margin_width_ = 0.0
        self.outlier_rate_ = 0.0
        self.n_rebuilds_ = 0
        self.n_failed_rebuilds_ = 0
        self._margin_unit = 1.0
        self._proba_slope = 1.0
        self._since_rebuild = 0
        self._buffer = RowBuffer(self.window_size, self.coreset_size)

    def _fit_rows(self, X, signs: np.ndarray) -> tuple[np.ndarray, float, np.ndarray, np.ndarray, float, float]:
        """Return ``(coef, intercept, outlier_mask, row_weight, margin_width, margin_unit)``; raise
        ValueError when the rows cannot be solved. ``row_weight`` > 0 marks the support rows."""
        raise NotImplementedError

    @property
    def _multiclass(self) -> bool:
        return False


    # -- inference ----------------------------------------------------------------------------
    def decision_one(self, x: dict) -> float:
        """``w . x + b`` in O(non-zero features)."""
        w = self.weights
        # fsum is exactly rounded, so the result does not depend on the order of the features
        return math.fsum(w.get(k, 0.0) * v for k, v in x.items()) + self.intercept_

    def predict_proba_one(self, x: dict) -> dict[bool, float]:
        p = _sigmoid(self._proba_slope * self.decision_one(x) / self._margin_unit)
        return {False: 1.0 - p, True: p}

    def predict_one(self, x: dict) -> bool:
        return self.decision_one(x) > 0.0

    def outlier_score_one(self, x: dict, y: Any) -> float:
        """How far the labelled point sits on the wrong side, in margin units (> 0: wrong side).

        One margin unit is the distance from the hyperplane to the nearest point of the
        (reduced) hull of the inliers of a class.
        """
        sign = 1.0 if bool(y) else -1.0
        return -sign * self.decision_one(x) / self._margin_unit

    # -- learning -------------------------------------------------------------------------------
    def learn_one(self, x: dict, y: Any) -> None:
        sign = 1.0 if bool(y) else -1.0
        # canonical key order: everything downstream is independent of the order features arrive in
        row = {k: float(x[k]) for k in sorted(x, key=key_order) if x[k]}
        self._buffer.window.append((row, sign))
        if self.n_rebuilds_ == 0:
            self._passive_aggressive(row, sign)
        self._since_rebuild += 1
        if self._since_rebuild >= self.rebuild_every:
            self._since_rebuild = 0
            self.rebuild()

    def _passive_aggressive(self, row: dict, sign: float, C: float = 0.01) -> None:
        loss = max(0.0, 1.0 - sign * self.decision_one(row))
        norm2 = math.fsum(v * v for v in row.values()) + 1.0
        if loss > 0.0:
            step = min(C, loss / norm2) * sign
            for k, v in row.items():
                self.weights[k] = self.weights.get(k, 0.0) + step * v
            self.intercept_ += step

    def rebuild(self) -> bool:
        """Solve on coreset + window now; returns False (and keeps the model) when it cannot."""
        rows = self._buffer.rows()
        signs = np.array([s for _, s in rows])
        n_pos = int((signs > 0).sum())
        if n_pos < 2 or signs.size - n_pos < 2:
            self.n_failed_rebuilds_ += 1
            return False
        features = feature_order(x for x, _ in rows)
        X = rows_to_matrix((x for x, _ in rows), features)
        if X.nnz > DENSE_ABOVE * X.shape[0] * X.shape[1]:
            X = X.toarray()  # dense BLAS products are several times faster than sparse ones on dense rows
        try:
            coef, intercept, outlier_mask, row_weight, width, unit = self._fit_rows(X, signs)
        except (ValueError, FloatingPointError):
            self.n_failed_rebuilds_ += 1
            return False
        if not np.all(np.isfinite(coef)) or not np.any(coef):
            self.n_failed_rebuilds_ += 1
            return False
        self.weights = {f: float(v) for f, v in zip(features, coef) if v != 0.0}
        self.intercept_ = float(intercept)
        self.margin_width_ = float(width)
        self.outlier_rate_ = float(outlier_mask.mean())
        self._margin_unit = max(float(unit), 1e-12)
        margins = signs * (np.asarray(X @ coef).ravel() + intercept) / self._margin_unit
        self._proba_slope = _fit_slope(margins[~outlier_mask])
        self._buffer.refresh_coreset(rows, row_weight, margins, ~outlier_mask, seed=self.seed + self.n_rebuilds_)
        self.n_rebuilds_ += 1
        return True

    # -- mini-batch API ------------------------------------------------------------------------
    def learn_many(self, X, y) -> None:
        for x, target in zip(_dict_rows(X), y):
            self.learn_one(x, target)

    def predict_proba_many(self, X):
        import pandas as pd

        return pd.DataFrame([self.predict_proba_one(x) for x in _dict_rows(X)], index=X.index, columns=[False, True])

    def predict_many(self, X):
        import pandas as pd

        return pd.Series([self.predict_one(x) for x in _dict_rows(X)], index=X.index)

    # -- persistence ---------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write the model (parameters, weights, buffers) as a versioned, checksummed JSON file."""
        persist.dump({"class": type(self).__name__, "params": self._get_params(), "state": self._state()}, path)

    @classmethod
    def load(cls, path: str | os.PathLike):
        """Inverse of :meth:`save`; raises ``persist.CorruptModelError`` on a damaged file."""
        payload = persist.load(path)
        if payload.get("class") != cls.__name__:
            raise persist.CorruptModelError(f"{path}: holds a {payload.get('class')!r}, not a {cls.__name__}")
        model = cls(**payload["params"])
        model._set_state(payload["state"])
        return model

    def _state(self) -> dict:
        enc = _encode_row
        window_pos = {id(item): i for i, item in enumerate(self._buffer.window)}
        return {
            "weights": enc(self.weights),
            "intercept": self.intercept_,
            "margin_width": self.margin_width_,
            "outlier_rate": self.outlier_rate_,
            "n_rebuilds": self.n_rebuilds_,
            "n_failed_rebuilds": self.n_failed_rebuilds_,
            "margin_unit": self._margin_unit,
            "proba_slope": self._proba_slope,
            "since_rebuild": self._since_rebuild,
            "window": [[enc(x), s] for x, s in self._buffer.window],
            # a coreset row that is also in the window is stored as its window position
            "coreset": [
                ["window", window_pos[id(item)]] if id(item) in window_pos else [enc(item[0]), item[1]]
                for item in self._buffer.coreset
            ],
        }

    def _set_state(self, st: dict) -> None:
        dec = _decode_row
        self.weights = dec(st["weights"])
        self.intercept_ = st["intercept"]
        self.margin_width_ = st["margin_width"]
        self.outlier_rate_ = st["outlier_rate"]
        self.n_rebuilds_ = st["n_rebuilds"]
        self.n_failed_rebuilds_ = st["n_failed_rebuilds"]
        self._margin_unit = st["margin_unit"]
        self._proba_slope = st["proba_slope"]
        self._since_rebuild = st["since_rebuild"]
        window = [(dec(x), s) for x, s in st["window"]]
        self._buffer.window.extend(window)
        self._buffer.coreset = [window[b] if a == "window" else (dec(a), b) for a, b in st["coreset"]]


def _dict_rows(X):
    """Rows of a DataFrame as dicts, without the NaN cells of features a row does not have."""
    for _, row in X.iterrows():
        yield {k: v for k, v in row.items() if not (isinstance(v, float) and v != v)}


def _encode_row(row: dict) -> list:
    out = []
    for k, v in row.items():
        if not isinstance(k, (str, int, float, bool)) or isinstance(k, np.generic):
            raise TypeError(f"feature key {k!r} of type {type(k).__name__} cannot be saved (use str or int keys)")
        out.append([k, float(v)])
    return out


def _decode_row(pairs: list) -> dict:
    return {k: v for k, v in pairs}


def _fit_slope(margins: np.ndarray, iters: int = 25) -> float:
    """Slope a > 0 of P(correct | margin m) = sigmoid(a m), by Newton's method on the log-loss."""
    if margins.size == 0:
        return 1.0
    a = 1.0
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-np.clip(a * margins, -50, 50)))
        grad = float(np.sum((p - 1.0) * margins))
        hess = float(np.sum(p * (1.0 - p) * margins * margins)) + 1e-9
        a_new = min(max(a - grad / hess, 1e-3), 1e3)
        if abs(a_new - a) < 1e-8:
            break
        a = a_new
    return a
