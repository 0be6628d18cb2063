"""RGDSVMClassifier: the RGD-tree SVM with outliers as a River classifier."""

from __future__ import annotations

import math
import os
from typing import Any, Hashable

import numpy as np
from river import base

from .. import persist
from ..coreset import RowBuffer, feature_order, key_order, rows_to_matrix
from ..sketch import JLSketch
from ..solver import per_class_outlier_fractions, solve


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


class RGDSVMClassifier(base.MiniBatchClassifier):
    """Binary linear classifier that discards mislabelled samples, for River streams.

    ``learn_one`` stores the row in a window (cheap). Every ``rebuild_every`` labelled rows the
    model is rebuilt on coreset + window with the RGD-tree solver (optional JL sketch -> pruned,
    boosted RGD-tree -> convex polish on the inliers -> map back -> trim and refit), and the
    coreset is refreshed with the rows carrying the solution's convex coefficients plus the
    lowest-margin inliers. Memory: at most ``coreset_size + window_size`` rows. Until the first
    rebuild the model predicts with a passive-aggressive (PA-I, C = 0.01) warm start.

    Labels are read as booleans (``True`` is the positive class); probabilities are
    ``sigmoid(a * margin)`` with the slope ``a`` fitted on the last rebuild's inliers by
    one-dimensional logistic regression (Platt scaling without offset).

    Parameters
    ----------
    outlier_fraction
        Assumed share of wrong labels (per-class fractions follow from the observed class priors).
    window_size, coreset_size, rebuild_every
        Rows kept from the recent stream, rows kept from past solutions, and rebuild period.
    sketch, sketch_dim
        Optional JL sketch the RGD-tree runs on (``sketch_dim=None``: no sketch).
    polish, nu, tree_height, level_width, boosting_rounds
        Solver settings (see :class:`robustream.RGDSVC`).
    seed
        Seed of the solver; same seed and stream give the same model, bit for bit.

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from robustream import RGDSVMClassifier
    >>> model = preprocessing.StandardScaler() | RGDSVMClassifier(rebuild_every=200, seed=1)
    >>> metric = evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
    >>> metric.get() > 0.85
    True
    """

    def __init__(
        self,
        outlier_fraction: float = 0.2,
        window_size: int = 1000,
        coreset_size: int = 500,
        rebuild_every: int = 250,
        sketch: str = "hashed",
        sketch_dim: int | None = None,
        polish: str = "soft",
        nu: float = 0.3,
        tree_height: int = 6,
        level_width: int = 10,
        boosting_rounds: int = 3,
        seed: int = 0,
    ):
        self.outlier_fraction = outlier_fraction
        self.window_size = window_size
        self.coreset_size = coreset_size
        self.rebuild_every = rebuild_every
        self.sketch = sketch
        self.sketch_dim = sketch_dim
        self.polish = polish
        self.nu = nu
        self.tree_height = tree_height
        self.level_width = level_width
        self.boosting_rounds = boosting_rounds
        self.seed = seed
        self._check_params()
        self.weights: dict[Hashable, float] = {}
        self.intercept_ = 0.0
        self.margin_width_ = 0.0
        self.outlier_rate_ = 0.0
        self.n_rebuilds_ = 0
        self.n_failed_rebuilds_ = 0
        self._margin_unit = 1.0
        self._proba_slope = 1.0
        self._since_rebuild = 0
        self._buffer = RowBuffer(window_size, coreset_size)

    def _check_params(self) -> None:
        if not 0.0 <= self.outlier_fraction < 0.5:
            raise ValueError(f"outlier_fraction must be in [0, 0.5), got {self.outlier_fraction!r}")
        for name in ("window_size", "rebuild_every", "tree_height", "level_width", "boosting_rounds"):
            v = getattr(self, name)
            if not (isinstance(v, int) and v >= 1):
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if not (isinstance(self.coreset_size, int) and self.coreset_size >= 0):
            raise ValueError(f"coreset_size must be a non-negative integer, got {self.coreset_size!r}")

    @classmethod
    def _unit_test_params(cls):
        yield {"rebuild_every": 50, "window_size": 100, "coreset_size": 50}
        yield {"rebuild_every": 40, "window_size": 80, "coreset_size": 30, "sketch_dim": 8, "polish": "hard"}

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
        fractions = per_class_outlier_fractions(self.outlier_fraction, n_pos, signs.size - n_pos)
        sketch = None
        if self.sketch_dim is not None:
            sketch = JLSketch(self.sketch_dim, self.sketch, seed=self.seed, hash_nnz=min(4, self.sketch_dim))
        try:
            sol = solve(
                X, signs, outlier_fraction=fractions, polish=self.polish, nu=self.nu, sketch=sketch,
                tree_height=self.tree_height, level_width=self.level_width,
                boosting_rounds=self.boosting_rounds, seed=self.seed + self.n_rebuilds_,
            )  # fmt: skip
        except (ValueError, FloatingPointError):
            self.n_failed_rebuilds_ += 1
            return False
        if not np.all(np.isfinite(sol.coef)) or not np.any(sol.coef):
            self.n_failed_rebuilds_ += 1
            return False
        self.weights = {f: float(v) for f, v in zip(features, sol.coef) if v != 0.0}
        self.intercept_ = float(sol.intercept)
        self.margin_width_ = float(sol.margin_width)
        self.outlier_rate_ = float(sol.outlier_mask.mean())
        self._margin_unit = max(0.5 * float(sol.coef @ sol.coef), 1e-12)
        margins = signs * (np.asarray(X @ sol.coef).ravel() + sol.intercept) / self._margin_unit
        self._proba_slope = _fit_slope(margins[~sol.outlier_mask])
        self._buffer.refresh_coreset(rows, sol.convex_coef, margins, ~sol.outlier_mask, seed=self.seed + self.n_rebuilds_)
        self.n_rebuilds_ += 1
        return True

    # -- mini-batch API ------------------------------------------------------------------------
    def learn_many(self, X, y) -> None:
        for (_, row), target in zip(X.iterrows(), y):
            self.learn_one({k: v for k, v in row.items() if not _isnan(v)}, target)

    def predict_proba_many(self, X):
        import pandas as pd

        probas = [self.predict_proba_one({k: v for k, v in row.items() if not _isnan(v)}) for _, row in X.iterrows()]
        return pd.DataFrame(probas, index=X.index, columns=[False, True])

    def predict_many(self, X):
        import pandas as pd

        return pd.Series([self.predict_one({k: v for k, v in r.items() if not _isnan(v)}) for _, r in X.iterrows()], index=X.index)

    # -- persistence ---------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write the model (parameters, weights, buffers) as a versioned, checksummed JSON file."""
        persist.dump({"class": "RGDSVMClassifier", "params": self._get_params(), "state": self._state()}, path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "RGDSVMClassifier":
        """Inverse of :meth:`save`; raises ``persist.CorruptModelError`` on a damaged file."""
        payload = persist.load(path)
        if payload.get("class") != "RGDSVMClassifier":
            raise persist.CorruptModelError(f"{path}: holds a {payload.get('class')!r}, not an RGDSVMClassifier")
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


def _isnan(v) -> bool:
    return isinstance(v, float) and v != v


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
