"""RampSVMClassifier: the ramp-loss robust SVM solved by CCCP on the buffered rows."""

from __future__ import annotations

import numpy as np

from ..ramp import ramp_svm_cccp
from ..validation import is_real
from .base import DRIFT_THRESHOLD, RebuildingLinearClassifier


class RampSVMClassifier(RebuildingLinearClassifier):
    """Ramp-loss SVM (the outlier-path paper's CCCP baseline) on a window + coreset, for River.

    Every ``rebuild_every`` rows, :func:`robustream.ramp.ramp_svm_cccp` (hinge start, then CCCP
    steps; a row with ``y f(x) < s`` exerts no pull) is solved on coreset + window. The coreset
    keeps the rows with non-zero dual variables plus low-margin inliers; the outliers are the rows
    with ``y f(x) < s``. Margins are in the canonical hinge scale (``|f| = 1`` on the margin).
    ``rebuild_lag > 0`` runs the rebuilds in a worker process, as in
    :class:`~robustream.RGDSVMClassifier`.
    ``drift_threshold`` (None: off) drops the coreset and the window's older rows when the model's
    error jumps (a concept drift; ``n_drifts_`` counts them), as in :class:`~robustream.RGDSVMClassifier`.

    Parameters
    ----------
    C
        Weight of the ramp losses against ``|w|^2 / 2``, > 0. The default 0.1 differs from
        :class:`robustream.ramp.RampSVC`'s 1.0 (scikit-learn's convention for a batch fit); it has not
        been tuned on the shared data sets: pass ``C=1.0`` for the batch estimator's objective.
    s
        The ramp's break point, < 1: a row with ``y f(x) < s`` exerts no pull (an outlier); the
        default -1 is the outlier-path paper's.
    window_size, coreset_size, rebuild_every, rebuild_lag
        The buffer and the rebuild schedule, as in :class:`~robustream.RGDSVMClassifier`: rows kept
        from the recent stream, rows kept from past solutions, the rebuild period, and how many rows
        later a rebuild solved in the worker process is applied (0: solved in the ``learn_one`` that
        triggers it).
    seed
        Seed of the dual solver's coordinate orders; same seed and stream give the same model.
    drift_threshold
        The concept-drift test's z threshold (None: off), as in :class:`~robustream.RGDSVMClassifier`.

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from robustream import RampSVMClassifier
    >>> model = preprocessing.StandardScaler() | RampSVMClassifier(C=0.1, rebuild_every=200)
    >>> evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy()).get() > 0.8
    True
    """

    _COEF_IN_ROW_UNITS = False  # w.x is in margin units

    def __init__(
        self,
        C: float = 0.1,
        s: float = -1.0,
        window_size: int = 1000,
        coreset_size: int = 500,
        rebuild_every: int = 250,
        rebuild_lag: int = 0,
        seed: int = 0,
        drift_threshold: float | None = DRIFT_THRESHOLD,
    ):
        self.C = C
        self.s = s
        self.window_size = window_size
        self.coreset_size = coreset_size
        self.rebuild_every = rebuild_every
        self.rebuild_lag = rebuild_lag
        self.seed = seed
        self.drift_threshold = drift_threshold
        if not (is_real(C) and C > 0):  # NaN and infinity: refused with the other numbers, below
            raise ValueError(f"C must be a positive number, got {C!r}")
        if not (is_real(s) and s < 1):
            raise ValueError(f"s must be a number below 1, got {s!r}")
        self._init_state()

    @classmethod
    def _unit_test_params(cls):
        yield {"rebuild_every": 50, "window_size": 100, "coreset_size": 50}
        yield {"rebuild_every": 50, "rebuild_lag": 50, "window_size": 100, "coreset_size": 50}
        yield {"C": 1.0, "s": 0.0, "rebuild_every": 40, "window_size": 80, "coreset_size": 30}

    def _fit_rows(self, X, signs, features, context, seed):
        sol = ramp_svm_cccp(X, signs, C=float(self.C), s=float(self.s), seed=seed)  # an int beyond int64 too
        norm = float(np.linalg.norm(sol.coef))
        width = 2.0 / norm if norm > 0 else 0.0
        return sol.coef, sol.intercept, sol.outlier_mask, np.abs(sol.alpha), width, 1.0
