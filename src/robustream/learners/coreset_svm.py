"""CoresetSVMClassifier: the maintained max-margin coreset with a nearest-point solve, no outlier removal."""

from __future__ import annotations

from ..solver import VALUE_RANGE, check_polish, solve
from .base import DRIFT_THRESHOLD, RebuildingLinearClassifier


class CoresetSVMClassifier(RebuildingLinearClassifier):
    """The coresets paper's online max-margin SVM (Har-Peled, Roth & Zimak), as a River classifier.

    Same buffer as :class:`~robustream.RGDSVMClassifier` (window + coreset of support rows and
    low-margin inliers), but every rebuild keeps *all* rows: an MDM nearest-point solve of the two
    hulls (``polish="auto"``: hard; when the hulls of noisy data intersect, the reduced hulls with
    ``nu``, raised until they part), no RGD-tree and no trimming (so sparse rows stay sparse in
    every rebuild). It shows what explicit outlier removal buys: without it the flipped rows carry
    the hulls' coefficients, stay in the coreset, and the hulls come to intersect.
    ``rebuild_lag > 0`` runs the rebuilds in a worker process, as in
    :class:`~robustream.RGDSVMClassifier`.
    ``drift_threshold`` (None: off) drops the coreset and the window's older rows when the model's
    error jumps (a concept drift; ``n_drifts_`` counts them), as in :class:`~robustream.RGDSVMClassifier`.

    Parameters
    ----------
    window_size, coreset_size, rebuild_every, rebuild_lag
        The buffer and the rebuild schedule, as in :class:`~robustream.RGDSVMClassifier`: rows kept
        from the recent stream, rows kept from past solutions, the rebuild period, and how many rows
        later a rebuild solved in the worker process is applied (0: solved in the ``learn_one`` that
        triggers it).
    polish, nu
        ``"hard"``: the hulls' nearest points (fails to separate when they intersect); ``"soft"``: the
        reduced hulls with ``nu`` in (0, 1]; ``"auto"`` (default): hard, then soft with ``nu`` raised
        until the reduced hulls part (see :func:`robustream.solver.solve`).
    seed
        Seed of the solver; same seed and stream give the same model, bit for bit.
    drift_threshold
        The concept-drift test's z threshold (None: off), as in :class:`~robustream.RGDSVMClassifier`.

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from robustream import CoresetSVMClassifier
    >>> model = preprocessing.StandardScaler() | CoresetSVMClassifier(rebuild_every=200)
    >>> evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy()).get() > 0.8
    True
    """

    _LARGEST_VALUE = VALUE_RANGE[1]

    def __init__(
        self,
        window_size: int = 1000,
        coreset_size: int = 500,
        rebuild_every: int = 250,
        rebuild_lag: int = 0,
        polish: str = "auto",
        nu: float = 0.3,
        seed: int = 0,
        drift_threshold: float | None = DRIFT_THRESHOLD,
    ):
        self.window_size = window_size
        self.coreset_size = coreset_size
        self.rebuild_every = rebuild_every
        self.rebuild_lag = rebuild_lag
        self.polish = polish
        self.nu = nu
        self.seed = seed
        self.drift_threshold = drift_threshold
        check_polish(polish, nu)
        self._init_state()

    @classmethod
    def _unit_test_params(cls):
        yield {"rebuild_every": 50, "window_size": 100, "coreset_size": 50}
        yield {"rebuild_every": 50, "rebuild_lag": 50, "window_size": 100, "coreset_size": 50}

    def _fit_rows(self, X, signs, features, context, seed):
        sol = solve(
            X, signs, outlier_fraction=(0.0, 0.0), polish=self.polish, nu=self.nu,
            tree_height=0, refit_rounds=0, seed=seed, polish_start=context.get("polish_start"),
        )  # fmt: skip
        unit = 0.5 * float(sol.coef @ sol.coef)
        return sol.coef, sol.intercept, sol.outlier_mask, sol.convex_coef, sol.margin_width, unit
