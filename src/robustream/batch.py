"""RGDSVC: the RGD-tree SVM with outliers as a scikit-learn estimator."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .rows import as_rows
from .sketch import SKETCH_KINDS, JLSketch, make_sketch, resolve_sketch_dim
from .validation import is_integer, is_real, warn_stopped_at_cap
from .solver import (
    AUTO_FRACTIONS,
    AUTO_RATES,
    AUTO_SIDE_MARGIN,
    AUTO_SIDES,
    DENSE_TREE_WARN_BYTES,
    FULL_GRAM_ROWS,
    calls_each_class,
    calls_mostly_wrong,
    INTERCEPT_RULES,
    check_polish,
    check_tree_size,
    clearly_fewer,
    discards_most_of_a_class,
    discarding_warning,
    finds_its_discarded_class,
    gram_matrix,
    per_class_outlier_fractions,
    pick_flip_side,
    side_key,
    side_outlier_fractions,
    side_unusable,
    solve,
)

__all__ = ["RGDSVC", "AUTO_FRACTIONS", "AUTO_RATES", "AUTO_SIDES", "AUTO_SIDE_MARGIN", "side_outlier_fractions"]


def _best_scored(scores: dict[float, float]) -> float:
    """The rate of the best holdout score (the smallest such rate)."""
    best = max(scores.values())
    return min(r for r, s in scores.items() if s == best)


def _shown(label: Any) -> str:
    """A class label as a warning names it: ``False``, ``'spam'`` (not ``np.False_``)."""
    return repr(label.item() if isinstance(label, np.generic) else label)


class RGDSVC(ClassifierMixin, BaseEstimator):
    """Linear SVM with explicit outlier removal: RGD-tree search, convex polish, trim and refit.

    Parameters
    ----------
    outlier_fraction : float, (float, float) or "auto", default=0.2
        A float is the assumed share of wrong labels; it becomes per-class fractions through the
        uniform-flip model (see :func:`robustream.solver.per_class_outlier_fractions`; with more than
        two classes, each one-vs-rest problem uses its ``"one_vs_rest"`` model). A pair is
        (fraction of the positive class ``classes_[1]``, fraction of the negative class), for two
        classes only.
        ``"auto"`` picks a rate from ``AUTO_RATES`` (0 and ``AUTO_FRACTIONS``) by accuracy
        on an internal 25% holdout of the (noisy) training labels, then refits on all rows; the pick
        is ``outlier_fraction_``. Rate 0 (nothing discarded: clean data stays whole) is scored only if
        its model calls each class on at least half as many rows as are labelled so
        (:func:`robustream.solver.calls_each_class`): under one-sided flips of most of a small class
        the near-constant fit of every row errs least on the holdout's labels.
        With two classes, ``"auto"`` also decides at every rate where the wrong labels sit
        (``AUTO_SIDES``: both classes, as for a float, or only one observed class, as after
        one-sided or adversarial flips): it fits the three variants on all rows and keeps a
        one-sided one only if it leaves clearly fewer misclassified inliers than the symmetric one
        (``AUTO_SIDE_MARGIN``); only the kept variant of each rate is scored on the holdout. A
        variant that would discard more than half of an observed class (a near-constant model) is
        not kept. Where the symmetric one is such a variant, it is also fitted on the holdout's
        training part, and picked if the rows it predicts as that class are mostly labelled so
        (:func:`robustream.solver.finds_the_rest_of_its_class`) and it beats the best kept one by
        McNemar's paired test on the holdout (``clearly_fewer``; its score and side then stand for
        that rate): under uniform flips most labels of a small class are wrong (w8a: about 60% of
        its observed positives at 5% flips, 85% at 15%), and no one-sided variant can fit them;
        after one-sided flips of more than half of a class one separates the rest cleanly, and the
        symmetric fit is near-constant. Where the pick is a symmetric model whose calls of a class
        on the holdout are mostly labelled as the other class
        (:func:`robustream.solver.calls_mostly_wrong`), that discarding model needs no McNemar: it
        takes the place of every such model (in ``auto_scores_`` too) and competes with the rest on
        its holdout score. Under uniform flips a row is mostly labelled as its class, so those
        calls are mostly wrong (w8a at 20% flips: the fits at low rates keep most of the flipped
        negatives labelled positive, call rows like them positive, and err about as little on the
        noisy holdout). A one-sided pick is reported as its pair; ``auto_sides_``
        holds the variant kept per rate. Cost: up to 4 fits per rate (the usable variants on all
        rows, 1 on the holdout's training part, and the symmetric one there when it discards most
        of a class), then the final fit, so about 26 fits for two classes (rate 0 is one fit; 8 per
        one-vs-rest problem otherwise).
    polish : {"soft", "hard", "auto"}, default="soft"
        Final solve on the inliers: hard convex hulls (max margin) or reduced convex hulls with
        coefficients capped at ``1/(nu * n_class)``; ``"auto"`` keeps hard if the inliers are
        separable, soft otherwise. A polish whose hulls intersect (``w = 0``, or a solve that stops
        without a ``w`` that separates them: :func:`robustream.solver.separates`) goes on soft, with
        ``nu`` raised until they part: ``solutions_[k].polish`` and ``.info["nu"]`` say what ran.
    nu : float, default=0.3
        Reduced-hull parameter of the soft polish (nu-SVM's nu), in (0, 1]: no row of a class
        carries more than 1 / (nu x its inliers) of its hull, so a larger nu averages over more rows
        (more regularisation, as a smaller C). It must stay well above the share of wrong labels the
        outlier removal leaves in, else the reduced hulls still overlap and the direction is poor
        (measured on one pass of ``RGDSVMClassifier(outlier_fraction=0)`` over mnist 0-vs-1 with 15%
        flipped labels, 5 seeds: 24.8% test error at nu = 0.1, 13.5% at 0.3, 0.5% at 0.6). The
        benchmarks choose it on validation with ``outlier_fraction``, from {0.1, 0.3, 0.6}.
    sketch : str, default="achlioptas"
        JL sketch kind used when ``sketch_dim`` is set: gaussian, achlioptas, srht or hashed.
    sketch_dim : int, "auto" or None, default=None
        Dimension of the sketch the RGD-tree runs on (the polish runs in full dimension on the
        inliers the tree found). ``"auto"`` sketches to 128 when d > 512 and the rows are sparse or
        more than 4,000 (fewer dense rows: the tree reads the polish's Gram matrix, as fast as on a
        sketch and more accurate), None never sketches; nor does an int at least the number of
        features (a sketch as wide as the rows saves nothing and only distorts them).
    tree_height, level_width, boosting_rounds : int, default=6, 10, 3
        RGD-tree height h, nodes kept per level L, and re-rooting rounds. A tree whose round would
        evaluate more than ``robustream.solver.TREE_NODES_PER_ROUND`` (a million) children is refused.
    delta, mu : float, default=0.5, 0.1
        Candidate-set slack (1 + delta) and failure probability; children per node are
        ``(1 + 1/delta)^2 ln(h/mu + 1)``.
    refit_rounds : int, default=5
        Trim-and-refit rounds after the first polish (stops early when the outliers are stable).
    intercept : {"min_error", "bisector"}, default="min_error"
        Offset rule: ``"min_error"``, the threshold with the fewest misclassified inliers;
        ``"bisector"``, halfway between the two nearest points of the (reduced) hulls.
    tol : float, default=1e-3
        Relative epsilon of the polish (JL paper, Definition 5) and of the boosting test.
    max_iter : int, default=100_000
        Nearest-point (MDM) steps allowed per polish; a fit whose last polish stops there warns
        with a ``ConvergenceWarning``, as does a fit whose classes give no direction (the same
        points under both labels). Features on very different scales slow the polish down:
        standardise them (``sklearn.preprocessing.StandardScaler``).
    random_state : int, RandomState or None, default=None
        Seed of the tree's sampling and of the sketch.

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    classes_ : ndarray
    outlier_mask_ : ndarray of bool, shape (n_samples,)
        Training rows discarded as outliers (for one-vs-rest: by the model of their own label).
    margin_width_ : float or ndarray
        Width of the slab between the inliers of the two classes along ``coef_`` (negative when
        they overlap), per one-vs-rest model for more than two classes.
    outlier_fraction_ : float or tuple
        The outlier fraction used (the pick of ``"auto"``: a float, or a pair for a one-sided pick).
    auto_scores_, auto_sides_ : dict
        With ``"auto"``: holdout accuracy and kept side (see ``AUTO_SIDES``) per rate that
        competed for the pick (the pick has the best score); empty otherwise.
    solutions_ : list of robustream.solver.Solution
        The solve of each binary problem (one, or one per class): convex coefficients, polish run,
        tree width, refits, convergence.
    n_iter_ : int
        Polish steps of the final fit (the largest over one-vs-rest problems; all refits counted).
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from robustream import RGDSVC
    >>> rng = np.random.default_rng(0)
    >>> X = np.r_[rng.normal(2, 1, (100, 3)), rng.normal(-2, 1, (100, 3))]
    >>> y = np.r_[np.ones(100), np.zeros(100)].astype(int)
    >>> y_noisy = y.copy(); y_noisy[:15] = 0          # 15 wrong labels, all now in class 0
    >>> clf = RGDSVC(outlier_fraction=0.1, random_state=0).fit(X, y_noisy)
    >>> clf.score(X, y) > 0.95
    True
    >>> both = RGDSVC(outlier_fraction=(0.0, 0.15), random_state=0).fit(X, y_noisy)  # (class 1, class 0)
    >>> int(both.outlier_mask_[:15].sum()), int(both.outlier_mask_.sum())
    (15, 17)
    """

    def __init__(
        self,
        outlier_fraction: float | tuple[float, float] | str = 0.2,
        polish: str = "soft",
        nu: float = 0.3,
        sketch: str = "achlioptas",
        sketch_dim: int | str | None = None,
        tree_height: int = 6,
        level_width: int = 10,
        boosting_rounds: int = 3,
        delta: float = 0.5,
        mu: float = 0.1,
        refit_rounds: int = 5,
        intercept: str = "min_error",
        tol: float = 1e-3,
        max_iter: int = 100_000,
        random_state: Any = None,
    ):
        self.outlier_fraction = outlier_fraction
        self.polish = polish
        self.nu = nu
        self.sketch = sketch
        self.sketch_dim = sketch_dim
        self.tree_height = tree_height
        self.level_width = level_width
        self.boosting_rounds = boosting_rounds
        self.delta = delta
        self.mu = mu
        self.refit_rounds = refit_rounds
        self.intercept = intercept
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state

    def __setstate__(self, state: dict) -> None:
        state.setdefault("max_iter", 100_000)  # pickled before max_iter was a parameter
        super().__setstate__(state)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    # -- validation ---------------------------------------------------------------------------
    def _check_params(self) -> None:
        of = self.outlier_fraction
        if isinstance(of, str):
            if of != "auto":
                raise ValueError(f"outlier_fraction must be a float, a pair or 'auto', got {of!r}")
        elif is_real(of):  # a bool is neither this nor a pair
            if not 0.0 <= of < 0.5:
                raise ValueError(f"outlier_fraction must be in [0, 0.5), got {of!r}")
        else:
            try:
                pair = tuple(of)
            except TypeError:
                raise ValueError(f"outlier_fraction must be a float, a pair or 'auto', got {of!r}") from None
            if len(pair) != 2 or not all(is_real(v) and 0.0 <= v < 1.0 for v in pair):
                raise ValueError(f"outlier_fraction pair must be two floats in [0, 1), got {of!r}")
        if self.intercept not in INTERCEPT_RULES:
            raise ValueError(f"intercept must be one of {INTERCEPT_RULES}, got {self.intercept!r}")
        check_polish(self.polish, self.nu)
        if self.sketch not in SKETCH_KINDS:
            raise ValueError(f"sketch must be one of {SKETCH_KINDS}, got {self.sketch!r}")
        sd = self.sketch_dim
        if not (sd is None or (isinstance(sd, str) and sd == "auto") or (is_integer(sd) and sd >= 1)):
            raise ValueError(f"sketch_dim must be a positive int, 'auto' or None, got {sd!r}")
        for name in ("tree_height", "level_width", "boosting_rounds"):
            v = getattr(self, name)
            if not (is_integer(v) and v >= 1):
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if not (is_integer(self.refit_rounds) and self.refit_rounds >= 0):
            raise ValueError(f"refit_rounds must be a non-negative integer, got {self.refit_rounds!r}")
        for name in ("delta", "mu", "tol"):  # the ranges solve() checks, named before any fit starts
            v = getattr(self, name)
            if not (is_real(v) and 0.0 < v < 1.0):
                raise ValueError(f"{name} must be in (0, 1), got {v!r}")
        if not (is_integer(self.max_iter) and self.max_iter >= 1):
            raise ValueError(f"max_iter must be a positive integer, got {self.max_iter!r}")
        check_tree_size(self.tree_height, self.level_width, delta=self.delta, mu=self.mu)

    # -- fitting --------------------------------------------------------------------------------
    def fit(self, X: ArrayLike | sp.spmatrix, y: ArrayLike) -> RGDSVC:
        """Fit on rows ``X`` (dense or sparse) with possibly wrong labels ``y``."""
        self._check_params()
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64)
        check_classification_targets(y)
        self.classes_ = np.unique(y)
        if self.classes_.size < 2:
            raise ValueError(f"RGDSVC needs samples of at least 2 classes; got 1 class: {self.classes_[0]!r}")
        if self.classes_.size > 2 and not (is_real(self.outlier_fraction) or isinstance(self.outlier_fraction, str)):
            raise ValueError(f"outlier_fraction: a (positive, negative) pair, {self.outlier_fraction!r}, is for two "
                             f"classes (classes_[1], classes_[0]); with {self.classes_.size} classes give one float "
                             "(each one-vs-rest problem derives its pair) or 'auto'")  # fmt: skip
        seed = int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))
        X = as_rows(X)  # once: the solves and the Gram matrices they share read the same rows
        dense_bytes = 8 * X.shape[0] * X.shape[1]
        no_tree = not isinstance(self.outlier_fraction, str) and not np.any(self.outlier_fraction)  # discards none
        if sp.issparse(X) and dense_bytes > DENSE_TREE_WARN_BYTES and not no_tree and resolve_sketch_dim(
                self.sketch_dim, X.shape[1], X.shape[0], True) is None:  # fmt: skip
            warnings.warn(f"RGDSVC: the RGD-tree works on dense rows, and these {X.shape[0]} x {X.shape[1]} sparse "
                          f"rows take {dense_bytes / 2**30:.2f} GiB dense (the peak is a few times that); an int "
                          "sketch_dim (e.g. 128; 'auto' sketches from 513 features) runs the tree on a sketch of them "
                          "(the polish stays in full dimension)", UserWarning, stacklevel=2)  # fmt: skip
        if isinstance(self.outlier_fraction, str):  # "auto" (checked above); an array pair compares per item
            self.outlier_fraction_, self.auto_scores_, self.auto_sides_ = self._pick_outlier_fraction(X, y, seed)
        else:
            self.outlier_fraction_ = self.outlier_fraction
            self.auto_scores_, self.auto_sides_ = {}, {}  # no candidates: not those of an earlier auto fit
        self._fit_models(X, y, self.outlier_fraction_, seed)
        self.n_iter_ = max(sol.polish_iterations for sol in self.solutions_)
        n_solves = len(self.solutions_)
        no_direction = sum(not sol.info["direction_found"] for sol in self.solutions_)
        stopped = sum(sol.info["direction_found"] and not sol.converged for sol in self.solutions_)
        if no_direction:
            which = "the classes" if n_solves == 1 else f"{no_direction} of {n_solves} one-vs-rest problems"
            warnings.warn(f"RGDSVC: {which} gave no direction: their rows overlap at every nu (for example the "
                          "same points under both labels), so the fitted hyperplane is rounding noise",
                          ConvergenceWarning, stacklevel=2)  # fmt: skip
        if stopped:
            which = "the polish" if n_solves == 1 else f"{stopped} of {n_solves} polishes"
            warn_stopped_at_cap(f"RGDSVC: {which}", "max_iter", self.max_iter, self.tol)
        return self

    def _sketch_for(self, X, seed: int, n_rows: int) -> JLSketch | None:
        return make_sketch(self.sketch, self.sketch_dim, X.shape[1], seed, n_rows, sp.issparse(X))

    def _binary_problems(self, y):
        if self.classes_.size == 2:
            return [np.where(y == self.classes_[1], 1.0, -1.0)]
        return [np.where(y == c, 1.0, -1.0) for c in self.classes_]

    def _fit_models(self, X, y, outlier_fraction, seed, gram=None, sketch_rows=None) -> None:
        """One solve per binary problem; ``gram``: ``gram_matrix(X)`` when the caller shares it;
        ``sketch_rows``: the rows ``sketch_dim="auto"`` decides on (default: X's; "auto"'s holdout
        fits pass the whole fit's, so that they sketch as the final fit does)."""
        coefs, intercepts, widths = [], [], []
        outlier_mask = np.zeros(X.shape[0], dtype=bool)
        self.solutions_ = []
        problems = self._binary_problems(y)
        if gram is None and len(problems) > 1 and X.shape[0] <= FULL_GRAM_ROWS:
            gram = gram_matrix(X)  # one-vs-rest: every class's problem has the same rows
        for k, y_pm in enumerate(problems):
            n_pos = int((y_pm > 0).sum())
            if is_real(outlier_fraction):
                noise_model = "binary" if self.classes_.size == 2 else "one_vs_rest"
                fractions = per_class_outlier_fractions(float(outlier_fraction), n_pos, y_pm.size - n_pos,
                                                        noise_model)  # fmt: skip
                if is_real(self.outlier_fraction):  # the user's own rate ("auto"'s probes keep "auto")
                    two = self.classes_.size == 2
                    names = (_shown(self.classes_[1]), _shown(self.classes_[0])) if two else (
                        _shown(self.classes_[k]), "with any other class")  # fmt: skip
                    message = discarding_warning("RGDSVC", float(outlier_fraction), fractions, n_pos,
                                                 y_pm.size - n_pos, names, pair_hint=two)  # fmt: skip
                    if message:
                        warnings.warn(message, UserWarning, stacklevel=3)
            else:
                fractions = tuple(float(v) for v in outlier_fraction)
            sol = solve(
                X, y_pm,
                outlier_fraction=fractions, polish=self.polish, nu=self.nu,
                sketch=self._sketch_for(X, seed + k, X.shape[0] if sketch_rows is None else sketch_rows),
                tree_height=self.tree_height, level_width=self.level_width,
                boosting_rounds=self.boosting_rounds, delta=self.delta, mu=self.mu,
                refit_rounds=self.refit_rounds, intercept=self.intercept, tol=self.tol, max_iter=self.max_iter,
                seed=seed + k, gram=gram,
            )  # fmt: skip
            coefs.append(sol.coef)
            intercepts.append(sol.intercept)
            widths.append(sol.margin_width)
            if self.classes_.size == 2:
                outlier_mask = sol.outlier_mask
            else:
                outlier_mask |= sol.outlier_mask & (y_pm > 0)
            self.solutions_.append(sol)
        self.coef_ = np.vstack(coefs)
        self.intercept_ = np.asarray(intercepts)
        self.outlier_mask_ = outlier_mask
        self.margin_width_ = widths[0] if len(widths) == 1 else np.asarray(widths)

    def _pick_outlier_fraction(self, X, y, seed):
        rng = np.random.default_rng(seed)
        order = rng.permutation(X.shape[0])
        n_hold = max(1, X.shape[0] // 4)
        hold, train = order[:n_hold], order[n_hold:]
        scores, sides = {}, {}
        missing = [c for c in self.classes_ if not np.any(y[train] == c)]
        if missing:
            # every row of a class fell into the holdout: its first held row trains instead (nothing more is
            # drawn, so that every other fit keeps its holdout)
            moved = np.isin(np.arange(hold.size), [np.flatnonzero(y[hold] == c)[0] for c in missing])
            hold, train = hold[~moved], np.concatenate([train, hold[moved]])
            if hold.size == 0:
                return AUTO_FRACTIONS[0], scores, sides
        probe = self.__class__(**self.get_params())
        probe.classes_ = self.classes_
        share = X.shape[0] <= FULL_GRAM_ROWS
        # the fits on all rows (sides), then the fits on the holdout's training rows, each group
        # sharing one Gram matrix: one matrix alive at a time
        if self.classes_.size == 2:
            gram = gram_matrix(X) if share else None
            side_of = {r: self._pick_side(probe, X, y, r, seed, gram) for r in AUTO_RATES}
            del gram
            n_pos = int((y == self.classes_[1]).sum())
            # rates whose symmetric model discards most of a class: picked only as below
            discarding = [r for r in AUTO_FRACTIONS if side_unusable(r, "both", n_pos, y.size - n_pos)]
        else:
            side_of = {r: self._one_vs_rest_side(y, r) for r in AUTO_RATES}
            discarding = []
        X_train = X[train]
        gram_train = gram_matrix(X_train) if share else None
        right, wrong_calls = {}, set()
        for r in AUTO_RATES:
            side = side_of[r]
            if side is not None:
                probe._fit_models(X_train, y[train], self._side_fraction(y[train], r, side), seed, gram_train,
                                  sketch_rows=X.shape[0])  # fmt: skip
                if r == 0.0:
                    called = probe._predict(X)
                    if not calls_each_class([np.sum(y == c) for c in self.classes_],
                                            [np.sum(called == c) for c in self.classes_]):  # fmt: skip
                        continue  # a near-constant fit of every row (see outlier_fraction)
                    predicted = called[hold]  # the holdout's calls are among them
                else:
                    predicted = probe._predict(X[hold])
                right[r] = predicted == y[hold]
                scores[r], sides[r] = float(np.mean(right[r])), side
                if self.classes_.size == 2 and side == "both" and any(
                    calls_mostly_wrong(int(np.sum(predicted == c)), int(np.sum((predicted == c) & (y[hold] == c))))
                    for c in self.classes_
                ):
                    wrong_calls.add(r)
        if scores:
            r = _best_scored(scores)
        if discarding:
            # a symmetric model that discards most of a class may replace the pick: the rows it predicts
            # as that class must be mostly labelled so (all rows: the holdout alone holds too few of a
            # small class), and it must err clearly less on the holdout (McNemar on the rows only one
            # of the two got wrong) ...
            found = {}
            for d in discarding:
                probe._fit_models(X_train, y[train], d, seed, gram_train, sketch_rows=X.shape[0])
                predicted = probe._predict(X)
                if finds_its_discarded_class(d, y == self.classes_[1], predicted == self.classes_[1]):
                    found[d] = predicted[hold] == y[hold]
            if found:
                other = max(found, key=lambda d: (int(found[d].sum()), -d))
                clearly = not scores or clearly_fewer(int(np.sum(right[r] & ~found[other])),
                                                      int(np.sum(found[other] & ~right[r])))  # fmt: skip
                if clearly or r in wrong_calls:
                    if not clearly:
                        # ... or, where the pick's calls of a class are mostly wrong, take the place of the
                        # models whose calls are, and compete with the others on its holdout score
                        for q in wrong_calls:
                            del scores[q], sides[q]
                    scores[other], sides[other] = float(np.mean(found[other])), "both"
                    r = _best_scored(scores)  # (where it errs clearly less than the pick: itself)
        if not scores:
            return AUTO_FRACTIONS[0], scores, sides
        return self._side_fraction(y, r, sides[r]), scores, sides

    def _one_vs_rest_side(self, y, rate) -> str | None:
        """``"both"``, or None when ``rate`` would discard most of a class of some one-vs-rest problem."""
        for c in self.classes_:
            n_pos = int((y == c).sum())
            fractions = per_class_outlier_fractions(rate, n_pos, y.size - n_pos, "one_vs_rest")
            if discards_most_of_a_class(fractions, n_pos, y.size - n_pos):
                return None
        return "both"

    def _side_fraction(self, y, rate, side):
        """``rate`` itself for the symmetric model (the float path), else the one-sided pair."""
        if side == "both":
            return rate
        n_pos = int((y == self.classes_[1]).sum())
        return side_outlier_fractions(rate, side, n_pos, y.size - n_pos)

    def _pick_side(self, probe, X, y, rate, seed, gram=None) -> str | None:
        """Where ``rate * n`` wrong labels most likely sit, from fits on all rows: the variants that
        would not discard more than half of an observed class (such a class would mostly hold the
        other one) are compared by :func:`robustream.solver.pick_flip_side`; None if none is left.
        """
        if rate == 0.0:
            return "both"  # nothing discarded: every side is the same fit
        n_pos = int((y == self.classes_[1]).sum())
        n_neg = y.size - n_pos
        y_pm = np.where(y == self.classes_[1], 1.0, -1.0)
        keys = {}
        for side in AUTO_SIDES:
            if side_unusable(rate, side, n_pos, n_neg):
                continue
            probe._fit_models(X, y, self._side_fraction(y, rate, side), seed, gram)
            sol = probe.solutions_[0]
            keys[side] = side_key(X, y_pm, sol.coef, sol.intercept, sol.outlier_mask, sol.margin_width)
        return pick_flip_side(keys)

    # -- prediction -----------------------------------------------------------------------------
    def decision_function(self, X: ArrayLike | sp.spmatrix) -> np.ndarray:
        """Signed distance-like score ``X @ coef_.T + intercept_`` ((n,) for two classes)."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        scores = self._scores(X)
        return scores.ravel() if self.classes_.size == 2 else scores

    def _scores(self, X) -> np.ndarray:
        return np.asarray(X @ self.coef_.T) + self.intercept_

    def _predict(self, X) -> np.ndarray:
        scores = self._scores(X)
        if self.classes_.size == 2:
            return self.classes_[(scores.ravel() > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

    def predict(self, X: ArrayLike | sp.spmatrix) -> np.ndarray:
        """Class labels."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        return self._predict(X)
