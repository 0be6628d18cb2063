"""RGDSVMClassifier: the RGD-tree SVM with outliers as a River classifier."""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from ..blas import single_threaded_blas
from ..sketch import SKETCH_KINDS, make_sketch
from ..validation import is_real
from ..solver import (
    AUTO_DISCARD_Z,
    AUTO_FRACTIONS,
    AUTO_RATES,
    AUTO_SIDES,
    FULL_GRAM_ROWS,
    VALUE_RANGE,
    calls_each_class,
    check_polish,
    check_tree_size,
    contradicts_one_side,
    discarded_class,
    discards_most_of_a_class,
    discarding_warning,
    finds_its_discarded_class,
    finds_the_rest_of_its_class,
    gram_matrix,
    per_class_outlier_fractions,
    pick_flip_side,
    side_key,
    side_outlier_fractions,
    side_unusable,
    solve,
)
from .base import (
    _FP_POLICY,
    DRIFT_THRESHOLD,
    AlignedWeights,
    RebuildingLinearClassifier,
    _decode_row,
    _encode_row,
    is_integer,
)

# fraction used by the first "auto" rebuild, before any candidate has been scored (the fixed default)
_AUTO_START = 0.2
# "auto" re-decides where the wrong labels sit at the first two rebuilds and every this many after
_SIDE_CHECK_EVERY = 4
# A rebuild of at most this many rows (every rebuild of a short stream, the first one or two of a long
# one) runs at least the batch estimator's tree (6 levels x 10 nodes x 3 rounds, on all rows) from the
# class means, not the small tree rooted at the previous solution: on so few rows it costs about what
# the small tree costs on a full buffer, and rooting at the previous solution there keeps the search
# near the first rebuild's model, fitted on a handful of rows (measured: 0.4 points of test error over
# 8 small shared sets x 20 seeds; a big tree rooted at the previous solution was worse than the small one).
_COLD_ROWS = 600
_COLD_TREE = (6, 10, 3)
_TOL = 1e-3  # the solver's relative duality gap for the model kept
# "auto": the fractions not picked are solved to a looser gap, as their models only score their
# fraction and root its next tree (a third fewer MDM steps per rebuild, measured; the model kept is
# always solved to _TOL)
_CANDIDATE_TOL = 3e-3


class RGDSVMClassifier(RebuildingLinearClassifier):
    """Binary linear classifier that discards mislabelled samples, for River streams.

    ``learn_one`` stores the row in a window (cheap). Every ``rebuild_every`` labelled rows the
    model is rebuilt on coreset + window with the RGD-tree solver (optional JL sketch -> pruned,
    boosted RGD-tree -> convex polish on the inliers -> map back -> trim and refit), and the
    coreset is refreshed with the rows carrying the solution's convex coefficients plus the
    lowest-margin inliers. Memory: at most ``coreset_size + window_size`` buffered rows, whatever the
    stream's length; until the next rebuild the last solution also keeps its rows that have left the
    window (at most ``rebuild_every``), and with ``rebuild_lag`` the running rebuild keeps its snapshot.
    Until the first rebuild the model predicts with a passive-aggressive (PA-I, C = 0.01) warm start.

    Labels are read as booleans (``True`` is the positive class); probabilities are
    ``sigmoid(a * margin)`` with the slope ``a`` fitted on every row of the last rebuild, outliers
    included, by one-dimensional logistic regression (Platt scaling without offset): calibrated to
    the labels as observed, so conservative when some of them are wrong. (Fitted on the inliers
    alone, which are nearly separable by construction, the slope ran to its cap: confident mistakes.)

    Parameters
    ----------
    outlier_fraction
        Assumed share of wrong labels (per-class fractions follow from the observed class priors),
        or ``"auto"``: every rebuild solves once per rate of ``robustream.solver.AUTO_RATES``: 0
        (nothing discarded, the soft polish on every row) and the fractions of ``AUTO_FRACTIONS`` (so a
        rebuild costs that many solves). Each candidate model then predicts every labelled
        row that arrives before the next rebuild, before the row is learned; its error against the
        (noisy) labels is averaged with an exponential forgetting of ``window_size`` rows, so it
        carries over rebuilds. A rebuild keeps the candidate of the fraction with the lowest
        averaged error (the smallest fraction on ties; 0.2 at the first rebuild) as the model,
        leaving out fractions that would discard more than half of an observed class (a
        near-constant model: under one-sided flips the symmetric flip model asks for that) unless
        one of them erred significantly less (``AUTO_DISCARD_Z`` standard errors of the paired
        difference): under uniform flips most labels of a small class are wrong (w8a at 15%: about
        85% of its observed positives), and discarding them is right. The
        current pick is ``outlier_fraction_``; it follows a change of the noise rate within about
        one window. Rate 0 takes part only while the wrong labels are put in both classes, from a
        window after that side was last set on (the other fractions' averaged errors carry over a
        change of side, rate 0's do not), and only while its model calls each class on at least half
        as many of the averaged rows as are labelled so (:func:`robustream.solver.calls_each_class`):
        after one-sided flips of most of a small class the labels favour the fit of every row, a
        near-constant model. On clean data it keeps every row (svmguide1 without flips, 5 splits:
        4.97% test error, 6.63% when rate 0 was not scored). With ``noise_model="binary"``,
        ``"auto"`` also decides where the wrong labels sit (``flip_side_``: both classes, or only the
        observed negatives or positives, as after one-sided or adversarial flips): the first two
        rebuilds and every fourth one after also solve the other two sides at the picked fraction
        (unless it is 0) and apply the batch estimator's side rule
        (:func:`robustream.solver.pick_flip_side`) — 9 solves instead of 7 for those rebuilds. A
        symmetric fit that discards most of a class takes part in the side rule only if the rows it
        predicts as that class are mostly labelled so
        (:func:`robustream.solver.finds_the_rest_of_its_class`): for the current side, the rows
        that arrived since the last side check, as its models predicted them before learning them
        (rows a model was fitted on flatter it); for a fit of the other side, the rebuild's rows,
        and it is solved only when the current one-sided models' calls since the last side check
        contradict their side (:func:`robustream.solver.contradicts_one_side`). So on w8a at 5%
        flips, where every fraction discards most of the observed positives, the wrong labels are
        no longer put among the observed negatives for want of a symmetric fit to compare (split
        seed 1: 2.9% test error, 9.0% without these rules).
    window_size, coreset_size, rebuild_every
        Rows kept from the recent stream, rows kept from past solutions, and rebuild period (a period
        longer than the window leaves the rows that arrive before the last ``window_size`` of each
        period out of every solve).
    rebuild_lag
        0: a rebuild runs inside the ``learn_one`` call that triggers it. ``k > 0`` (at most
        ``rebuild_every``): it runs in a worker process on a snapshot of coreset + window while the
        stream goes on, and its model replaces the current one exactly ``k`` rows later (waiting
        for it if it is not done), so a second core does the solves (one worker process for all
        learners of a process, started on first use; see :mod:`robustream.learners.rebuild_worker`;
        a thread could not: the solve's Python steps starve behind the stream's). The model depends
        only on the stream, the parameters and the seed, never on the machine's speed or on where
        the solve ran (the worker solves on a fresh learner built from the parameters, so methods
        or module constants changed at run time do not reach it). With ``outlier_fraction="auto"`` the
        rows that arrive during the lag are scored by the previous rebuild's candidates, so a pick, and
        the model after it, can differ from ``rebuild_lag=0``'s for good (a fixed fraction gives the
        same models, ``k`` rows later). Where no worker can run (a class
        defined in ``__main__``, a frozen application, no ``sys.executable``, a worker that could
        not start or died), the rebuild is solved in this thread when due, with a ``RuntimeWarning``.
        As for any River learner, feed one learner from one thread.
    sketch, sketch_dim
        Optional JL sketch the RGD-tree runs on (the polish runs in full dimension): its kind (the
        default ``"hashed"`` needs no fixed feature count) and dimension; ``"auto"``: 128 when the
        rows of a rebuild hold more than 512 features and are sparse or more than 4,000, none
        otherwise (the default; the rule of :class:`robustream.RGDSVC`'s ``"auto"``: fewer dense
        rows are solved through their Gram matrix, which the tree reads too, as fast as on a sketch
        and more accurate); None: never. An int at least a rebuild's feature count does not sketch it
        either (a sketch as wide as the rows saves nothing). Without a sketch the tree works on a
        dense copy of the rows (rows x features): on sparse rows with many distinct features
        (hashed text, one-hot ids) that is large and slow (measured on rows with 20 of 200,000
        possible features: 0.74 s per rebuild and an 878 MB process without, 0.08 s and 277 MB with).
    polish, nu, tree_height, level_width, boosting_rounds
        Solver settings (see :class:`robustream.RGDSVC`). From the second rebuild on, the tree is
        rooted at the previous solution, so the search goes on across rebuilds: a shallow, narrow
        tree per rebuild (the defaults, 3 levels of 4 nodes, 2 boosting rounds) measured within 0.2
        points of test error of the batch estimator's 6 x 10 x 3 tree on long streams, at a fraction
        of the cost. A rebuild of at most 600 rows (all rebuilds of a short stream, the first one or
        two of a long one) runs at least the batch estimator's tree, on all its rows and from the
        class means: rooted at a previous solution fitted on a handful of rows, the search stays
        near it (0.4 points of test error on small data sets). A tree whose round would evaluate more
        than a million children (``robustream.solver.TREE_NODES_PER_ROUND``) is refused here.
    tree_rows
        The tree ranks its directions on a stratified sample of this many rows of coreset + window
        (None: all); every row is used for the inliers and the polish.
    seed
        Seed of the solver; same seed and stream give the same model, bit for bit.
    noise_model
        How ``outlier_fraction`` becomes per-class fractions: ``"binary"`` (labels flip between the two
        classes) or ``"one_vs_rest"`` (this learner is one member of a one-vs-rest multi-class model:
        its positives hold that share of wrong labels, its negatives far fewer; see
        :func:`robustream.solver.per_class_outlier_fractions`). Use ``"one_vs_rest"`` inside
        ``river.multiclass.OneVsRestClassifier``; ``robustream serve`` does so for more than two labels.
    drift_threshold
        Concept-drift test, run as each rebuild starts: the model's error on the rows learned since
        the last rebuild (rows it has not seen), against their labels, is compared with its error on
        the rows tested since the last drift by a one-sided two-proportion z-test (rows with z above
        2 are held, while they fit in the window, and tested again with the next ones, as in DDM).
        When z exceeds ``drift_threshold`` and the error rate rose by at least 5 points, a ridge
        classifier scored leave-one-out on the held rows (or on the latest of them, which a change
        inside a rebuild period leaves all new) must also err significantly less than the model on
        them (:func:`robustream.learners.base.fits_a_new_concept`): a burst of wrong labels raises
        both errors, a new concept only the model's. Then the coreset and the window's rows from
        before those rows are dropped: the rebuild solves on the new concept alone, where a
        coreset of the old one would pull every later solve back towards it (``n_drifts_`` counts
        these). None: no test. Measured: no drift found on 13 shared data sets x 3 seeds, on
        20,000-row stationary streams, nor when the flip rate jumps from 5% to 35%; after the
        concept rotation of ``benchmarks/run_all.py`` (section 4), this learner with its default
        parameters went, in the last quarter's prequential accuracy, from 95.8 / 92.0% to 98.2 /
        97.6% (seeds 0 / 1). Flips of more than half of one class look like a new concept to it.

    Attributes
    ----------
    outlier_fraction_
        The outlier fraction of the current model (the pick of ``"auto"``).
    flip_side_
        Where ``"auto"`` puts the wrong labels: ``"both"`` classes (also for a fixed fraction),
        ``"negative"`` or ``"positive"`` (the observed class holding them).
    weights, intercept_, margin_width_, outlier_rate_, n_rebuilds_, n_failed_rebuilds_, n_drifts_
        Model, slab width and share of the last rebuild's rows discarded, rebuilds made, rebuilds that
        could not solve (the model was kept, with a warning), drifts found.
        Read-only: predictions read a copy of ``weights`` that is renewed when the learner replaces them.

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from robustream import RGDSVMClassifier
    >>> model = preprocessing.StandardScaler() | RGDSVMClassifier(rebuild_every=200, seed=1)
    >>> metric = evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
    >>> metric.get() > 0.85
    True
    """

    _LARGEST_VALUE = VALUE_RANGE[1]
    _CACHES = RebuildingLinearClassifier._CACHES + ("_candidate_dots",)  # "auto": the candidates' AlignedWeights

    def __init__(
        self,
        outlier_fraction: float | str = 0.2,
        window_size: int = 1000,
        coreset_size: int = 500,
        rebuild_every: int = 250,
        rebuild_lag: int = 0,
        sketch: str = "hashed",
        sketch_dim: int | str | None = "auto",
        polish: str = "soft",
        nu: float = 0.3,
        tree_height: int = 3,
        level_width: int = 4,
        boosting_rounds: int = 2,
        tree_rows: int | None = 600,
        seed: int = 0,
        noise_model: str = "binary",
        drift_threshold: float | None = DRIFT_THRESHOLD,
    ):
        self.outlier_fraction = outlier_fraction
        self.window_size = window_size
        self.coreset_size = coreset_size
        self.rebuild_every = rebuild_every
        self.rebuild_lag = rebuild_lag
        self.sketch = sketch
        self.sketch_dim = sketch_dim
        self.polish = polish
        self.nu = nu
        self.tree_height = tree_height
        self.level_width = level_width
        self.boosting_rounds = boosting_rounds
        self.tree_rows = tree_rows
        self.seed = seed
        self.noise_model = noise_model
        self.drift_threshold = drift_threshold
        self._check_params()
        self._init_state()
        self.outlier_fraction_ = _AUTO_START if outlier_fraction == "auto" else outlier_fraction
        self.flip_side_ = "both"
        # "auto": weights and intercept of the model of each fraction, and their forgetful error rates
        self._candidates: list[tuple[dict, float]] = []
        self._candidate_errors = [0.0] * len(AUTO_RATES)
        self._candidate_usable = [True] * len(AUTO_RATES)  # fractions that keep most of each class
        # rate 0's model: rows labelled negative, positive, and called negative, positive (forgetful counts)
        self._zero_calls = [0.0, 0.0, 0.0, 0.0]
        # labelled rows since flip_side_ last changed (-1: it never did)
        self._rows_on_side = -1
        # the current model's calls since the last side check: (positive, of them labelled so, negative, ...)
        self._side_evidence = [0, 0, 0, 0]

    def _before_learn(self, row: dict, sign: float) -> None:
        if not self._candidates:
            return
        # "auto": each candidate's call on the row, before the row is learned
        positive = sign > 0.0
        forget = 1.0 - 1.0 / self.window_size
        current = AUTO_RATES.index(self.outlier_fraction_) if self.outlier_fraction_ in AUTO_RATES else -1
        if self._rows_on_side >= 0:
            self._rows_on_side += 1
        dots = self.__dict__.get("_candidate_dots")
        if dots is None or len(dots) != len(self._candidates) or any(
            d.weights is not w for d, (w, _) in zip(dots, self._candidates)
        ):
            dots = self._candidate_dots = [AlignedWeights(w) for w, _ in self._candidates]
        for i, (dot, (_, b)) in enumerate(zip(dots, self._candidates)):
            says = dot.dot(row) + b > 0.0
            self._candidate_errors[i] = forget * self._candidate_errors[i] + (1.0 - forget) * (says != positive)
            if i == 0:  # rate 0 (AUTO_RATES[0]): rows labelled and called per class, for calls_each_class
                calls = self._zero_calls
                for k in range(4):
                    calls[k] *= forget
                calls[positive] += 1.0 - forget
                calls[2 + says] += 1.0 - forget
            if i == current:  # the model's calls, per class, and how many of them the labels confirm
                k = 0 if says else 2
                self._side_evidence[k] += 1
                self._side_evidence[k + 1] += says == positive

    def _fit_context(self, n_pos: int, n_neg: int, matrix: tuple | None = None) -> dict:
        # the tree of a rebuild is rooted at the previous solution of its fraction (once there is one)
        if self.outlier_fraction != "auto":
            fractions = per_class_outlier_fractions(self.outlier_fraction, n_pos, n_neg, self.noise_model)
            context = {"fractions": [fractions], "previous": [self._previous(self.weights)]}
            message = discarding_warning(type(self).__qualname__, self.outlier_fraction, fractions, n_pos, n_neg,
                                         one_vs_rest_hint=self.noise_model == "binary")  # fmt: skip
            if message:
                context["warning"] = message  # raised once the rebuild is applied
            return context
        side = self.flip_side_
        per_class = [self._side_fractions(r, side, n_pos, n_neg) for r in AUTO_RATES]
        # fractions that would discard most of a class are solved (their errors keep being tracked)
        # but picked only when their model errs significantly less: such a model is near-constant
        usable = [not discards_most_of_a_class(f, n_pos, n_neg) for f in per_class]
        fraction = self.outlier_fraction_
        discarding = False
        if self._candidates:  # the lowest error among the fractions usable at the last rebuild and now
            ok = [a and b for a, b in zip(self._candidate_usable, usable)]
            errors = [e if k else math.inf for e, k in zip(self._candidate_errors, ok)]
            # Rate 0 (nothing wrong) only where the wrong labels are put in both classes, a window after
            # that side was set (the other fractions' error rates carry over a change of side, rate 0's
            # do not; w8a at 5% flips, seed 1: rate 0 won just after the side went back to both, 6.1%
            # test error against 2.8% for 0.05), and only while its model calls each class often
            # enough: else its fit of every row is near-constant
            labelled, called = self._zero_calls[:2], self._zero_calls[2:]
            settled = self._rows_on_side < 0 or self._rows_on_side >= self.window_size
            if side != "both" or not settled or not calls_each_class(labelled, called):
                errors[0] = math.inf
                if fraction == 0.0:  # ... and no longer kept when no other fraction is usable either
                    fraction = AUTO_RATES[min(range(1, len(AUTO_RATES)), key=self._candidate_errors.__getitem__)]
            best = min(errors)
            if best < math.inf:
                fraction = min(r for r, e in zip(AUTO_RATES, errors) if e <= best + 1e-12)
                if matrix is not None:
                    better = self._discarding_better(AUTO_RATES.index(fraction), ok, matrix)
                    if better is not None:
                        fraction, discarding = AUTO_RATES[better], True
        kept = [r for r, u in zip(AUTO_FRACTIONS, usable[1:]) if u]
        if not (discarding or usable[AUTO_RATES.index(fraction)]) and kept:
            fraction = kept[0]
        previous = [w for w, _ in self._candidates] or [self._previous(self.weights)] * len(AUTO_RATES)
        context = {"fractions": per_class, "previous": previous, "pick": fraction, "usable": usable, "side": side}
        if discarding:
            context["discarding"] = True  # picked although it discards most of a class
        side_check = self.n_rebuilds_ < 2 or self.n_rebuilds_ % _SIDE_CHECK_EVERY == 0
        if self.noise_model == "binary" and side_check and fraction > 0.0:  # (at rate 0 every side is one fit)
            # the other sides at the picked fraction, for the side rule
            others = [(s, side_outlier_fractions(fraction, s, n_pos, n_neg)) for s in AUTO_SIDES if s != side]
            # pairs, not a dict: a pending rebuild's context is checkpointed as JSON
            current = per_class[AUTO_RATES.index(fraction)]
            # the symmetric variant also where it discards most of a class, once the current one-sided
            # models' calls contradict their side; the side rule reads its fit only if that also finds
            # the rest of the class (_fit_rows)
            context["other_sides"] = [
                (s, f) for s, f in others if f != current and (
                    not side_unusable(fraction, s, n_pos, n_neg) or (s == "both" and self._one_side_contradicted(fraction))
                )
            ]  # fmt: skip
            if side == "both" and not usable[AUTO_RATES.index(fraction)]:
                # the current side discards most of a class: the side rule reads its fit only if the
                # models since the last side check found the rest of that class among the rows that
                # arrived after their rebuild (rows they were fitted on flatter them: a pocket of rows
                # labelled so, after one-sided flips)
                k = 0 if discarded_class(fraction, n_pos, n_neg) > 0 else 2
                context["found"] = finds_the_rest_of_its_class(*self._side_evidence[k : k + 2])
        return context

    def _discarding_better(self, pick: int, ok: list[bool], matrix: tuple) -> int | None:
        """The index of the left-out fraction (one that discards most of a class) whose candidate
        erred significantly less than the pick's, if there is one.

        Under uniform flips of an imbalanced stream most labels of the small class are wrong (w8a at
        15%: about 85% of its observed positives), so discarding most of it is right there. The two
        forgetful error rates are averaged over the same rows, so their difference is paired: its
        variance is the share of rows on which the candidates disagree (estimated on the rebuild's
        rows, for the current pair of candidates) times ``lambda / (2 - lambda)`` of forgetting
        ``lambda = 1 / window_size``; it must exceed ``AUTO_DISCARD_Z`` standard errors. The rates
        average from 0 at the first rebuild, so a short stream shrinks the difference more than its
        standard error: the test gets stricter. (Under one-sided flips of more than half of a class
        the near-constant model errs less on the wrong labels too; there the side rule has moved the
        wrong labels to one class first, which leaves no fraction out.)
        """
        errors = self._candidate_errors
        left_out = [j for j, k in enumerate(ok) if not k and errors[j] < errors[pick]]  # (never rate 0)
        if not left_out:
            return None
        other = min(left_out, key=lambda j: (errors[j], j))
        features, X = matrix
        votes = [self._votes(X, self._warm(w, features), b)
                 for w, b in (self._candidates[pick], self._candidates[other])]  # fmt: skip
        disagree = float(np.mean(votes[0] != votes[1]))
        forget = 1.0 / self.window_size
        se = math.sqrt(disagree * forget / (2.0 - forget))
        return other if se > 0.0 and errors[pick] - errors[other] > AUTO_DISCARD_Z * se else None

    def _one_side_contradicted(self, fraction: float) -> bool:
        """Whether the calls of the current one-sided models since the last side check contradict
        their side (:func:`robustream.solver.contradicts_one_side`)."""
        k = 2 if self.flip_side_ == "negative" else 0  # the calls of the side's class
        n_calls, n_agree = self._side_evidence[k : k + 2]
        return self.flip_side_ != "both" and contradicts_one_side(n_calls, n_calls - n_agree, fraction)

    @staticmethod
    def _votes(X, w: np.ndarray, b: float) -> np.ndarray:
        """Which rows of ``X`` the model ``(w, b)`` predicts positive."""
        with np.errstate(**_FP_POLICY), single_threaded_blas():  # one BLAS thread: the same votes anywhere
            return np.asarray(X @ w).ravel() + b > 0.0

    def _side_fractions(self, rate: float, side: str, n_pos: int, n_neg: int) -> tuple[float, float]:
        if side == "both":
            return per_class_outlier_fractions(rate, n_pos, n_neg, self.noise_model)
        return side_outlier_fractions(rate, side, n_pos, n_neg)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self.__dict__.setdefault("flip_side_", "both")  # pickles and daemon states written before it existed
        self.__dict__.setdefault("_side_evidence", [0, 0, 0, 0])
        self.__dict__.setdefault("_zero_calls", [0.0, 0.0, 0.0, 0.0])
        self.__dict__.setdefault("_rows_on_side", 0)
        self._add_rate_zero()

    def _add_rate_zero(self) -> None:
        """A state written before "auto" scored rate 0 holds one candidate per rate of
        ``AUTO_FRACTIONS``: rate 0 stands in with the 0.05 model until the next rebuild solves its own,
        with the worst error of them all, so that it is picked only once its own calls have earned it."""
        if len(self._candidate_errors) == len(AUTO_FRACTIONS):
            self._candidate_errors.insert(0, max(self._candidate_errors))
        if len(self._candidate_usable) == len(AUTO_FRACTIONS):
            self._candidate_usable.insert(0, True)
        if len(self._candidates) == len(AUTO_FRACTIONS):
            self._candidates.insert(0, self._candidates[0])

    def _previous(self, weights: dict) -> dict | None:
        # before the first rebuild the weights are the passive-aggressive warm start, not a point of the
        # hulls; after it they are only ever replaced, never changed in place, so the solve may read them
        return weights if self.n_rebuilds_ > 0 and weights else None

    def _fit_rows(self, X, signs, features, context, seed):
        fits = []
        context.setdefault("side", "both")  # a pending rebuild written before flip_side_ existed
        n_pos = int((signs > 0).sum())
        gram = None
        if len(context["fractions"]) > 1 and signs.size <= FULL_GRAM_ROWS:
            gram = gram_matrix(X)  # "auto": one Gram matrix for the full-dimension polishes of every fraction
        # a pending rebuild written before "auto" scored rate 0 has one fraction per rate of AUTO_FRACTIONS
        rates = AUTO_RATES if len(context["fractions"]) == len(AUTO_RATES) else AUTO_FRACTIONS
        pick = rates.index(context["pick"]) if self.outlier_fraction == "auto" else 0
        for i, (fractions, w) in enumerate(zip(context["fractions"], context["previous"])):
            if not isinstance(fractions, (list, tuple)):  # ... or before the context held per-class pairs
                fractions = per_class_outlier_fractions(fractions, n_pos, signs.size - n_pos, self.noise_model)
            warm = self._warm(w, features)
            tol = _TOL if i == pick else _CANDIDATE_TOL
            fits.append(self._solve_at(X, signs, fractions, warm, context.get("polish_start"), seed, gram, tol))
        if self.outlier_fraction != "auto":
            return fits[0]
        fit = fits[pick]
        if "other_sides" in context:
            def key(f):  # f = (coef, intercept, outlier_mask, row_weight, margin_width, margin_unit)
                return side_key(X, signs, f[0], f[1], f[2], f[4])

            def found(f):  # a symmetric fit that discards most of a class finds the rest of it (its rows)
                return finds_its_discarded_class(context["pick"], signs > 0, self._votes(X, f[0], f[1]))

            keys = {}
            if context["usable"][pick] or context.get("discarding") or context.get("found"):
                keys[context["side"]] = key(fit)
            side_fits = {context["side"]: fit}
            warm = self._warm(context["previous"][pick], features)
            for side, fractions in context["other_sides"]:
                side_fits[side] = f = self._solve_at(X, signs, fractions, warm, context.get("polish_start"), seed, gram)
                if not discards_most_of_a_class(fractions, n_pos, signs.size - n_pos) or found(f):
                    keys[side] = key(f)
            side = pick_flip_side(keys) or context["side"]
            context["new_side"] = side
            fit = side_fits[side]
        # the pick's candidate is the model kept (of the new side, if the side changed; the other
        # candidates change side at the next rebuild)
        fits[pick] = fit
        context["candidates"] = [
            ({f: float(v) for f, v in zip(features, c[0]) if v != 0.0}, float(c[1])) for c in fits
        ]
        return fit

    @staticmethod
    def _warm(weights: dict | None, features: list) -> np.ndarray | None:
        if weights is None:
            return None
        return np.fromiter((weights.get(f, 0.0) for f in features), np.float64, len(features))

    def _after_fit(self, context: dict) -> None:
        if "candidates" in context:
            self.outlier_fraction_ = context["pick"]
            self._candidates = list(context["candidates"])
            self._candidate_usable = list(context["usable"])
            self._add_rate_zero()
            side = context.get("new_side", context.get("side", "both"))
            if side != self.flip_side_:
                self._rows_on_side = 0
            self.flip_side_ = side
            if "other_sides" in context:  # a side check: the next one reads the calls of the models from now on
                self._side_evidence = [0, 0, 0, 0]

    def _solve_at(
        self, X, signs, fractions: tuple[float, float], warm_start, polish_start, seed: int, gram=None, tol=_TOL
    ):
        sketch = make_sketch(self.sketch, self.sketch_dim, X.shape[1], self.seed, X.shape[0], sp.issparse(X))
        tree = (self.tree_height, self.level_width, self.boosting_rounds)
        tree_rows = self.tree_rows
        if signs.size <= _COLD_ROWS:  # a short stream: the batch search, from the class means
            tree, tree_rows, warm_start = tuple(map(max, tree, _COLD_TREE)), None, None
        sol = solve(
            X, signs, outlier_fraction=fractions, polish=self.polish, nu=self.nu, sketch=sketch,
            tree_height=tree[0], level_width=tree[1], boosting_rounds=tree[2], tree_rows=tree_rows,
            seed=seed, warm_start=warm_start, polish_start=polish_start, gram=gram, tol=tol,
        )  # fmt: skip
        unit = 0.5 * float(sol.coef @ sol.coef)  # distance to the nearest (reduced-hull) point, times ||w||
        return sol.coef, sol.intercept, sol.outlier_mask, sol.convex_coef, sol.margin_width, unit

    def _check_params(self) -> None:
        of = self.outlier_fraction
        if not (of == "auto" or (is_real(of) and 0.0 <= of < 0.5)):
            raise ValueError(f"outlier_fraction must be in [0, 0.5) or 'auto', got {of!r}")
        check_polish(self.polish, self.nu)
        if self.noise_model not in ("binary", "one_vs_rest"):
            raise ValueError(f"noise_model must be 'binary' or 'one_vs_rest', got {self.noise_model!r}")
        for name in ("tree_height", "level_width", "boosting_rounds"):
            v = getattr(self, name)
            if not (is_integer(v) and v >= 1):
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        # the largest tree its solves grow: a short stream's is at least the batch search's
        height, width = max(self.tree_height, _COLD_TREE[0]), max(self.level_width, _COLD_TREE[1])
        searched = ""
        if (height, width) != (self.tree_height, self.level_width):
            searched = (f"tree_height={self.tree_height}, level_width={self.level_width}: the first rebuilds (at most "
                        f"{_COLD_ROWS} rows) search at least the batch tree, so ")  # fmt: skip
        check_tree_size(height, width, searched=searched, remedy="lower tree_height or level_width")
        if self.sketch not in SKETCH_KINDS:
            raise ValueError(f"sketch must be one of {SKETCH_KINDS}, got {self.sketch!r}")
        sd = self.sketch_dim
        if not (sd is None or sd == "auto" or (is_integer(sd) and sd >= 1)):
            raise ValueError(f"sketch_dim must be a positive integer, 'auto' or None, got {sd!r}")
        if not (self.tree_rows is None or (is_integer(self.tree_rows) and self.tree_rows >= 4)):
            raise ValueError(f"tree_rows must be an integer >= 4 or None, got {self.tree_rows!r}")

    @classmethod
    def _unit_test_params(cls):
        yield {"rebuild_every": 50, "window_size": 100, "coreset_size": 50}
        yield {"rebuild_every": 40, "window_size": 80, "coreset_size": 30, "sketch_dim": 8, "polish": "hard"}
        yield {"outlier_fraction": "auto", "rebuild_every": 50, "window_size": 100, "coreset_size": 50}
        yield {"outlier_fraction": "auto", "rebuild_every": 50, "rebuild_lag": 20, "window_size": 100, "coreset_size": 50}

    def _state(self) -> dict:
        return {
            **super()._state(),
            "outlier_fraction_": self.outlier_fraction_,
            "flip_side": self.flip_side_,
            "candidates": [[_encode_row(w), b] for w, b in self._candidates],
            "candidate_errors": list(self._candidate_errors),
            "candidate_usable": list(self._candidate_usable),
            "side_evidence": list(self._side_evidence),
            "zero_calls": list(self._zero_calls),
            "rows_on_side": self._rows_on_side,
        }

    def _set_state(self, st: dict) -> None:
        super()._set_state(st)
        # files written before "auto" existed have no candidates
        self.outlier_fraction_ = st.get("outlier_fraction_", self.outlier_fraction_)
        self.flip_side_ = st.get("flip_side", "both")
        self._candidates = [(_decode_row(w), b) for w, b in st.get("candidates", [])]
        self._candidate_errors = list(st.get("candidate_errors", self._candidate_errors))
        self._candidate_usable = list(st.get("candidate_usable", self._candidate_usable))
        self._side_evidence = [int(v) for v in st.get("side_evidence", [0, 0, 0, 0])]
        self._zero_calls = [float(v) for v in st.get("zero_calls", [0.0, 0.0, 0.0, 0.0])]
        self._rows_on_side = int(st.get("rows_on_side", 0))  # (unknown in older files: as if it just changed)
        self._add_rate_zero()
