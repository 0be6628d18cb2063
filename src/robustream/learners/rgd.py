"""RGDSVMClassifier: the RGD-tree SVM with outliers as a River classifier."""

from __future__ import annotations

from ..sketch import JLSketch
from ..solver import per_class_outlier_fractions, solve
from .base import RebuildingLinearClassifier


class RGDSVMClassifier(RebuildingLinearClassifier):
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
        self._init_state()

    def _fit_rows(self, X, signs):
        n_pos = int((signs > 0).sum())
        fractions = per_class_outlier_fractions(self.outlier_fraction, n_pos, signs.size - n_pos)
        sketch = None
        if self.sketch_dim is not None:
            sketch = JLSketch(self.sketch_dim, self.sketch, seed=self.seed, hash_nnz=min(4, self.sketch_dim))
        sol = solve(
            X, signs, outlier_fraction=fractions, polish=self.polish, nu=self.nu, sketch=sketch,
            tree_height=self.tree_height, level_width=self.level_width,
            boosting_rounds=self.boosting_rounds, seed=self.seed + self.n_rebuilds_,
        )  # fmt: skip
        unit = 0.5 * float(sol.coef @ sol.coef)  # distance to the nearest (reduced-hull) point, times ||w||
        return sol.coef, sol.intercept, sol.outlier_mask, sol.convex_coef, sol.margin_width, unit

    def _check_params(self) -> None:
        if not 0.0 <= self.outlier_fraction < 0.5:
            raise ValueError(f"outlier_fraction must be in [0, 0.5), got {self.outlier_fraction!r}")
        for name in ("tree_height", "level_width", "boosting_rounds"):
            v = getattr(self, name)
            if not (isinstance(v, int) and v >= 1):
                raise ValueError(f"{name} must be a positive integer, got {v!r}")

    @classmethod
    def _unit_test_params(cls):
        yield {"rebuild_every": 50, "window_size": 100, "coreset_size": 50}
        yield {"rebuild_every": 40, "window_size": 80, "coreset_size": 30, "sketch_dim": 8, "polish": "hard"}
