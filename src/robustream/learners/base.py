"""The shared layer of robustream's River learners: a window + coreset buffer rebuilt by a batch solve."""

from __future__ import annotations

import base64
import copy
import functools
import inspect
import math
import operator
import os
import pickle
import sys
import warnings
from collections import deque
from itertools import islice, repeat
from typing import TYPE_CHECKING, Any, Hashable, Iterable

import numpy as np
import scipy.sparse as sp
from scipy.linalg import lapack
from river import base

from .. import persist
from ..blas import single_threaded_blas
from ..coreset import DenseRow, RowBuffer, key_order, pack_rows, unpack_rows
from ..kernels.dot import exact_dot
from ..solver import NEGLIGIBLE_W2, largest_value, negligible_direction, row_offset
from ..validation import (
    FeatureValueError, check_features, check_length, is_integer, is_real, non_number_message, numeric_row,
    refuse_values_beyond,
)
from .rebuild_worker import WorkerUnavailable, solve_worker

if TYPE_CHECKING:
    import pandas as pd


DENSE_ABOVE = 0.25  # share of non-zero cells above which a rebuild works on a dense matrix
# the drift test (see RebuildingLinearClassifier._check_drift): rows it needs on each side, and the
# smallest rise of the error rate it calls a drift (a few more errors of a model with almost none are not)
DRIFT_THRESHOLD = 5.0  # the learners' default drift_threshold
DRIFT_MIN_ROWS = 30
DRIFT_MIN_REFERENCE_ROWS = 200
DRIFT_MIN_RISE = 0.05
DRIFT_WARNING = 2.0  # z above which tested rows are held out of the reference (DDM's warning level)
DRIFT_CONFIRM = 3.0  # z by which a classifier fitted on the new rows must beat the model on them
DRIFT_CONFIRM_ROWS = 1000  # most recent held rows that classifier sees (it costs O(n^3))
# the key of __getstate__'s table of buffered rows (states written before it hold the rows in place)
_PACKED_ROWS = "_packed_rows"
# the drift test's state: drifts found; reference errors and rows (tested since the last drift); held
# errors and rows (tested, not yet in the reference: too few, or looking drifted); rows not yet tested
DRIFT_STATE = ("n_drifts_", "_drift_errors", "_drift_rows", "_held_errors", "_held_rows", "_untested_rows")
_DOWN = 2.0**-512  # sparse_dot's scale for products beyond floats


def sparse_dot(weights: dict, x: dict) -> float:
    """``sum(weights[k] * x[k])`` over the keys of ``x``, exactly rounded (``math.fsum``), so the
    result does not depend on the order of the features; +-inf when it is beyond floats."""
    try:
        return math.fsum(map(operator.mul, map(weights.get, x.keys(), repeat(0.0)), x.values()))
    except (OverflowError, ValueError):  # a product or the sum beyond floats (ValueError: inf - inf)
        pass
    try:  # exact again on the values scaled by a power of two: +-inf only when the result is beyond floats
        down = math.fsum(map(operator.mul, map(weights.get, x.keys(), repeat(0.0)), (v * _DOWN for v in x.values())))
        return down / _DOWN
    except (OverflowError, ValueError):  # weights as huge as the values: sorted, so order-free
        return sum(sorted(map(operator.mul, map(weights.get, x.keys(), repeat(0.0)), x.values())))


class AlignedWeights:
    """Exact dot products of one weight dict with rows, read from an array of the weights aligned to
    the rows' key order: :func:`sparse_dot`'s result, bit for bit (it is exactly rounded, so unique),
    at array speed for the rows of a stream that repeats its key order. A
    :class:`~robustream.coreset.DenseRow` is read as its array; a dict of numbers is read once into a
    float64 array, as learning reads them (NumPy float32 values too, which :func:`sparse_dot` would
    multiply in float32); anything else (and a product or sum beyond floats) goes to :func:`sparse_dot`.

    The weights must not change in place while this is in use (it reads a copy of them).

    >>> dots = AlignedWeights({"a": 0.5, "b": -2.0})
    >>> dots.dot({"a": 4.0, "b": 1.5, "c": 7.0}), dots.dot({"b": 1.5, "a": 4.0, "c": 7.0})
    (-1.0, -1.0)
    """

    __slots__ = ("weights", "_for_rows", "_for_dicts")

    def __init__(self, weights: dict):
        self.weights = weights
        # (key order, weights in that order), each read and replaced as one object: a DenseRow key list
        # (compared by identity) and a dict's key tuple (compared by value)
        self._for_rows: tuple = (None, np.zeros(0))
        self._for_dicts: tuple = (None, np.zeros(0))

    def _aligned(self, keys) -> tuple:
        get = self.weights.get
        return keys, np.array([get(k, 0.0) for k in keys], dtype=np.float64)

    def dot(self, x: dict) -> float:
        if type(x) is DenseRow:
            keys, weights = self._for_rows
            if x._keys is not keys:
                keys, weights = self._for_rows = self._aligned(x._keys)
            z = exact_dot(weights, x._values)
        elif type(x) is dict:
            keys, weights = self._for_dicts
            if tuple(x) != keys:
                keys, weights = self._for_dicts = self._aligned(tuple(x))
            try:  # the dtype tells whether every value is a real number
                values = np.array(list(x.values()))
            except ValueError:  # sequences of different lengths
                values = None
            if values is None or values.dtype.kind not in "biuf" or values.ndim != 1:  # text, None, ...:
                return sparse_dot(self.weights, x)  # sparse_dot refuses them
            z = exact_dot(weights, values.astype(np.float64, copy=False))
        else:
            return sparse_dot(self.weights, x)
        return z if z == z else sparse_dot(self.weights, x)  # NaN: a value or product beyond floats


def label_sign(y: Any, learner: str) -> float:
    """+1.0 for a positive label, -1.0 for a negative one: ``True``/``False`` (also NumPy's) or 1/0.

    Anything else raises: read as ``bool(y)``, labels -1/+1, 1/2 or "no"/"yes" would all be one
    class, and a third label would silently join the positives.
    """
    if y is True:
        return 1.0
    if y is False:
        return -1.0
    if isinstance(y, (bool, np.bool_)) or (isinstance(y, (int, float, np.integer, np.floating)) and y in (0, 1)):
        return 1.0 if y else -1.0
    raise ValueError(
        f"label {y!r}: {learner} is a binary learner and reads labels as True (positive) / False (or 1 / 0); "
        "map the labels to booleans, or wrap it in river.multiclass.OneVsRestClassifier for more classes"
    )


def error_rise(errors: int, rows: int, ref_errors: int, ref_rows: int) -> tuple[float, float]:
    """``(rise, z)``: how far the error rate ``errors / rows`` lies above the reference rate, and the
    one-sided two-proportion z of that rise (pooled variance; 0 when neither side has an error).

    >>> rise, z = error_rise(30, 100, 150, 1000)  # 30% against 15%
    >>> round(rise, 2), round(z, 2)
    (0.15, 3.87)
    """
    rise = errors / rows - ref_errors / ref_rows
    pooled = (errors + ref_errors) / (rows + ref_rows)
    spread = math.sqrt(pooled * (1.0 - pooled) * (1.0 / rows + 1.0 / ref_rows))
    return rise, (rise / spread if spread > 0.0 else 0.0)


def _new_concept_rows(X, positive: np.ndarray, held_error_rate: float, wrong: np.ndarray) -> int:
    """How many of the latest rows of ``X`` follow a new concept (:func:`fits_a_new_concept`): all the
    held rows (labels ``positive``, the last rows of ``X``; the model erred on ``held_error_rate`` of
    them; if they are at most ``DRIFT_CONFIRM_ROWS``), else the latest ``len(wrong)`` (the rows tested
    now, ``wrong`` where the model erred; at most ``DRIFT_CONFIRM_ROWS``) and halves of them down to
    ``DRIFT_MIN_ROWS``; 0 when none does.

    Right after a change the held rows mix both concepts, and a classifier fitted on them may not
    beat the model; the latest rows are all of the new one. Each extra size is one more test, but
    this runs only after the error test has fired, and a burst of wrong labels fails every size.
    """
    n_held = positive.size
    # the classifier sees at most DRIFT_CONFIRM_ROWS rows: the model's error must be on the same ones
    if n_held <= DRIFT_CONFIRM_ROWS and fits_a_new_concept(X[X.shape[0] - n_held:], positive, held_error_rate):
        return n_held
    m = min(wrong.size, n_held, DRIFT_CONFIRM_ROWS)
    m = m // 2 if m == n_held else m  # that size was just tested
    while m >= DRIFT_MIN_ROWS:
        if fits_a_new_concept(X[X.shape[0] - m:], positive[n_held - m:], float(np.mean(wrong[wrong.size - m:]))):
            return m
        m //= 2
    return 0


def fits_a_new_concept(X, positive: np.ndarray, model_error_rate: float) -> bool:
    """Whether the rows ``X`` (labels ``positive``) follow a concept the model, which erred on a share
    ``model_error_rate`` of them, does not know: a ridge classifier (least squares on the +-1 labels,
    the linear discriminant's direction, with an intercept), each row scored by its fit on all the
    other rows (leave-one-out, exact from one inverse), errs at least ``DRIFT_MIN_RISE``
    less, with a one-sided z above ``DRIFT_CONFIRM``. At most the last ``DRIFT_CONFIRM_ROWS`` rows
    are used.

    Labels flipped at random do not turn the least-squares direction, so after a burst of wrong
    labels the model's errors and this classifier's rise together. (Flips of more than half of one
    class do turn it: such poisoning is taken for a new concept.) Dense or CSR rows; O(n^2 d + n^3)
    for n rows, run only when the error test has fired.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> fits_a_new_concept(X, X[:, 1] > 0, model_error_rate=0.5)  # the model errs on half: another concept
    True
    >>> fits_a_new_concept(X, (X[:, 0] > 0) ^ (rng.random(200) < 0.3), model_error_rate=0.3)  # noisier labels
    False
    """
    if positive.size > DRIFT_CONFIRM_ROWS:  # the most recent ones
        X, positive = X[X.shape[0] - DRIFT_CONFIRM_ROWS:], positive[-DRIFT_CONFIRM_ROWS:]
    n = positive.size
    if positive.all() or not positive.any():
        return False  # one class only: no direction to fit
    with np.errstate(**_FP_POLICY), single_threaded_blas():
        mean = np.asarray(X.mean(axis=0)).ravel()
        if sp.issparse(X):  # the Gram matrix of the centred rows, without centring them (they stay sparse)
            gram = (X @ X.T).toarray()
            x_mean = np.asarray(X @ mean).ravel()
            gram = gram - x_mean[:, None] - x_mean[None, :] + float(mean @ mean)
        else:  # centred first: an offset of 1e6 or more (a timestamp) would cancel away the rest
            centred = np.asarray(X) - mean
            gram = centred @ centred.T
        target = np.where(positive, 1.0, -1.0)
        offset = float(target.mean())
        ridge = 1e-2 * float(np.trace(gram)) / n  # relative: the same decision at any feature scale
        if not ridge > 0.0:
            return False  # the rows are all equal
        gram[np.diag_indices(n)] += ridge
        lower, info = lapack.dpotrf(gram, lower=1, clean=1)  # gram = L L^T
        inverse_lower, info_inverse = lapack.dtrtri(lower, lower=1) if info == 0 else (None, 1)
        if info_inverse != 0 or not np.all(np.isfinite(inverse_lower)):
            return False
        dual = inverse_lower.T @ (inverse_lower @ (target - offset))
        # leave-one-out fits of ridge regression with an unpenalised intercept (the mean and offset
        # refitted without the row, else its own label leaks in when d >= n), from the one fit: the
        # hat matrix is 11^T / n + gram (gram + ridge I)^-1, row i's residual is ridge * dual_i, and
        # 1 - H_ii = ridge * (gram + ridge I)^-1_ii - 1 / n (0: the row alone decides its fit, wrong)
        keep = ridge * np.einsum("ij,ij->j", inverse_lower, inverse_lower) - 1.0 / n
        left_out = np.where(keep > 0.0, target - ridge * dual / np.where(keep > 0.0, keep, 1.0), -target) > 0.0
        errors = int(np.count_nonzero(left_out != positive))
    rise, z = error_rise(round(model_error_rate * n), n, errors, n)
    return rise >= DRIFT_MIN_RISE and z > DRIFT_CONFIRM


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


class RebuildingLinearClassifier(base.MiniBatchClassifier):
    """Shared machinery of the windowed River learners: buffer, warm start, rebuilds, proba, persistence.

    A subclass sets its parameters in ``__init__`` (then calls :meth:`_init_state`) and implements
    :meth:`_fit_rows`, one batch solve on the buffered rows. Its parameters must include
    ``window_size``, ``coreset_size``, ``rebuild_every``, ``rebuild_lag``, ``seed`` and
    ``drift_threshold``.

    Examples
    --------
    A learner whose rebuilds put the hyperplane halfway between the class means:

    >>> import numpy as np
    >>> from robustream.learners.base import RebuildingLinearClassifier
    >>> class ClassMeans(RebuildingLinearClassifier):
    ...     def __init__(self, window_size=100, coreset_size=0, rebuild_every=20, rebuild_lag=0, seed=0,
    ...                  drift_threshold=None):
    ...         self.window_size, self.coreset_size, self.drift_threshold = window_size, coreset_size, drift_threshold
    ...         self.rebuild_every, self.rebuild_lag, self.seed = rebuild_every, rebuild_lag, seed
    ...         self._init_state()
    ...     def _fit_rows(self, X, signs, features, context, seed):
    ...         mean_pos, mean_neg = X[signs > 0].mean(axis=0), X[signs < 0].mean(axis=0)
    ...         w = mean_pos - mean_neg
    ...         b = -float(w @ (mean_pos + mean_neg)) / 2
    ...         no_outliers, no_support = np.zeros(len(signs), bool), np.zeros(len(signs))
    ...         return w, b, no_outliers, no_support, 0.0, float(w @ w) / 2
    >>> model = ClassMeans()
    >>> for i in range(100):
    ...     model.learn_one({"x": (i % 2) - 0.5 + 0.1 * (i % 3)}, i % 2 == 1)
    >>> model.n_rebuilds_, model.predict_one({"x": 0.4}), model.predict_one({"x": -0.4})
    (5, True, False)
    """

    _COEF_IN_ROW_UNITS = True  # the solution is a combination of rows (False: a hinge model's margin scale)
    # the largest |value| a row may have to be learned: a solve that refuses larger values would fail
    # on every rebuild while the row is buffered (about a window), so such a row is refused up front
    _LARGEST_VALUE = math.inf
    _CACHES: tuple[str, ...] = ("_dots",)  # attributes that are caches, not state (copies and states leave them out)

    def _init_state(self) -> None:
        """Validate the buffer parameters every learner has, then start from an empty model."""
        for name in ("window_size", "rebuild_every"):
            v = getattr(self, name)
            if not (is_integer(v) and v >= 1):
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
            check_length(name, v)
        if not (is_integer(self.rebuild_lag) and 0 <= self.rebuild_lag <= self.rebuild_every):
            raise ValueError(f"rebuild_lag must be an integer in [0, rebuild_every], got {self.rebuild_lag!r}")
        seed = getattr(self, "seed", 0)
        if not (is_integer(seed) and 0 <= seed < 2**62):  # rebuild seeds are seed + n_rebuilds_
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        if not (is_integer(self.coreset_size) and self.coreset_size >= 0):
            raise ValueError(f"coreset_size must be a non-negative integer, got {self.coreset_size!r}")
        check_length("coreset_size", self.coreset_size)
        threshold = self.drift_threshold
        if not (threshold is None or (is_real(threshold) and 0.0 < threshold < math.inf)):
            raise ValueError(f"drift_threshold must be a positive number or None, got {threshold!r}")
        for name in _init_parameters(type(self)):  # every number a learner's constructor took, whatever its role
            v = getattr(self, name)
            if is_real(v) and not is_integer(v) and not math.isfinite(v):
                raise ValueError(f"{name} must be a finite number, got {v!r}")
        self.weights: dict[Hashable, float] = {}
        self.intercept_ = 0.0
        self.margin_width_ = 0.0
        self.outlier_rate_ = 0.0
        self.n_rebuilds_ = 0
        self.n_failed_rebuilds_ = 0
        self.__dict__.update(dict.fromkeys(DRIFT_STATE, 0))
        self._margin_unit = 1.0
        self._proba_slope = 1.0
        self._since_rebuild = 0
        self._pending: dict | None = None  # the rebuild running in the background
        self._support: list[tuple[tuple, float]] = []  # (row, convex coefficient) of the last solution
        self._arrival_keys: tuple = ()
        self._canonical_keys: list = []
        self._buffer = RowBuffer(self.window_size, self.coreset_size)

    def _fit_rows(
        self, X, signs: np.ndarray, features: list, context: dict, seed: int
    ) -> tuple[np.ndarray, float, np.ndarray, np.ndarray, float, float]:
        """Solve on the rows ``X`` (columns: ``features``) with the ``context`` of
        :meth:`_fit_context` and the rebuild's ``seed``; may run in the rebuild worker process on
        an empty twin of ``self`` (same parameters), so it reads no learned state of ``self``.
        Return ``(coef, intercept, outlier_mask, row_weight, margin_width, margin_unit)``; raise
        ValueError when the rows cannot be solved. ``row_weight`` > 0 marks the support rows."""
        raise NotImplementedError

    @property
    def _multiclass(self) -> bool:
        return False


    # -- inference ----------------------------------------------------------------------------
    def decision_one(self, x: dict) -> float:
        """``w . x + b`` in O(non-zero features); ValueError naming a feature that is not a finite number."""
        try:
            z = self._weight_dots().dot(x) + self.intercept_
        except (TypeError, OverflowError, AttributeError):  # a value not a number, an int beyond floats, ...
            check_features(x)  # ... or not a dict at all
            numeric_row(x, x)  # raises, naming the feature
            raise FeatureValueError(non_number_message(x)) from None
        if not math.isfinite(z):  # a NaN or infinite feature value (learning rejects those rows too); a
            numeric_row(x, x)  # product of finite values beyond floats passes this check and stays +-inf
        return z

    def _weight_dots(self) -> AlignedWeights:
        """The :class:`AlignedWeights` of ``self.weights`` (a cache: not part of the state)."""
        dots = self.__dict__.get("_dots")
        if dots is None or dots.weights is not self.weights:
            dots = self._dots = AlignedWeights(self.weights)
        return dots

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
        sign = label_sign(y, type(self).__name__)
        return -sign * self.decision_one(x) / self._margin_unit

    # -- learning -------------------------------------------------------------------------------
    def learn_one(self, x: dict, y: Any, **kwargs) -> None:
        if kwargs:  # River's sample weight (learn_one(x, y, w=2.0)): Python's TypeError named the base class
            raise TypeError(f"{type(self).__name__}.learn_one takes no {', '.join(map(repr, kwargs))}: sample "
                            "weights are not supported, every row counts once")
        if type(x) is not dict:
            check_features(x)
        sign = label_sign(y, type(self).__name__)
        # canonical key order: everything downstream is independent of the order features arrive in
        keys = tuple(x)
        if keys != self._arrival_keys:  # streams mostly repeat one key order: sort it once
            # NumPy keys (np.str_ from dict(zip(np.array(names), row))) as the Python ones they equal: a
            # saved model stores Python keys, and the key order must not change across a save and load
            self._arrival_keys = keys
            self._canonical_keys = sorted((k.item() if isinstance(k, np.generic) else k for k in keys), key=key_order)
        # a row of a dense stream's features, all finite non-zero floats, as the buffer stores it; else a dict
        row = self._buffer.dense_row(x, self._canonical_keys)
        if row is None:
            row = numeric_row(x, self._canonical_keys)
        if self._LARGEST_VALUE < math.inf:  # learners whose solve takes any finite value (limit inf) skip it
            refuse_values_beyond(row, self._LARGEST_VALUE, f"{type(self).__name__}'s solve")
        self._before_learn(row, sign)
        self._buffer.append(row, sign, self._canonical_keys)
        self._untested_rows += 1
        if self.n_rebuilds_ == 0:
            self._passive_aggressive(row, sign)
            if self.rebuild_lag and len(self._buffer.window) == 1:
                _start_worker()  # it imports while the first rows arrive, not when the first rebuild is due
        self._since_rebuild += 1
        try:
            if self._pending is not None:
                self._pending["due"] -= 1
                if self._pending["due"] <= 0:
                    self._finish_pending()
        finally:  # the schedule holds even when applying the previous rebuild raised
            if self._since_rebuild >= self.rebuild_every:
                self._since_rebuild = 0
                if self.rebuild_lag == 0:
                    self.rebuild()
                else:
                    self._start_pending()

    def _before_learn(self, row: dict, sign: float) -> None:
        """The validated row and its label (+1 / -1), before any state changes: a hook for learners
        that score something on each row before learning it (``RGDSVMClassifier``'s ``"auto"``)."""

    def _start_pending(self) -> None:
        self._pending = self._snapshot()
        if self._pending is None:
            return
        self._pending["due"] = self.rebuild_lag
        features, X = self._pending["matrix"]
        try:
            if type(self).__module__ == "__main__":
                raise WorkerUnavailable(f"{type(self).__qualname__} is defined in __main__, which the worker cannot import")
            pickle.dumps(type(self))  # a class the worker can import by name
            self._pending["future"] = solve_worker().submit(
                _solve_in_worker, type(self), self._constructor_params(), X, self._pending["signs"], features,
                self._pending["context"], self._pending["seed"],
            )  # fmt: skip
            self._pending["pid"] = os.getpid()
        except Exception as exc:  # noqa: BLE001 - no worker for this rebuild: it is solved here when due
            _warn_solved_here(type(self), exc)

    def _constructor_params(self) -> dict:
        """The ``__init__`` arguments of this learner: the worker rebuilds an empty twin from them."""
        return {name: getattr(self, name) for name in _init_parameters(type(self))}

    def _passive_aggressive(self, row: dict, sign: float, C: float = 0.01) -> None:
        loss = max(0.0, 1.0 - sign * self.decision_one(row))
        try:
            norm2 = math.fsum(v * v for v in row.values()) + 1.0
        except OverflowError:  # values near the float limit: no step
            norm2 = math.inf
        if loss > 0.0:
            step = min(C, loss / norm2) * sign
            for k, v in row.items():
                self.weights[k] = self.weights.get(k, 0.0) + step * v
            self._dots = None  # the weights changed in place
            self.intercept_ += step

    def rebuild(self) -> bool:
        """Solve on coreset + window now; returns False (and keeps the model) when it cannot.

        A rebuild still running in the background (``rebuild_lag``) is applied first.
        """
        if self._pending is not None:
            self._finish_pending()
        snapshot = self._snapshot()
        return snapshot is not None and self._apply(snapshot, self._compute(snapshot))

    # A rebuild in three steps: the snapshot (with its matrix) and the apply run on the caller's thread
    # (they read and write the model); the solve reads only the snapshot, so it can run in the rebuild
    # worker process while the stream goes on (``rebuild_lag`` > 0). The result depends only on the
    # snapshot, and it is applied after exactly ``rebuild_lag`` more rows, so the model is the same on
    # every machine.
    def _snapshot(self) -> dict | None:
        """The rows, labels, matrix, solver context and seed of a rebuild (after the drift test);
        None (a failed rebuild) when a class has fewer than 2 rows."""
        rows = self._buffer.rows()
        matrix = self._matrix(rows)
        if self._check_drift(*matrix):  # rows were dropped
            rows = self._buffer.rows()
            matrix = self._matrix(rows)
        signs = np.array([s for _, s in rows])
        n_pos = int((signs > 0).sum())
        if n_pos < 2 or signs.size - n_pos < 2:
            self.n_failed_rebuilds_ += 1
            if self.n_rebuilds_ == 0:  # the warm start learns every row: keep the weights of buffered features
                buffered = set(matrix[0])  # only, or ever-new keys (hashed tokens) would grow them without bound
                self.weights = {k: v for k, v in self.weights.items() if k in buffered}
            return None
        context = self._fit_context(n_pos, signs.size - n_pos, matrix)
        if self._support:  # the last solution's convex coefficients: where this solve's polish starts
            weight = {id(item): w for item, w in self._support}
            context["polish_start"] = np.fromiter(map(weight.get, map(id, rows), repeat(0.0)), np.float64, len(rows))
        return {"rows": rows, "signs": signs, "context": context, "seed": self.seed + self.n_rebuilds_,
                "matrix": matrix}

    def _check_drift(self, features: list, X) -> bool:
        """Forget the past when the concept changed (DDM-like, with a check that the labels did not
        merely get noisier). True when rows were dropped.

        The rows learned since the last test were not in the current model's solve, so its error on
        them (against their labels, wrong ones included) is an honest estimate. Tested rows are held
        until there are ``DRIFT_MIN_ROWS`` of them, then compared with the rows tested since the last
        drift (the reference) by a one-sided, pooled two-proportion z-test; while their z is above
        ``DRIFT_WARNING`` (and they fit in the window) they stay held and are tested again with the
        next ones. When it exceeds ``drift_threshold`` (and their error rate is ``DRIFT_MIN_RISE``
        above the reference), a ridge classifier scored leave-one-out on the held rows, or on the
        latest of them (:func:`_new_concept_rows`), must also err significantly less than the model
        did (:func:`fits_a_new_concept`): more wrong labels raise both errors alike, a new concept
        only the model's. Then the coreset and the window's rows from before those rows are dropped
        (a coreset of the old concept would otherwise outlive the window and pull every later solve
        back towards it). Otherwise the rows stay held (the first ones after a change
        mix both concepts) until they fill the window, then become the reference: the labels got
        noisier. ``X``: the matrix of the buffered rows (window last; columns ``features``).
        """
        window = self._buffer.window
        n_new = min(self._untested_rows, len(window))
        self._untested_rows = 0
        if self.drift_threshold is None or self.n_rebuilds_ == 0 or n_new == 0:
            return False  # before the first rebuild the model learns from these rows: no honest error
        w = np.fromiter((self.weights.get(f, 0.0) for f in features), np.float64, len(features))
        with np.errstate(**_FP_POLICY), single_threaded_blas():  # one BLAS thread, as in the solve
            predicted = np.asarray(X[X.shape[0] - n_new:] @ w).ravel() + self.intercept_ > 0.0
        labels = _latest_labels(window, n_new)
        self._held_errors += int(np.count_nonzero(predicted != labels))
        self._held_rows += n_new
        held = (self._held_errors, self._held_rows)
        if held[1] < DRIFT_MIN_ROWS:
            return False  # a short rebuild period: test these rows with the next ones
        ref = (self._drift_errors, self._drift_rows)
        if ref[1] >= DRIFT_MIN_REFERENCE_ROWS:
            rise, z = error_rise(*held, *ref)
            if rise >= DRIFT_MIN_RISE and z > self.drift_threshold:
                n_rows = min(held[1], len(window))
                n_rows = _new_concept_rows(X, _latest_labels(window, n_rows), held[0] / held[1], predicted != labels)
                if n_rows:
                    self.n_drifts_ += 1
                    self._buffer.coreset = []
                    for _ in range(len(window) - n_rows):
                        window.popleft()
                    self._support = []
                    self._drift_errors = self._drift_rows = self._held_errors = self._held_rows = 0
                    return True
                if held[1] >= len(window):  # the labels got noisier: the new level is the reference
                    self._drift_errors, self._drift_rows = held
                    self._held_errors = self._held_rows = 0
                return False  # (or too few rows of the new concept among the held ones yet)
            if z > DRIFT_WARNING and held[1] < len(window):  # these rows look drifted: wait for the next ones
                return False
        self._drift_errors += held[0]
        self._drift_rows += held[1]
        self._held_errors = self._held_rows = 0
        return False

    def _matrix(self, rows: list):
        """``(features, X)`` of buffered rows (dense when mostly non-zero); on the caller's thread."""
        features, X = self._buffer.matrix(rows)  # its cache is used by one rebuild at a time
        if sp.issparse(X) and X.nnz > DENSE_ABOVE * X.shape[0] * X.shape[1]:
            X = X.toarray()  # dense BLAS products are several times faster than sparse ones on dense rows
        return features, X

    def _compute(self, snapshot: dict):
        """The solve of a snapshot, here: ``(features, X, fit, context)``."""
        features, X = snapshot["matrix"]
        return (features, X, *self._solve_here(X, features, snapshot))

    def _solve_here(self, X, features: list, snapshot: dict):
        """:meth:`_solve` in this process; a solve that raises is counted as failed, as one in the worker is."""
        try:
            return self._solve(X, snapshot["signs"], features, snapshot["context"], snapshot["seed"])
        except Exception:
            self.n_failed_rebuilds_ += 1
            raise

    @single_threaded_blas()
    def _solve(self, X, signs: np.ndarray, features: list, context: dict, seed: int):
        """``(fit, context)``: :meth:`_fit_rows` on the matrix (``fit`` None when the rows cannot be
        solved), and its context with the solve's by-products. Reads only the parameters of ``self``,
        so the rebuild worker runs it on an empty twin."""
        context = dict(context)  # the solve may add its by-products; the snapshot stays as taken
        try:
            # one floating-point error policy whatever the thread (NumPy's error state is per thread)
            with np.errstate(**_FP_POLICY):
                fit = self._fit_rows(X, signs, features, context, seed)
        except (ValueError, FloatingPointError) as exc:
            fit, context["error"] = None, f"{type(exc).__name__}: {exc}"
        row_units = self._COEF_IN_ROW_UNITS
        with np.errstate(**_FP_POLICY):  # squares of a row near the float limit overflow: the check reads inf
            unusable = fit is not None and (
                not np.all(np.isfinite(fit[0])) or _negligible(fit[0], X, fit[3], row_units)
            )
        if unusable:
            fit, context["error"] = None, _unusable_reason(fit[0], X)
        return fit, context

    def _finish_pending(self) -> None:
        pending, self._pending = self._pending, None
        features, X = pending.get("matrix") or self._matrix(pending["rows"])  # a copy has no matrix (nor worker)
        future, solved, unavailable = pending.get("future"), None, None
        if future is not None and pending.get("pid") == os.getpid():  # (a forked child has no worker for it)
            try:
                solved = future.result()
            except WorkerUnavailable as exc:  # the worker stopped or could not load the call: solve here
                unavailable = exc
            except Exception:
                self.n_failed_rebuilds_ += 1
                raise
        if solved is None:
            solved = self._solve_here(X, features, pending)
        self._apply(pending, (features, X, *solved))
        if unavailable is not None:  # after the apply: a warning turned into an error loses nothing
            _warn_solved_here(type(self), unavailable)

    def _apply(self, snapshot: dict, computed) -> bool:
        features, X, fit, context = computed
        if fit is None:
            _warn_failed_rebuild(type(self), context.get("error", "?"))
            self.n_failed_rebuilds_ += 1
            _warn_about_parameters(context)
            return False
        coef, intercept, outlier_mask, row_weight, width, unit = fit
        signs = snapshot["signs"]
        self.weights = {f: float(v) for f, v in zip(features, coef) if v != 0.0}
        self.intercept_ = float(intercept)
        self.margin_width_ = float(width)
        self.outlier_rate_ = float(outlier_mask.mean())
        # the margin unit scales with the square of the features: no absolute floor (w = 0 has no unit)
        self._margin_unit = float(unit) if unit > 0.0 and math.isfinite(unit) else 1.0
        # the margins choose the next coreset: one BLAS thread, as in the solve, so the model does not
        # depend on the thread count
        with np.errstate(**_FP_POLICY), single_threaded_blas():
            margins = signs * (np.asarray(X @ coef).ravel() + intercept) / self._margin_unit
            self._proba_slope = _fit_slope(margins)
        self._buffer.refresh_coreset(snapshot["rows"], row_weight, margins, ~outlier_mask, seed=snapshot["seed"])
        rows, support = snapshot["rows"], np.flatnonzero(row_weight > 0.0)
        self._support = [(rows[i], w) for i, w in zip(support.tolist(), row_weight[support].tolist())]
        self._after_fit(context)
        self.n_rebuilds_ += 1
        _warn_about_parameters(context)
        return True

    def _fit_context(self, n_pos: int, n_neg: int, matrix: tuple | None = None) -> dict:
        """What a subclass's solve of ``n_pos`` positive and ``n_neg`` negative rows needs from the
        current model (read on the caller's thread); ``matrix``: the rebuild's ``(features, X)``."""
        return {}

    def _after_fit(self, context: dict) -> None:
        """Install what a successful solve left in ``context`` (on the caller's thread)."""

    def clone(self, new_params: dict | None = None, include_attributes: bool = False) -> RebuildingLinearClassifier:
        """River's ``clone``; with ``include_attributes`` the learned state is copied in one deep copy
        (River copies attribute by attribute, so the last solution's rows stopped being the buffer's rows
        and a running background rebuild took its process pool along)."""
        clone = super().clone(new_params)
        if include_attributes:
            params = clone._get_params()
            for attr, value in copy.deepcopy(self._plain_state()).items():
                if attr not in params:
                    setattr(clone, attr, value)
        return clone

    def _plain_state(self) -> dict:
        """The attributes a copy takes, rows as they are (shared between the buffer, the last solution
        and a pending rebuild's snapshot)."""
        state = self.__dict__.copy()
        for name in self._CACHES:
            state.pop(name, None)
        if self._pending is not None:  # a copy recomputes the running rebuild from its snapshot
            state["_pending"] = {k: v for k, v in self._pending.items() if k not in ("future", "pid", "matrix")}
        return state

    def __getstate__(self) -> dict:
        """:meth:`_plain_state` with every buffered row in one table (:func:`~robustream.coreset.pack_rows`),
        each row once, and the buffer, the last solution and a pending snapshot holding positions in
        it: what pickle and the daemon's checkpoints write (a writer that walks objects memoises the
        shared rows by identity, so they stay shared, but pays an object per row: a checkpoint of an
        RGDSVMClassifier holding 1,500 rows of 20 features took 38 ms to encode and 77 ms to load, and
        takes 7 and 12 ms as one table; ``benchmarks/daemon_throughput.py`` reports the checkpoints)."""
        state = self._plain_state()
        buffer, pending = self._buffer, state["_pending"]
        items, rows = self._rows_by_position()
        rows["table"] = pack_rows(items)
        shell = copy.copy(buffer)  # the buffer's settings; its rows are in the table
        shell.window, shell.coreset = deque(maxlen=buffer.window.maxlen), []
        state["_buffer"], state["_support"], state[_PACKED_ROWS] = shell, [], rows
        if pending is not None:
            state["_pending"] = {**pending, "rows": []}
        return state

    def __setstate__(self, state: dict) -> None:
        # states written by versions without background rebuilds or the key-order cache lack these
        self.__dict__.update({"_pending": None, "_support": [], "_arrival_keys": (), "_canonical_keys": []})
        # ... nor the drift test (they get it as models built now do, as a loaded model file does)
        self.__dict__.update({"drift_threshold": DRIFT_THRESHOLD, **dict.fromkeys(DRIFT_STATE, 0)})
        state = dict(state)  # the caller's stays as it is
        rows = state.pop(_PACKED_ROWS, None)  # None: written before the rows were packed, or a plain state
        self.__dict__.update(state)
        if rows is not None:
            pending_rows = self._place_rows(unpack_rows(rows["table"]), rows)
            if pending_rows is not None:
                self._pending = {**self._pending, "rows": pending_rows}

    def _rows_by_position(self) -> tuple[list, dict]:
        """``(items, where)``: every buffered row once (by identity), and the window, coreset, last
        solution (``[position, coefficient]``) and pending snapshot (None without one) as positions in
        ``items``: how a state writes rows that several of them share. :meth:`_place_rows` reads it."""
        items: list = []
        position: dict[int, int] = {}

        def at(item) -> int:
            found = position.get(id(item))
            if found is None:
                found = position[id(item)] = len(items)
                items.append(item)
            return found

        where = {
            "window": [at(item) for item in self._buffer.window],
            "coreset": [at(item) for item in self._buffer.coreset],
            "support": [[at(item), w] for item, w in self._support],
            "pending": None if self._pending is None else [at(item) for item in self._pending["rows"]],
        }
        return items, where

    def _place_rows(self, items: list, where: dict) -> list | None:
        """Put the rows of :meth:`_rows_by_position` back in the window, coreset and last solution;
        return the pending snapshot's rows (None without one)."""
        self._buffer.window.extend(items[i] for i in where["window"])
        self._buffer.coreset = [items[i] for i in where["coreset"]]
        self._support = [(items[i], w) for i, w in where["support"]]
        return None if where["pending"] is None else [items[i] for i in where["pending"]]

    # -- mini-batch API ------------------------------------------------------------------------
    def learn_many(self, X: pd.DataFrame, y: pd.Series) -> None:
        if len(X) != len(y):  # zip would silently learn only the rows that have a label
            raise ValueError(f"X has {len(X)} rows but y has {len(y)} labels")
        for x, target in zip(_dict_rows(X), y):
            self.learn_one(x, target)

    def predict_proba_many(self, X: pd.DataFrame) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame([self.predict_proba_one(x) for x in _dict_rows(X)], index=X.index, columns=[False, True],
                            dtype=float)  # fmt: skip

    def predict_many(self, X: pd.DataFrame) -> pd.Series:
        import pandas as pd

        return pd.Series([self.predict_one(x) for x in _dict_rows(X)], index=X.index, dtype=bool)

    # -- persistence ---------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write the model (parameters, weights, buffers) as a versioned, checksummed JSON file."""
        persist.dump({"class": type(self).__name__, "params": self._get_params(), "state": self._state()}, path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> RebuildingLinearClassifier:
        """Inverse of :meth:`save`; raises ``persist.CorruptModelError`` on a damaged file."""
        payload = persist.load(path)
        if payload.get("class") != cls.__name__:
            raise persist.CorruptModelError(f"{path}: holds a {payload.get('class')!r}, not a {cls.__name__}")
        try:
            model = cls(**payload["params"])
            model._set_state(payload["state"])
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:  # checksummed, but not ours
            raise persist.CorruptModelError(f"{path}: not a {cls.__name__} this version can read "
                                            f"({type(exc).__name__}: {exc})") from None
        return model

    def _state(self) -> dict:
        """What :meth:`save` writes: the buffered rows once, as one table (:func:`_encode_rows`), and
        the window, coreset, last solution and pending snapshot as positions in it."""
        items, where = self._rows_by_position()
        if where["pending"] is not None:  # a loaded model recomputes the running rebuild from its snapshot
            where["pending"] = {"rows": where["pending"], "due": self._pending["due"], "seed": self._pending["seed"],
                                "context": {k: _encode_value(v) for k, v in self._pending["context"].items()}}
        return {
            "weights": _encode_row(self.weights),
            "intercept": self.intercept_,
            "margin_width": self.margin_width_,
            "outlier_rate": self.outlier_rate_,
            "n_rebuilds": self.n_rebuilds_,
            "n_failed_rebuilds": self.n_failed_rebuilds_,
            "margin_unit": self._margin_unit,
            "proba_slope": self._proba_slope,
            "since_rebuild": self._since_rebuild,
            "drift": [getattr(self, name) for name in DRIFT_STATE],
            "rows": _encode_rows(items),
            **where,
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
        # files written before the drift test have none
        self.__dict__.update(zip(DRIFT_STATE, st.get("drift", [0] * len(DRIFT_STATE))))
        if "rows" in st:  # version 2: one table of rows, positions in it
            pending = st["pending"]
            where = {**st, "pending": None if pending is None else pending["rows"]}
            rows = self._place_rows(_decode_rows(st["rows"]), where)
            if pending is not None:
                self._pending = {
                    "rows": rows, "signs": np.array([s for _, s in rows]), "due": pending["due"],
                    "seed": pending["seed"], "context": {k: _decode_value(v) for k, v in pending["context"].items()},
                }  # fmt: skip
            return
        # version 1: rows written out in the window, positions ["window", i] elsewhere
        window = [(dec(x), s) for x, s in st["window"]]
        self._buffer.window.extend(window)
        self._buffer.coreset = [window[b] if a == "window" else (dec(a), b) for a, b in st["coreset"]]
        by = {"window": window, "coreset": self._buffer.coreset}
        self._support = [(by[a][b], w) for a, b, w in st.get("support", [])]
        pending = st.get("pending")  # files written before rebuild_lag existed have none
        if pending is not None:
            rows = [by[a][b] if isinstance(a, str) else (dec(a), b) for a, b in pending["rows"]]
            self._pending = {
                "rows": rows, "signs": np.array([s for _, s in rows]), "due": pending["due"], "seed": pending["seed"],
                "context": {k: _decode_value(v) for k, v in pending["context"].items()},
            }  # fmt: skip


_FP_POLICY = {"all": "ignore"}  # non-finite results are caught by the checks on the solution


def _start_worker() -> None:
    try:
        solve_worker()
    except Exception:  # noqa: BLE001 - no worker here: the first rebuild says why
        pass


def _warn_solved_here(cls, exc: Exception) -> None:
    """A background rebuild runs in the stream's thread. The reasons carry no process ids, so Python's
    default filter shows each once (a worker that never started is not retried: one reason for good)."""
    warnings.warn(f"{cls.__qualname__}: rebuild_lag > 0 but no rebuild worker process ({exc}); the rebuild "
                  "is solved in this thread when due", RuntimeWarning, stacklevel=_caller_level())  # fmt: skip


def _warn_failed_rebuild(cls, reason: str) -> None:
    """A rebuild that cannot be solved keeps the model in use (``n_failed_rebuilds_`` counts them);
    the reason is shown (once per distinct reason, Python's default filter) so that a cause such as
    values too large to square does not stay hidden."""
    warnings.warn(f"{cls.__qualname__}: rebuild failed, the previous model stays in use ({reason})",
                  RuntimeWarning, stacklevel=_caller_level())  # fmt: skip


def _warn_about_parameters(context: dict) -> None:
    """The warning a subclass's :meth:`~RebuildingLinearClassifier._fit_context` left for this rebuild
    (``context["warning"]``, e.g. a fixed outlier fraction that discards most of a class), raised once the
    rebuild is applied: with warnings as errors the model is complete when it reaches the caller."""
    if context.get("warning"):
        warnings.warn(context["warning"], UserWarning, stacklevel=_caller_level())


def _caller_level() -> int:
    """``stacklevel`` of the first frame outside robustream (the user's ``learn_one`` call), counted
    from the ``warnings.warn`` of the caller."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def _solve_in_worker(cls, params: dict, X, signs, features, context, seed):
    """A background rebuild's solve, in the worker process: an empty learner of the same parameters solves."""
    return cls(**params)._solve(X, signs, features, context, seed)


@functools.lru_cache(maxsize=None)
def _init_parameters(cls) -> tuple[str, ...]:
    return tuple(p for p in inspect.signature(cls.__init__).parameters if p != "self")


def _latest_labels(window, n: int) -> np.ndarray:
    """Whether each of the last ``n`` rows of the window is labelled positive."""
    return np.fromiter((s > 0.0 for _, s in islice(window, len(window) - n, None)), bool, n)


def _negligible(coef: np.ndarray, X, support: np.ndarray, row_units: bool) -> bool:
    """``coef`` is zero up to rounding: the rows (e.g. all equal, both labels) gave no direction (a
    rounding residue of 1e-16 passed as a model: every prediction certain, scores near 1e32).

    The residue of combining rows scales with the rows combined (``support``: row weights > 0), as
    the solve moved them (:func:`robustream.solver.row_offset`); a far-away row that carries no weight
    does not count. ``row_units``: ``coef`` is such a combination (compared with the largest support
    row norm), else its products with the rows are margins (compared with 1).
    """
    if not np.any(coef):
        return True
    rows = X[np.flatnonzero(support > 0.0)]
    if rows.shape[0] == 0:
        return False
    if sp.issparse(rows):
        rows_sq = np.asarray(rows.multiply(rows).sum(axis=1)).ravel()
    else:
        offset = row_offset(X)
        rows = rows if offset is None else rows - offset
        rows_sq = np.einsum("ij,ij->i", rows, rows)
    scale, size = float(rows_sq.max()), float(coef @ coef)
    return negligible_direction(coef, scale) if row_units else size * scale <= NEGLIGIBLE_W2


def _unusable_reason(coef: np.ndarray, X) -> str:
    """Why a solution ``coef`` that is not finite or :func:`_negligible` cannot be used, for the
    rebuild's warning: feature scale is named only where the rows are far from unit scale (a
    constant that fits best, as when one class is rare, says nothing about scaling)."""
    largest = largest_value(X)
    what = "not finite" if not np.all(np.isfinite(coef)) else "zero up to rounding"
    if largest > 0.0 and not 1e-3 <= largest <= 1e3:  # (every value zero: no direction, whatever the scale)
        return (f"the solution is {what}: the features are far from unit scale (largest |value| {largest:.3g}; "
                "standardise them)")
    if what == "not finite":
        return "the solution is not finite"
    return ("the solution is zero up to rounding: these rows give no direction, a constant fits them best (for "
            "example when one class is rare, or both labels sit on the same points)")


def _dict_rows(X):
    """Rows of a DataFrame as dicts, without the missing cells (NaN, None, pandas' NA) of features a
    row does not have."""
    import pandas as pd

    for _, row in X.iterrows():
        yield {k: v for k, v in row.items() if not (v is None or v is pd.NA or (isinstance(v, float) and v != v))}


_SAVED_KEY_TYPES = frozenset([str, int, float, bool])


def _check_saved_keys(keys: Iterable) -> None:
    """TypeError naming the first feature key a model file (JSON) cannot hold."""
    if not _SAVED_KEY_TYPES.issuperset(map(type, keys)):  # subclasses of these (not NumPy's) pass below
        for k in keys:
            if not isinstance(k, (str, int, float, bool)) or isinstance(k, np.generic):
                raise TypeError(f"feature key {k!r} of type {type(k).__name__} cannot be saved (use str or int keys)")


def _encode_row(row: dict) -> list:
    """``row`` as ``[key, value]`` pairs for a model file; TypeError naming a key JSON cannot hold."""
    keys, values = (row._keys, row._values.tolist()) if type(row) is DenseRow else (list(row), row.values())
    _check_saved_keys(keys)
    return list(map(list, zip(keys, map(float, values))))


def _encode_rows(items: list) -> dict:
    """``(row, sign)`` pairs as a model file holds them: :func:`~robustream.coreset.pack_rows`'s table,
    each block of dense rows as its key list and its values as little-endian float64 in base64 (JSON
    text of 100,000 floats cost 0.2 s to write and as much to read), other rows as pairs."""
    table = pack_rows(items)
    dense = []
    for keys, _, at, values in table["dense"]:
        _check_saved_keys(keys)
        dense.append({"keys": list(keys), "at": at.tolist(),
                      "values": base64.b64encode(values.astype("<f8").tobytes()).decode("ascii")})  # fmt: skip
    return {"signs": table["signs"].tolist(), "dense": dense,
            "other": [[i, _encode_row(row)] for i, row in table["other"]]}  # fmt: skip


def _decode_rows(table: dict) -> list:
    """The ``(row, sign)`` pairs of :func:`_encode_rows`; ValueError on a table that is not one."""
    signs = [float(s) for s in table["signs"]]
    if not all(s in (1.0, -1.0) for s in signs):
        raise ValueError("a row's label sign is not +1 or -1")
    dense = []
    for block in table["dense"]:
        keys, at = list(block["keys"]), np.array([int(i) for i in block["at"]], dtype=np.int64)
        raw = base64.b64decode(block["values"], validate=True)
        if len(raw) != 8 * at.size * len(keys):
            raise ValueError("a block of dense rows has the wrong size")
        values = np.frombuffer(raw, dtype="<f8").astype(np.float64).reshape(at.size, len(keys))
        if not (np.isfinite(values).all() and values.all()):
            raise ValueError("a block of dense rows holds a value that is zero or not finite")
        dense.append([keys, {k: j for j, k in enumerate(keys)}, at, values])
    other = [[i, _decode_row(pairs)] for i, pairs in table["other"]]
    items = unpack_rows({"signs": np.array(signs), "dense": dense, "other": other})
    if any(row is None for row, _ in items):
        raise ValueError("the table of rows has a gap")
    return items


def _decode_row(pairs: list) -> dict:
    return {k: v for k, v in pairs}


def _encode_value(v):
    """A solver context value (numbers, None, feature dicts, arrays, lists of them) as JSON."""
    if isinstance(v, dict):
        return {"row": _encode_row(v)}
    if isinstance(v, np.ndarray):
        return {"array": [float(u) for u in v]}
    if isinstance(v, (list, tuple)):
        return [_encode_value(u) for u in v]
    return v


def _decode_value(v):
    if isinstance(v, dict):
        return np.array(v["array"], dtype=np.float64) if "array" in v else _decode_row(v["row"])
    if isinstance(v, list):
        return [_decode_value(u) for u in v]
    return v


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
