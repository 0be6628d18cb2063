"""One RGD-SVM solve: sketch rows -> RGD-tree -> inliers -> polish -> map back -> trim and refit.

The solver knows no stream and no service: arrays in, a :class:`Solution` out. Learners and the
batch estimator call :func:`solve`.

Steps (labels in {-1, +1}; P = positive rows, Q = negative rows):

1. Optionally sketch the rows with a :class:`~robustream.sketch.JLSketch` (k << d).
2. Search a direction with the pruned, boosted RGD-tree on the (sketched) rows, discarding
   ``floor(gamma_c * n_c)`` rows per class; the best node defines the inliers.
3. Polish on the inliers: nearest points of the two convex hulls (``"hard"``: the max-margin
   solution of the inliers) or of the reduced convex hulls with coefficients capped at
   ``1/(nu * n_c)`` (``"soft"``: nu-SVM geometry, for classes that overlap even without the
   flipped labels). Either way ``w = sum a_i x_i - sum b_j x_j`` with convex ``a``, ``b``.
4. Map back: the same coefficients over the full-dimension rows give ``w`` in R^d. By default
   (``polish_space="full"``) only the tree runs on the sketch and the polish runs on the
   full-dimension rows of the inliers it found; ``polish_space="sketch"`` polishes on the sketch
   too and maps those convex coefficients back.
5. Intercept: by default (``"min_error"``) the threshold along ``w`` with the fewest misclassified
   inliers (``"bisector"``: halfway between the two nearest points); then re-mark the ``floor(gamma_c n_c)``
   lowest-margin rows of each class as outliers and polish again, until the outlier set is stable
   (each such step is one CCCP step of the ramp loss, started from the tree's global search).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .blas import single_threaded_blas
from .kernels.gilbert import mdm_gram
from .kernels.rgd_tree import rgd_tree, samples_per_node, tree_level_bytes, tree_nodes_per_round
from .kernels.selection import trimmed_widths
from .rows import as_rows
from .sketch import FULL_GRAM_ROWS, JLSketch
from .validation import is_integer, is_real

POLISH_MODES = ("hard", "soft", "auto")
INTERCEPT_RULES = ("bisector", "min_error")
VALUE_RANGE = (1e-140, 1e140)  # largest |x| a solve accepts: squares and sums of squares stay normal floats
CERTIFY_MIN_STEPS, CERTIFY_STEPS_PER_ROW = 20_000, 20  # certify_budget
DENSE_TREE_BYTES = 2 << 30  # largest dense copy of sparse rows the tree makes without a sketch
DENSE_TREE_WARN_BYTES = 256 << 20  # RGDSVC warns from this size on, naming sketch_dim='auto'
TREE_LEVEL_BYTES = 2 << 30  # largest level of children (and their projections) a tree may hold
# most children one round of the RGD-tree may evaluate: about 15 s on 2,000 rows of 20 features here
# (the learners' default evaluates 279, the batch default 1,887); past ~5,000 nodes the prototype
# gained at most 0.8 points of accuracy
TREE_NODES_PER_ROUND = 10**6
TREE_DELTA, TREE_MU = 0.5, 0.1  # solve()'s sample size parameters: children per node from (delta, mu)
GROSS_ROW_DISTANCE = 25.0  # a row this many median distances from its class mean is left out of the tree's root
# w.w at most this times the largest squared norm of the rows w combines is rounding residue: no direction
NEGLIGIBLE_W2 = 1e-20


@dataclass
class Solution:
    """Result of :func:`solve` (all in full dimension unless named ``sketch_*``)."""

    coef: np.ndarray  # w, shape (d,)
    intercept: float
    margin_width: float  # trimmed slab width of the inliers along w; negative when they overlap
    outlier_mask: np.ndarray  # rows discarded as outliers
    convex_coef: np.ndarray  # per-row coefficient of w = sum sign_i * c_i * x_i (0 off the inliers)
    polish: str  # "hard" or "soft", the polish actually used
    tree_width: float  # trimmed width of the RGD-tree's best direction (on the rows it saw)
    n_tree_nodes: int
    n_refits: int
    polish_iterations: int
    converged: bool  # the last polish reached tol and found hulls that do not intersect (info['direction_found'])
    info: dict = field(default_factory=dict)


def check_tree_size(
    tree_height: int, level_width: int, *, n_samples: int | None = None, delta: float = TREE_DELTA,
    mu: float = TREE_MU, searched: str = "", remedy: str | None = None,
) -> None:
    """ValueError when one round of the RGD-tree would evaluate more than ``TREE_NODES_PER_ROUND``
    children: a tree that tall would not finish in any useful time. ``n_samples``: children per node,
    by default :func:`samples_per_node` of ``delta``, ``mu`` and the height (as :func:`solve` does);
    ``searched``: why the tree searched differs from the parameters given, if it does; ``remedy``:
    what to change instead of the parameters of :func:`solve`.

    >>> check_tree_size(10**6, 10)
    Traceback (most recent call last):
    ...
    ValueError: tree_height=1000000 with level_width=10 and 146 children per node (from delta=0.5, mu=0.1) would evaluate 1,459,998,686 directions per boosting round, more than 1,000,000; ...: lower tree_height or level_width, or raise delta or mu
    """
    given = ""
    if n_samples is None:
        n_samples, given = samples_per_node(delta, mu, tree_height), f" (from delta={delta!r}, mu={mu!r})"
    if remedy is None:
        remedy = "lower tree_height or level_width" + (", or raise delta or mu" if given else "")
    n_nodes = tree_nodes_per_round(n_samples, level_width, tree_height)
    if n_nodes > TREE_NODES_PER_ROUND:
        raise ValueError(
            f"{searched}tree_height={tree_height} with level_width={level_width} and {n_samples:,} children per node"
            f"{given} would evaluate {n_nodes:,} directions per boosting round, more than {TREE_NODES_PER_ROUND:,}; "
            f"heights beyond about 10 gained little in our measurements: {remedy}"
        )


def check_polish(polish: str, nu: float) -> None:
    """The ``polish`` mode and ``nu`` an estimator hands to :func:`solve`, checked where it is built
    (a learner turns a ValueError of a solve into a failed rebuild, which must not hide a typo).

    >>> check_polish("sfot", 0.3)
    Traceback (most recent call last):
    ...
    ValueError: polish must be one of ('hard', 'soft', 'auto'), got 'sfot'
    """
    if polish not in POLISH_MODES:
        raise ValueError(f"polish must be one of {POLISH_MODES}, got {polish!r}")
    if not (is_real(nu) and 0.0 < nu <= 1.0):
        raise ValueError(f"nu must be in (0, 1], got {nu!r}")


def _check_pair(outlier_fraction) -> None:
    """``solve``'s ``outlier_fraction``: a pair of per-class shares in [0, 1)."""
    ok = isinstance(outlier_fraction, (tuple, list, np.ndarray)) and len(outlier_fraction) == 2 and all(
        is_real(g) and 0.0 <= g < 1.0 for g in outlier_fraction
    )
    if not ok:
        raise ValueError(
            f"outlier_fraction must be a pair (positive, negative) of shares in [0, 1), got {outlier_fraction!r}"
        )


def per_class_outlier_fractions(
    flip_rate: float, n_pos: int, n_neg: int, noise_model: str = "binary"
) -> tuple[float, float]:
    """Expected share of wrong labels in each observed class under uniform flips at ``flip_rate``.

    ``noise_model="binary"``: labels flip between the two classes. With observed positive share
    ``pi'``, the clean share is ``pi = (pi' - r) / (1 - 2r)`` and the observed positives hold
    ``r (1 - pi) n`` flipped negatives, so ``gamma_pos = r (1 - pi) / pi'``. Imbalance makes the
    fractions very different (w8a at r = 0.15: about 0.85 and 0.005).

    ``noise_model="one_vs_rest"``: the positives are one class of many (a one-vs-rest member) and a
    wrong label is any of the other classes. For K classes of similar size the observed positives
    hold ``r`` wrong labels and the negatives ``r pi' / (1 - pi')`` (the class's own rows labelled as
    something else), whatever K is; the binary model would call most of a rare class flipped.

    >>> [round(g, 3) for g in per_class_outlier_fractions(0.15, 500, 500)]
    [0.15, 0.15]
    >>> [round(g, 3) for g in per_class_outlier_fractions(0.2, 100, 900, noise_model="one_vs_rest")]
    [0.2, 0.022]
    """
    if noise_model not in ("binary", "one_vs_rest"):
        raise ValueError(f"noise_model must be 'binary' or 'one_vs_rest', got {noise_model!r}")
    r = float(flip_rate)
    n = n_pos + n_neg
    if r <= 0.0 or n == 0:
        return 0.0, 0.0
    pi_obs = n_pos / n
    if noise_model == "one_vs_rest":
        return min(r, 0.95), min(r * pi_obs / max(1.0 - pi_obs, 1e-12), 0.95)
    pi = (pi_obs - r) / (1.0 - 2.0 * r) if r < 0.5 else 0.5
    pi = min(max(pi, 1.0 / n), 1.0 - 1.0 / n)
    g_pos = r * (1.0 - pi) / max(pi_obs, 1e-12)
    g_neg = r * pi / max(1.0 - pi_obs, 1e-12)
    return min(g_pos, 0.95), min(g_neg, 0.95)


def largest_value(X) -> float:
    """The largest absolute value of the rows ``X`` (dense or sparse), 0 for none; NaN when any is NaN.

    >>> largest_value(np.array([[1.0, -3.0], [0.5, 2.0]])), largest_value(sp.csr_matrix((0, 4)))
    (3.0, 0.0)
    """
    values = X.data if sp.issparse(X) else X
    with np.errstate(invalid="ignore"):
        return float(np.max(np.abs(values))) if values.size else 0.0


def discards_most_of_a_class(fractions: tuple[float, float], n_pos: int, n_neg: int) -> bool:
    """True when the per-class ``fractions`` would discard more than half of an observed class (as
    :func:`solve` counts, ``floor(gamma_c n_c)`` rows): such a class would mostly hold the other one,
    and its fit is a near-constant classifier, so ``"auto"`` does not consider it.

    >>> discards_most_of_a_class((0.6, 0.0), 100, 100), discards_most_of_a_class((0.5, 0.1), 100, 100)
    (True, False)
    """
    return max(
        math.floor(fractions[0] * n_pos + 1e-9) / max(n_pos, 1), math.floor(fractions[1] * n_neg + 1e-9) / max(n_neg, 1)
    ) > 0.5


def discarding_warning(who: str, flip_rate: float, fractions: tuple[float, float], n_pos: int, n_neg: int,
                       labels: tuple[str, str] = ("True", "False"), one_vs_rest_hint: bool = False,
                       pair_hint: bool = True) -> str | None:
    """The warning for a fixed ``outlier_fraction`` whose per-class ``fractions`` discard most of an
    observed class (:func:`discards_most_of_a_class`), else None. The uniform-flip model reads a class
    not much larger than the flip rate as mostly wrong labels: right when it is (w8a at 15% flips),
    a near-constant classifier when the class is simply rare. The text holds no counts, so Python's
    default filter shows it once per place and setting, not at every rebuild. ``labels``: how to name
    the positive and the negative rows.

    >>> print(discarding_warning("RGDSVC", 0.2, per_class_outlier_fractions(0.2, 200, 800), 200, 800))
    RGDSVC: outlier_fraction=0.2 discards most of the rows labelled True, the smaller class: ...
    >>> discarding_warning("RGDSVC", 0.2, (0.2, 0.2), 500, 500) is None
    True
    """
    if not discards_most_of_a_class(fractions, n_pos, n_neg):
        return None
    share_pos = math.floor(fractions[0] * n_pos + 1e-9) / max(n_pos, 1)
    share_neg = math.floor(fractions[1] * n_neg + 1e-9) / max(n_neg, 1)
    label = labels[0] if share_pos >= share_neg else labels[1]
    pair = " or a (positive, negative) pair" if pair_hint else ""
    hint = "; inside a one-vs-rest model, noise_model='one_vs_rest'" if one_vs_rest_hint else ""
    return (f"{who}: outlier_fraction={flip_rate:g} discards most of the rows labelled {label}, the smaller class: "
            "if labels flipped uniformly at that rate, most of that class's labels would be wrong. If the class is "
            "simply rare, the model is near-constant: set outlier_fraction='auto' (it checks which is the case), "
            f"a smaller fraction{pair}{hint}")


# where "auto" may put the wrong labels of a two-class problem: both classes (the uniform-flip model of
# per_class_outlier_fractions), only the observed negatives (positives flipped to the negative class)
# or only the observed positives. "both" comes first: it wins every tie.
AUTO_SIDES = ("both", "negative", "positive")
# the flip rates outlier_fraction="auto" may discard at (RGDSVC on a holdout, RGDSVMClassifier on the stream)
AUTO_FRACTIONS = (0.05, 0.10, 0.15, 0.20, 0.25, 0.30)
# "auto" also scores rate 0 (no wrong label: the soft polish on every row), so that it leaves clean data
# whole: from 0.05 up every rate discarded rows that were right (w8a with no flips: RGDSVC 6.7% test error,
# the majority class 3.1%, 2.5% with nothing discarded; the stream learner 5.5% against 2.4%). Its model
# must call each class (calls_each_class) on at least AUTO_ZERO_CALLS times as many rows as are labelled
# so: after one-sided flips of most of a small class the labels themselves favour the fit of every row
AUTO_RATES = (0.0,) + AUTO_FRACTIONS
AUTO_ZERO_CALLS = 0.5
# a one-sided variant replaces the symmetric one only if it leaves clearly fewer misclassified inliers
AUTO_SIDE_MARGIN = 0.25
# "auto" considers a fraction that discards most of an observed class (right when the class is small and
# uniformly flipped, wrong under one-sided flips) only if the rows its model predicts as that class are
# labelled so this many standard errors above one half (finds_the_rest_of_its_class), and RGDSVC picks
# it only if it errs this many standard errors less on its holdout (clearly_fewer), or the pick's calls
# of a class are mostly wrong (calls_mostly_wrong)
AUTO_DISCARD_Z = 2.5
# ... and the counts those tests read must hold at least this many calls of the class
AUTO_MIN_CALLS = 20
# calls_mostly_wrong on fewer calls: the chance of so few agreeing calls if half agreed, at most this
AUTO_FEW_CALLS_TAIL = 0.1


def side_outlier_fractions(flip_rate: float, side: str, n_pos: int, n_neg: int) -> tuple[float, float]:
    """Per-class fractions (positive, negative) that put ``flip_rate * n`` wrong labels on ``side``.

    ``"both"`` is the uniform-flip model; ``"negative"`` / ``"positive"`` assume every wrong label sits
    in that observed class (one-sided or adversarial flips), so all three discard about as many rows.

    >>> [round(g, 3) for g in side_outlier_fractions(0.15, "negative", 400, 600)]
    [0.0, 0.25]
    """
    if side == "both":
        return per_class_outlier_fractions(flip_rate, n_pos, n_neg, "binary")
    n = n_pos + n_neg
    if side == "negative":
        return 0.0, min(flip_rate * n / max(n_neg, 1), 0.95)
    if side == "positive":
        return min(flip_rate * n / max(n_pos, 1), 0.95), 0.0
    raise ValueError(f"side must be one of {AUTO_SIDES}, got {side!r}")


def side_overflows(flip_rate: float, side: str, n_pos: int, n_neg: int) -> bool:
    """True when the observed class ``side`` cannot hold ``flip_rate * n`` wrong labels without more
    than half of its rows being wrong. :func:`side_outlier_fractions` caps a fraction at 0.95, which
    on a class of two rows discards only one of them and would not look like "most of the class".

    >>> side_overflows(0.05, "positive", 2, 208), side_overflows(0.05, "negative", 2, 208)
    (True, False)
    """
    if side == "both":
        return False
    return flip_rate * (n_pos + n_neg) > 0.5 * (n_neg if side == "negative" else n_pos)


def side_unusable(flip_rate: float, side: str, n_pos: int, n_neg: int) -> bool:
    """True when ``"auto"`` may not put the wrong labels on ``side`` at ``flip_rate``: its per-class
    fractions would discard most of a class, or the class cannot hold them (:func:`side_overflows`).

    >>> side_unusable(0.05, "positive", 2, 208), side_unusable(0.05, "both", 100, 100)
    (True, False)
    """
    fractions = side_outlier_fractions(flip_rate, side, n_pos, n_neg)
    return discards_most_of_a_class(fractions, n_pos, n_neg) or side_overflows(flip_rate, side, n_pos, n_neg)


def side_key(X, sign: np.ndarray, coef: np.ndarray, intercept: float, outlier_mask: np.ndarray,
             margin_width: float) -> tuple[int, float]:
    """What :func:`pick_flip_side` compares for one fitted side: (inliers on the wrong side of the
    fit's own hyperplane, -margin width)."""
    margins = sign * (np.asarray(X @ coef).ravel() + intercept)
    return int(np.sum((margins <= 0.0) & ~outlier_mask)), -float(margin_width)

def pick_flip_side(keys: dict[str, tuple[int, float]]) -> str | None:
    """The side rule of ``"auto"``: where the wrong labels most likely sit, given for each side of
    :data:`AUTO_SIDES` that was fitted ``(inliers on the wrong side of the fit's own hyperplane, -margin
    width)``.

    A one-sided variant replaces the symmetric one if it leaves fewer than ``1 - AUTO_SIDE_MARGIN``
    times as many misclassified inliers, or, when the symmetric one leaves none, none and a wider
    slab; the better one-sided by (errors, -width). Without a symmetric fit, the better one-sided;
    None if nothing was fitted.

    >>> pick_flip_side({"both": (40, -0.1), "negative": (12, -0.3), "positive": (50, -0.1)})
    'negative'
    >>> pick_flip_side({"both": (40, -0.1), "negative": (35, -0.3)})
    'both'
    """
    one_sided = [(keys[side], side) for side in AUTO_SIDES[1:] if side in keys]
    if "both" not in keys:
        return min(one_sided)[1] if one_sided else None
    errors, width = keys["both"]
    better = [
        (key, side) for key, side in one_sided
        if (key[0] < (1.0 - AUTO_SIDE_MARGIN) * errors if errors > 0 else key < (0, width))
    ]  # fmt: skip
    return min(better)[1] if better else "both"


def calls_each_class(labelled: np.ndarray, called: np.ndarray) -> bool:
    """Whether a model calls each class on at least ``AUTO_ZERO_CALLS`` times as many rows as the
    labels hold (``labelled[c]`` rows labelled class ``c``, ``called[c]`` predicted so; two classes
    or one-vs-rest alike): what RGDSVC's ``"auto"`` asks of rate 0. It reads counts, not which rows
    are right: under one-sided flips of most of a small class the labels themselves favour the fit
    of every row, a near-constant model, that calls almost none of it. (Under uniform flips the
    right model calls a small class less often than it is labelled, so rate 0 is then left to the
    rates that discard.)

    >>> calls_each_class([970, 30], [975, 25]), calls_each_class([1380, 120], [1480, 20])
    (True, False)
    """
    return bool(np.all(np.asarray(called) >= AUTO_ZERO_CALLS * np.asarray(labelled)))


def clearly_fewer(fewer: int, more: int) -> bool:
    """Whether ``fewer`` errors are significantly fewer than ``more``, counted on the same rows:
    McNemar's z ``(more - fewer) / sqrt(more + fewer)`` (the counts: rows only one side got wrong)
    above ``AUTO_DISCARD_Z``, the bar for a fraction that discards most of a class.

    >>> clearly_fewer(8, 58), clearly_fewer(21, 45), clearly_fewer(0, 0)
    (True, True, False)
    """
    return more > fewer and (more - fewer) / math.sqrt(more + fewer) > AUTO_DISCARD_Z


def discarded_class(flip_rate: float, n_pos: int, n_neg: int) -> int:
    """The observed class (+1 or -1) of which the symmetric model at ``flip_rate`` discards the larger
    share (:func:`per_class_outlier_fractions`).

    >>> discarded_class(0.05, 100, 1100), discarded_class(0.05, 1100, 100)
    (1, -1)
    """
    fractions = per_class_outlier_fractions(flip_rate, n_pos, n_neg)
    return 1 if fractions[0] >= fractions[1] else -1


def finds_the_rest_of_its_class(n_called: int, n_called_labelled: int) -> bool:
    """Whether a symmetric model that discards most of an observed class (:func:`discarded_class`)
    may stand for its rate in ``"auto"``: of the ``n_called`` rows it predicts as that class,
    ``n_called_labelled`` are labelled so, which must be significantly more than half of them
    (one-sided binomial z above ``AUTO_DISCARD_Z``, and at least ``AUTO_MIN_CALLS`` calls: a fit that
    calls a handful of rows is near-constant, and z passes at 7 of 7).

    Under uniform flips at a rate below one half, the rows of a class are mostly labelled as it
    wherever they lie: the fit found the rest of a small class whose observed labels are mostly
    flipped rows of the other (w8a at 5% flips: 60% of its observed positives; 80 to 95% of the rows
    the right model predicts positive are labelled positive). After one-sided flips of half or more
    of a class, the rows of that class are mostly labelled as the other: a fit that discards most of
    the class calls none of them (a near-constant model), or calls rows labelled either way. Rows
    the model was fitted on flatter it (it looks for rows labelled so), so count rows it was not
    fitted on where there are enough.

    >>> finds_the_rest_of_its_class(40, 36), finds_the_rest_of_its_class(40, 24), finds_the_rest_of_its_class(11, 10)
    (True, False, False)
    """
    if n_called < AUTO_MIN_CALLS:
        return False
    return (n_called_labelled - 0.5 * n_called) / math.sqrt(0.25 * n_called) > AUTO_DISCARD_Z


def finds_its_discarded_class(flip_rate: float, labelled_positive: np.ndarray, predicted_positive: np.ndarray) -> bool:
    """:func:`finds_the_rest_of_its_class`, counted on rows: whether the symmetric model at
    ``flip_rate``, predicting ``predicted_positive`` on rows labelled ``labelled_positive`` (two
    boolean arrays), finds the rest of the class it discards most of (:func:`discarded_class`, of
    these rows' labels).

    >>> labelled = np.array([True] * 30 + [False] * 570)
    >>> finds_its_discarded_class(0.05, labelled, labelled), finds_its_discarded_class(0.05, labelled, ~labelled)
    (True, False)
    """
    n_pos = int(np.count_nonzero(labelled_positive))
    cls = discarded_class(flip_rate, n_pos, labelled_positive.size - n_pos) > 0
    called = predicted_positive == cls
    return finds_the_rest_of_its_class(int(np.count_nonzero(called)), int(np.count_nonzero(called & (labelled_positive == cls))))


def calls_mostly_wrong(n_calls: int, n_agree: int) -> bool:
    """Whether a model's calls of a class, counted on rows it was not fitted on, are mostly labelled
    as the other class: of the ``n_calls`` rows it called the class, only ``n_agree`` are labelled so,
    fewer than half; on fewer than ``AUTO_MIN_CALLS`` calls, also so few that a model whose calls
    agreed half the time would give as few at most ``AUTO_FEW_CALLS_TAIL`` of the time (binomial
    tail): 5 of 17, not 7 of 15.

    Under uniform flips of two classes at a rate below one half, a row is labelled as its class more
    often than not, so rows labelled so less than half the time are mostly of the other class: the
    model's calls of that class are mostly wrong. This is what a symmetric fit at too low a rate does
    on a small, heavily flipped class: it keeps the flipped rows of the other class as that class
    and calls rows like them (w8a at 20% flips, seed 0: 86% of the observed positives are flipped
    negatives; the fits at rates 0, 0.05 and 0.1 call 14, 10 and 7% of the holdout's rows positive,
    where about 3% are, and 21, 24 and 28% of those calls are labelled positive).

    RGDSVC's ``"auto"`` reads it where only a model that discards most of that class, and finds the
    rest of it (:func:`finds_the_rest_of_its_class`), can replace the pick, so a point estimate
    suffices: on the 230 cells of ``benchmarks/run_all.py``'s report only w8a's changed (flips of
    10, 20 and 30%: 5.4 / 10.7 / 11.0% test error before, 3.6 / 3.1 / 6.9% now; asking for a
    binomial z above 1.5 or 2.5 below one half kept 30% at 9.5%, and 2.5 left 20% at 6.7%).

    Without the binomial tail below ``AUTO_MIN_CALLS`` calls, the pick's count alone decided: w8a at
    15% flips, seed 0, where the pick (rate 0.05) calls 17 holdout rows positive and 5 are labelled
    so with OpenBLAS's AVX-512 kernels, and more than 20 with its AVX2 ones, gave 7.42% test error
    on the first and 2.83% on the second (the two round matrix products differently in the last bits).

    >>> calls_mostly_wrong(60, 29), calls_mostly_wrong(60, 30), calls_mostly_wrong(17, 5), calls_mostly_wrong(15, 7)
    (True, False, True, False)
    >>> calls_mostly_wrong(4, 0), calls_mostly_wrong(3, 0)
    (True, False)
    """
    if not n_agree < 0.5 * n_calls:
        return False
    if n_calls >= AUTO_MIN_CALLS:
        return True
    return sum(math.comb(n_calls, k) for k in range(n_agree + 1)) <= AUTO_FEW_CALLS_TAIL * 2.0**n_calls


def contradicts_one_side(n_calls: int, n_opposite: int, flip_rate: float) -> bool:
    """Whether a model fitted with the wrong labels on one side contradicts that assumption: of the
    ``n_calls`` rows it called the side's class (for side "negative": the rows it called negative),
    ``n_opposite`` are labelled as the other class, significantly more than ``flip_rate / 2`` of
    them (binomial z above ``AUTO_DISCARD_Z``, and at least ``AUTO_MIN_CALLS`` calls).

    With wrong labels only among the observed negatives (positives labelled negative), a row labelled
    positive is a positive, and the rows the model calls negative hold positive labels only where
    the model errs; under uniform flips at ``flip_rate`` they hold about that share. So a model that
    errs on less than half the flip rate tells the two apart (w8a at 5% uniform flips, the
    "negative" side: 7% of its negative calls labelled positive; breast-cancer after adversarial
    flips of 15%, the right "negative" side: 4%, at a flip rate of 0.2).

    >>> contradicts_one_side(627, 45, 0.05), contradicts_one_side(103, 4, 0.2), contradicts_one_side(0, 0, 0.1)
    (True, False, False)
    """
    p = 0.5 * flip_rate
    return n_calls >= AUTO_MIN_CALLS and p > 0.0 and (n_opposite - p * n_calls) / math.sqrt(n_calls * p * (1.0 - p)) > AUTO_DISCARD_Z


def row_offset(X) -> np.ndarray | None:
    """The point :func:`solve` moves dense rows to the origin from: their mean, when it lies farther
    from the origin than the rows spread around it (``|mean|^2 > sum of the column variances``);
    None otherwise, and for sparse rows (centring would fill them in).

    Moving every row by the same vector leaves the Minkowski difference of the classes, hence ``w``,
    the margin and the outliers, as they are; only the intercept moves. What it changes is the
    rounding: the polish reads distances as ``|p|^2 + |q|^2 - 2 p.q``, which loses every digit
    below the offset's when the offset dwarfs the spread (a timestamp, a price, a coordinate).

    >>> row_offset(np.array([[1000.0, 1.0], [1002.0, -1.0]]))
    array([1001.,    0.])
    >>> row_offset(np.array([[1.0, 1.0], [-1.0, -2.0]])) is None  # centred enough already
    True
    """
    if sp.issparse(X) or X.shape[0] < 2:
        return None
    mean = X.mean(axis=0)
    spread = 0.0
    for start in range(0, X.shape[0], 4096):  # block by block: no second copy of a large X
        block = X[start : start + 4096] - mean
        spread += float(np.einsum("ij,ij->", block, block))
    spread /= X.shape[0]
    return mean if 0.0 < spread < float(mean @ mean) else None


def _centred(X):
    """``(rows, offset)``: the rows as :func:`solve` works on them and the :func:`row_offset` they were moved by."""
    offset = row_offset(X)
    return (X, None) if offset is None else (X - offset, offset)


def gram_matrix(X) -> np.ndarray:
    """The Gram matrix :func:`solve` works with, to share between solves on the same rows ``X``
    (dense or sparse): ``Z @ Z.T`` with ``Z = X - row_offset(X)`` when :func:`row_offset` moves the
    rows, else ``X @ X.T``; a dense array, computed with one BLAS thread as in :func:`solve`.

    >>> gram_matrix(np.array([[1.0, 2.0], [0.0, -3.0]]))  # centred enough: X @ X.T
    array([[ 5., -6.],
           [-6.,  9.]])
    >>> gram_matrix(np.array([[101.0, 2.0], [100.0, 3.0]]))  # moved to their mean (100.5, 2.5) first
    array([[ 0.5, -0.5],
           [-0.5,  0.5]])
    """
    X, _ = _centred(as_rows(X))
    return _row_products(X)


@single_threaded_blas()
def _row_products(X) -> np.ndarray:
    """``X @ X.T`` as a dense array, rows as they are, with one BLAS thread (as in :func:`solve`)."""
    if sp.issparse(X):
        return np.asarray((X @ X.T).toarray())
    return X @ X.T


def _matvec(X, w: np.ndarray) -> np.ndarray:
    return np.asarray(X @ w).ravel()


def _combine(X, sign: np.ndarray, coef: np.ndarray) -> np.ndarray:
    nz = np.flatnonzero(coef)
    weights = sign[nz] * coef[nz]
    if sp.issparse(X):
        return np.asarray(X[nz].T @ weights).ravel()
    return X[nz].T @ weights


def nearest_point(
    X,
    sign: np.ndarray,
    cap: np.ndarray,
    coef0: np.ndarray | None = None,
    *,
    tol: float = 1e-3,
    max_iter: int = 100_000,
    working_set: int = 512,
    full_gram_rows: int = FULL_GRAM_ROWS,
    gram: np.ndarray | None = None,
    certify_within: int | None = None,
) -> tuple[np.ndarray, int, bool]:
    """Nearest points of the (reduced) convex hulls of the two classes by MDM with decomposition.

    ``X`` dense or CSR rows, ``sign`` in {-1, +1}, ``cap`` per-row coefficient caps (1 = hard).
    Up to ``full_gram_rows`` rows, MDM runs on the full Gram matrix (O(n) per step); above, on
    working sets of the most violating rows of each class, re-selected from fresh projections
    (SVMlight-style decomposition, O(n d) per outer step). Returns ``(coef, n_steps, converged)``
    with the stopping rule of :mod:`robustream.kernels.gilbert`. ``gram``: the rows' Gram matrix
    when the caller already has it (refits slice one matrix instead of recomputing it).
    ``certify_within`` (full Gram matrix only): return unconverged once this many steps have run
    without ``w`` separating the hulls (:func:`separates`): on intersecting hulls MDM shrinks ``w``
    towards 0 and may need tens of thousands of steps more to reach the absolute floor.
    """
    n = sign.shape[0]
    sign = sign.astype(np.float64)
    if coef0 is None:  # uniform over the rows that may carry a coefficient (cap > 0)
        coef = _feasible_start(sign, cap > 0.0, cap, None, X)
    else:
        coef = coef0.astype(np.float64).copy()
    w = _combine(X, sign, coef)
    steps = 0
    if gram is not None or n <= full_gram_rows:
        K = _row_products(X) if gram is None else gram
        row_sq = np.diag(K)
        # projections through w (O(n d)) rather than K (O(n^2)): K is read only by the MDM steps
        g = sign * _matvec(X, w)
        ww = float(w @ w)
        while steps < max_iter:
            floor = _gap_floor(row_sq, coef)
            target = max(tol * ww, floor)
            chunk = min(20_000, max_iter - steps)
            if certify_within is not None and steps < certify_within:
                chunk = min(chunk, certify_within - steps)  # the certificate is read at the chunk's end
            coef, g, ww, it = mdm_gram(K, g, sign, coef, cap, ww, target, chunk)
            steps += it
            w = _combine(X, sign, coef)
            g = sign * _matvec(X, w)  # refresh: removes the drift of the running values
            ww = float(w @ w)
            if _total_gap(g, sign, coef, cap) <= max(tol * ww, _gap_floor(row_sq, coef)) or it == 0:
                return coef, steps, True
            if certify_within is not None and steps >= certify_within and not _separation(g, sign, cap) > 0.0:
                return coef, steps, False
        return coef, steps, False
    row_sq = _row_norms2(X)
    m_half = max(2, working_set // 4)
    for _ in range(max(1, max_iter // 100)):
        g = sign * _matvec(X, w)
        ww = float(w @ w)
        floor = _gap_floor(row_sq, coef)
        if _total_gap(g, sign, coef, cap) <= max(tol * ww, floor):
            return coef, steps, True
        ws = _working_set(g, sign, coef, cap, m_half)
        Xw = X[ws]
        K = _row_products(Xw)
        budget = min(50 * ws.size, max(1, max_iter - steps))
        new_c, _, _, it = mdm_gram(K, g[ws], sign[ws], coef[ws], cap[ws], ww, max(0.5 * tol * ww, floor), budget)
        delta = new_c - coef[ws]
        coef[ws] = new_c
        w = w + _combine(Xw, sign[ws], delta) if np.any(delta) else w
        steps += it
        if steps >= max_iter or it == 0:
            break
    g = sign * _matvec(X, w)
    return coef, steps, _total_gap(g, sign, coef, cap) <= max(tol * float(w @ w), _gap_floor(row_sq, coef))


def certify_budget(n_rows: int) -> int:
    """MDM steps a polish of ``n_rows`` rows gets to separate the hulls (:func:`separates`) before
    they count as intersecting. Measured on the stream and batch solves of six shared data sets at
    15% flips (australian, wdbc, heart, svmguide1, w8a, mushrooms; 1,590 solves): every solve that
    converged had a certificate within max(20,000, 20 n) steps; the later ones all stopped at
    ``max_iter`` (100,000) unconverged.
    """
    return max(CERTIFY_MIN_STEPS, CERTIFY_STEPS_PER_ROW * n_rows)


def separates(X, sign: np.ndarray, coef: np.ndarray, cap: np.ndarray, w: np.ndarray | None = None) -> bool:
    """Whether ``w = sum_i sign_i coef_i x_i`` proves the (reduced) hulls disjoint: every point of
    the positive hull projects above every point of the negative one (:func:`_separation` > 0).
    On intersecting hulls no ``w`` does; the nearest points of disjoint hulls always do, and so
    does a solve close enough to them.

    >>> import numpy as np
    >>> X, sign = np.array([[1.0], [2.0], [-1.0], [-2.0]]), np.array([1.0, 1.0, -1.0, -1.0])
    >>> separates(X, sign, np.array([1.0, 0.0, 1.0, 0.0]), np.ones(4))
    True
    >>> separates(np.array([[1.0], [-1.0], [0.5], [-0.5]]), sign, np.array([1.0, 0.0, 1.0, 0.0]), np.ones(4))
    False
    """
    if w is None:  # a caller that has w = sum_i sign_i coef_i x_i already passes it
        w = _combine(X, sign, coef)
    return bool(np.any(w) and _separation(sign * _matvec(X, w), sign, cap) > 0.0)


def _separation(g: np.ndarray, sign: np.ndarray, cap: np.ndarray) -> float:
    """Smallest signed projection ``g`` (``sign * x.w``) over the positive (reduced) hull plus the
    same over the negative one: how far the hulls lie apart along ``w``, times ``||w||`` (negative
    when they overlap along it). The least of a class is its rows in ascending ``g``, each filled
    to its cap until the coefficients sum to 1 (rows with cap 0 are not in the hull)."""
    total = 0.0
    for s in (1.0, -1.0):
        rows = np.flatnonzero((sign == s) & (cap > 0.0))
        order = rows[np.argsort(g[rows], kind="stable")]
        filled = np.cumsum(cap[order])
        last = min(int(np.searchsorted(filled, 1.0)), order.size - 1)  # caps summing to 1 - rounding: all rows
        mass = cap[order[: last + 1]].copy()
        mass[last] = 1.0 - (filled[last - 1] if last > 0 else 0.0)
        total += float(mass @ g[order[: last + 1]])
    return total


def _row_norms2(X) -> np.ndarray:
    """Squared norm of every row."""
    return np.asarray(X.multiply(X).sum(axis=1)).ravel() if sp.issparse(X) else np.einsum("ij,ij->i", X, X)


def _trimmed_mean(rows, n_discard: int) -> np.ndarray:
    """Mean of ``rows`` without its gross outliers: among the ``n_discard`` rows farthest from the
    plain mean, those more than ``GROSS_ROW_DISTANCE`` times the median distance from it.

    The tree is rooted at the difference of the class means, and one mislabelled row far away drags
    a plain mean so far that the search never leaves the wrong basin (clean accuracy 0.82 instead of
    0.995 in ``test_gross_mislabelled_row_does_not_steer_the_root``, whose row sits 95 median
    distances out). Rows merely in the tail stay: leaving them out changed the trees on ordinary
    data, for the worse as often as for the better (``benchmarks/batch_noise.py``; the farthest rows
    of the shared data sets sit up to 15 median distances out). A gross row drags the mean towards
    it, so it stands out only while it is a small share of its class (about 1 in 25 at 25x). Sparse
    rows stay sparse.

    >>> import numpy as np
    >>> rows = np.c_[np.zeros(60), np.arange(60.0)]  # mean (0, 29.5)
    >>> _trimmed_mean(np.r_[rows, [[1e6, 0.0]]], 2)
    array([ 0. , 29.5])
    >>> _trimmed_mean(np.r_[rows, [[200.0, 0.0]]], 2)  # in the tail, not gross: kept
    array([ 3.27868852, 29.01639344])
    """
    mean = np.asarray(rows.mean(axis=0)).ravel()
    n_keep = rows.shape[0] - n_discard
    if n_discard <= 0 or n_keep <= 0:
        return mean
    distance = np.sqrt(np.maximum(_row_norms2(rows) - 2.0 * _matvec(rows, mean) + float(mean @ mean), 0.0))
    # rows tied with the last one kept are all kept, so the root does not depend on the row order
    farthest = distance > np.partition(distance, n_keep - 1)[n_keep - 1]
    gross = farthest & (distance > GROSS_ROW_DISTANCE * float(np.median(distance)))
    if not gross.any():
        return mean
    return np.asarray(rows[np.flatnonzero(~gross)].mean(axis=0)).ravel()


def _support_scale(row_sq: np.ndarray, coef: np.ndarray) -> float:
    """Largest squared norm of the rows that ``w`` combines (``coef > 0``): the scale of the rounding
    in ``w`` and in its projections. A row far away that carries no coefficient (an outlier, or an
    inlier deep on its own side) must not make a small but exact ``w`` look like zero."""
    support = coef > 0.0
    return float(row_sq[support].max()) if support.any() else 0.0


def negligible_direction(w: np.ndarray, support_scale: float) -> bool:
    """Whether ``w``, a combination of rows whose largest squared norm is ``support_scale``, is 0 up
    to rounding: ``w.w <= NEGLIGIBLE_W2 * support_scale``. The rows gave no direction (the same
    points in both classes; reduced hulls that intersect at every ``nu``). The bound is relative to
    the rows combined, not to their norms' spread: separable rows with one feature of standard
    deviation 1e6 and a slab of width 2 along another have ``w.w`` near 1 against a scale of 1e13.

    >>> negligible_direction(np.array([3e-17, 0.0]), 4.0), negligible_direction(np.array([1.0, 0.0]), 1e13)
    (True, False)
    """
    return not np.any(w) or float(w @ w) <= NEGLIGIBLE_W2 * support_scale


def _gap_floor(row_sq: np.ndarray, coef: np.ndarray) -> float:
    # intersecting (reduced) hulls have w = 0: an absolute floor on the gap ends that case
    return 1e-12 * _support_scale(row_sq, coef)


def _total_gap(g, sign, coef, cap) -> float:
    total = 0.0
    for s in (1.0, -1.0):
        members = sign == s
        up = members & (coef > 0.0)
        dn = members & (coef < cap)
        if up.any() and dn.any():
            total += max(0.0, g[up].max() - g[dn].min())
    return total


def _working_set(g, sign, coef, cap, m_half) -> np.ndarray:
    picks = []
    for s in (1.0, -1.0):
        members = sign == s
        up = np.flatnonzero(members & (coef > 0.0))
        dn = np.flatnonzero(members & (coef < cap))
        if up.size:
            picks.append(up[np.argsort(-g[up], kind="stable")[:m_half]])
        if dn.size:
            picks.append(dn[np.argsort(g[dn], kind="stable")[:m_half]])
        # keep the rows that carry mass: they define w and must stay movable
        carry = np.flatnonzero(members & (coef > 0.0))
        if carry.size <= m_half:
            picks.append(carry)
    return np.unique(np.concatenate(picks))


def _caps(sign: np.ndarray, inlier: np.ndarray, soft: bool, nu: float) -> np.ndarray:
    cap = np.ones(sign.shape[0])
    if soft:
        for s in (1.0, -1.0):
            members = (sign == s) & inlier
            n_c = int(members.sum())
            cap[members] = min(1.0, 1.0 / max(nu * n_c, 1.0))
    cap[~inlier] = 0.0
    return cap


def _feasible_start(sign, inlier, cap, previous: np.ndarray | None, X) -> np.ndarray:
    """Convex coefficients per class within ``cap``: ``previous`` on the inliers, renormalised and
    clipped to the caps (uniform when ``previous`` has no mass on a class's inliers). The mass clipped
    off goes to the rows ``X`` with the lowest signed projections under the clipped start, each filled
    to its cap: where the solution puts its mass. (Spread evenly over the rows with room, as before,
    it gave every row a little mass that the polish then removed one MDM step at a time: twice the
    steps on a stream's rebuilds.)"""
    coef = np.zeros(sign.shape[0])
    excess = {}
    for s in (1.0, -1.0):
        members = (sign == s) & inlier
        c = np.where(members, previous, 0.0) if previous is not None else np.zeros(sign.shape[0])
        total = c.sum()
        if total <= 0.0:
            coef[members] = 1.0 / members.sum()
            continue
        c = c / total
        excess[s] = float(np.maximum(c - cap, 0.0).sum())
        coef[members] = np.minimum(c, cap)[members]
    if not any(excess.values()):
        return coef
    g = sign * _matvec(X, _combine(X, sign, coef))
    for s, e in excess.items():
        if e <= 0.0:
            continue
        members = np.flatnonzero((sign == s) & inlier & (coef < cap))
        for i in members[np.argsort(g[members], kind="stable")]:
            add = min(e, cap[i] - coef[i])
            coef[i] += add
            e -= add
            if e <= 0.0:
                break
    return coef


def _trim(margins: np.ndarray, sign: np.ndarray, n_discard: dict[float, int]) -> np.ndarray:
    """Inlier mask: all rows but the ``n_discard[class]`` lowest ``margins`` of each class."""
    inlier = np.ones(sign.shape[0], dtype=bool)
    for s in (1.0, -1.0):
        members = np.flatnonzero(sign == s)
        k = n_discard[s]
        if k > 0:
            order = np.argsort(margins[members], kind="stable")
            inlier[members[order[:k]]] = False
    return inlier


@single_threaded_blas()
def solve(
    X,
    y: np.ndarray,
    *,
    outlier_fraction: tuple[float, float] = (0.15, 0.15),
    polish: str = "soft",
    nu: float = 0.3,
    sketch: JLSketch | None = None,
    polish_space: str = "full",
    tree_height: int = 6,
    level_width: int = 10,
    boosting_rounds: int = 3,
    delta: float = TREE_DELTA,
    mu: float = TREE_MU,
    n_samples: int | None = None,
    refit_rounds: int = 5,
    tree_rows: int | None = 2000,
    warm_start: np.ndarray | None = None,
    polish_start: np.ndarray | None = None,
    intercept: str = "min_error",
    tol: float = 1e-3,
    max_iter: int = 100_000,
    seed: int = 0,
    gram: np.ndarray | None = None,
) -> Solution:
    """Fit one binary RGD-SVM with outliers; ``y`` in {-1, +1}, ``X`` dense or CSR (n, d).

    ``outlier_fraction`` is the pair (gamma_pos, gamma_neg) of shares to discard per class.
    ``tree_height=0``: no tree search; the inliers are trimmed along the root (sparse rows are
    then never densified, as there is no tree to evaluate on them). A pair that discards no row of
    either class searches no tree either: every row is an inlier along any direction, and the polish
    starts from ``polish_start``, not from the tree (the same solution, without the search's cost).
    ``tree_rows`` caps the rows the RGD-tree evaluates its nodes on (a stratified random subset;
    None = all rows).
    ``warm_start``: a direction in the row space (full dimension) to root the tree at instead of
    the difference of the class means, typically the previous solution ``w`` of a stream (a point
    of the Minkowski difference of rows that are still there).
    ``polish_start``: non-negative weights per row (the convex coefficients of a previous solution,
    0 elsewhere) the first polish starts from, renormalised on the inliers within the caps.
    ``gram``: ``gram_matrix(X)``, when several solves on the same rows share one (used by a
    full-dimension polish of at most ``FULL_GRAM_ROWS`` rows, and by the RGD-tree on such dense rows
    without a sketch; the result is the same as without, up to rounding in the tree's ranking).

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = np.r_[rng.normal(2, 1, (50, 2)), rng.normal(-2, 1, (50, 2))]
    >>> y = np.r_[np.ones(50), -np.ones(50)]
    >>> y[:5] = -1  # five flipped labels
    >>> sol = solve(X, y, outlier_fraction=(0.1, 0.1), seed=0)
    >>> bool(sol.outlier_mask[:5].all()), float(np.mean(np.sign(X @ sol.coef + sol.intercept) == np.r_[np.ones(50), -np.ones(50)])) > 0.95
    (True, True)
    """
    check_polish(polish, nu)
    if intercept not in INTERCEPT_RULES:
        raise ValueError(f"intercept must be one of {INTERCEPT_RULES}, got {intercept!r}")
    if polish_space not in ("full", "sketch"):
        raise ValueError(f"polish_space must be 'full' or 'sketch', got {polish_space!r}")
    _check_pair(outlier_fraction)
    for name, value, low in (("tree_height", tree_height, 0), ("level_width", level_width, 1),
                             ("boosting_rounds", boosting_rounds, 0), ("refit_rounds", refit_rounds, 0),
                             ("max_iter", max_iter, 1)):  # fmt: skip
        if not (is_integer(value) and value >= low):
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    for name, value in (("n_samples", n_samples), ("tree_rows", tree_rows)):
        if value is None:
            continue
        if not (is_integer(value) and value >= 1):
            raise ValueError(f"{name} must be a positive integer or None, got {value!r}")
    for name, value in (("delta", delta), ("mu", mu), ("tol", tol)):
        if not (is_real(value) and 0.0 < value < 1.0):
            raise ValueError(f"{name} must be in (0, 1), got {value!r}")
    if not (is_integer(seed) and seed >= 0):  # None would draw a different tree on every call
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    X = as_rows(X)
    sign = np.asarray(y, dtype=np.float64)
    if sign.ndim != 1 or sign.shape[0] != X.shape[0]:
        raise ValueError(f"y must be 1-d with one label per row of X ({X.shape[0]}), got shape {sign.shape}")
    if not np.all(np.abs(sign) == 1.0):
        raise ValueError("y must contain only -1 and +1")
    pos = sign > 0
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError("both classes need at least one row")
    largest = largest_value(X)
    if not math.isfinite(largest):
        raise ValueError("X contains NaN or infinite values")
    if largest > 0.0 and not VALUE_RANGE[0] <= largest <= VALUE_RANGE[1]:
        # products of rows (the Gram matrix, w.w) would underflow to 0 or overflow in float64
        raise ValueError(f"X: the largest absolute value is {largest:.3g}, outside [{VALUE_RANGE[0]:g}, "
                         f"{VALUE_RANGE[1]:g}]; rescale the features (for example, standardise them)")
    X, offset = _centred(X)  # un-centred dense rows: the same w, without the rounding of the offset
    g_pos, g_neg = outlier_fraction
    n_discard = {
        1.0: min(int(math.floor(g_pos * n_pos + 1e-9)), n_pos - 1),
        -1.0: min(int(math.floor(g_neg * n_neg + 1e-9)), n_neg - 1),
    }
    if n_discard[1.0] == 0 and n_discard[-1.0] == 0:
        tree_height = 0  # nothing to discard: the search could only pick the inliers, which are every row

    # 1-2: the tree on the (sketched) rows; without a tree, sparse rows stay sparse
    if sketch is not None:
        Z = sketch.transform(X)
    elif sp.issparse(X) and tree_height > 0:
        dense_bytes = 8 * X.shape[0] * X.shape[1]
        if dense_bytes > DENSE_TREE_BYTES:
            raise ValueError(
                f"the RGD-tree works on dense rows: these {X.shape[0]} x {X.shape[1]} sparse rows would take "
                f"{dense_bytes / 2**30:.1f} GiB; run the tree on a JL sketch (RGDSVC(sketch_dim='auto') or an int), "
                f"or set tree_height=0"
            )
    if sketch is None:
        Z = X
    # sparse rows for the tree: densified class by class (one dense copy of the rows, not two)
    densified = sp.issparse(Z) and tree_height > 0
    ZP, ZQ = (X[pos].toarray(), X[~pos].toarray()) if densified else (Z[pos], Z[~pos])
    rows_p, rows_q = np.flatnonzero(pos), np.flatnonzero(~pos)  # the tree's rows, as rows of X
    class_rows = (ZP, ZQ) if densified else None
    root = None
    if warm_start is not None and np.any(warm_start):
        w0 = np.asarray(warm_start, dtype=np.float64)
        if w0.shape != (X.shape[1],) or not np.all(np.isfinite(w0)):
            raise ValueError(f"warm_start must be {X.shape[1]} finite values, got shape {w0.shape}")
        root = sketch.transform(w0[None, :])[0] if sketch is not None else w0
    if root is None or not np.any(root):
        root = _trimmed_mean(ZP, n_discard[1.0]) - _trimmed_mean(ZQ, n_discard[-1.0])
    if not np.any(root):  # equal class means: the positive row farthest from them (a point of the difference)
        spread = np.asarray(ZP - ZQ.mean(axis=0))
        root = spread[int(np.argmax(np.einsum("ij,ij->i", spread, spread)))]
    if not np.any(root):  # every row is the same point: any direction is as good as another
        root = np.eye(1, Z.shape[1]).ravel()
    n_given = n_samples is not None
    if n_samples is None:
        n_samples = samples_per_node(delta, mu, tree_height)
    # The tree ranks directions by trimmed width; a stratified random subset of rows ranks them
    # almost as well and makes a level cost independent of n. All rows are used for the inliers.
    tree_discard = (n_discard[1.0], n_discard[-1.0])
    if tree_height > 0 and tree_rows is not None and Z.shape[0] > tree_rows:
        rng = np.random.default_rng([seed, 1])
        keep_p = max(2, int(round(tree_rows * n_pos / Z.shape[0])))
        keep_q = max(2, tree_rows - keep_p)
        sub_p = np.sort(rng.choice(n_pos, min(keep_p, n_pos), replace=False))
        sub_q = np.sort(rng.choice(n_neg, min(keep_q, n_neg), replace=False))
        ZP, ZQ, rows_p, rows_q = ZP[sub_p], ZQ[sub_q], rows_p[sub_p], rows_q[sub_q]
        tree_discard = (
            min(int(math.floor(g_pos * ZP.shape[0] + 1e-9)), ZP.shape[0] - 1),
            min(int(math.floor(g_neg * ZQ.shape[0] + 1e-9)), ZQ.shape[0] - 1),
        )
    if tree_height > 0:
        level_bytes = tree_level_bytes(n_samples, level_width, tree_height, ZP.shape[1], ZP.shape[0] + ZQ.shape[0])
        if level_bytes > TREE_LEVEL_BYTES:
            given = "" if n_given else f", from delta={delta!r} and mu={mu!r}: (1 + 1/delta)^2 ln(tree_height/mu + 1)"
            raise ValueError(
                f"the RGD-tree would take {level_bytes / 2**30:.3g} GiB per level ({n_samples:,} children per node"
                f"{given}; level_width={level_width}, on {ZP.shape[0] + ZQ.shape[0]} rows of {ZP.shape[1]} values); "
                f"at most {TREE_LEVEL_BYTES / 2**30:g} GiB: raise delta or mu, or lower level_width or tree_rows"
            )
        check_tree_size(tree_height, level_width, n_samples=n_samples if n_given else None, delta=delta, mu=mu)
    # one Gram matrix per space, shared by every polish and refit (O(n^2 d) once, not per round)
    grams: dict[str, np.ndarray] = {}
    if gram is not None:
        if gram.shape != (sign.shape[0], sign.shape[0]):
            raise ValueError(f"gram must have shape ({sign.shape[0]}, {sign.shape[0]}), got {gram.shape}")
        grams["full"] = gram
    if tree_height > 0:
        tree_gram = None
        if sketch is None and sign.shape[0] <= FULL_GRAM_ROWS and not sp.issparse(X):
            # the polish needs it anyway; the tree reads its children's projections off it (rows
            # centred above: sparse rows are not, so their tree computes its own of centred rows)
            if "full" not in grams:
                grams["full"] = _row_products(X)
            tree_gram = grams["full"]
        direction, tree_width, n_nodes, _ = rgd_tree(
            ZP, ZQ, tree_discard[0], tree_discard[1], root,
            tree_height=tree_height, level_width=level_width, n_samples=n_samples,
            delta=delta, boosting_rounds=boosting_rounds, tol=tol, seed=seed,
            gram=tree_gram, gram_rows=None if tree_gram is None else np.concatenate([rows_p, rows_q]),
        )  # fmt: skip
        if densified:  # the dense rows of each class, as before the tree's subsample
            proj = np.empty(sign.shape[0])
            proj[pos], proj[~pos] = _matvec(class_rows[0], direction), _matvec(class_rows[1], direction)
            del class_rows
        else:
            proj = _matvec(Z, direction)
    else:  # no search: the inliers are trimmed along the root
        direction, n_nodes = root, 1
        proj = _matvec(Z, root)
        tree_width = float(trimmed_widths(proj[pos][None, :], proj[~pos][None, :], n_discard[1.0], n_discard[-1.0],
                                          np.array([math.sqrt(float(root @ root))]))[0])  # fmt: skip
    inlier = _trim(sign * proj, sign, n_discard)

    # 3-5: polish, map back, trim and refit
    start = None
    if polish_start is not None:
        start = np.asarray(polish_start, dtype=np.float64)
        if start.shape != sign.shape or not np.all((start >= 0.0) & np.isfinite(start)):
            raise ValueError(f"polish_start must be {sign.shape[0]} non-negative weights, one per row")
    row_sq = _row_norms2(X)
    state = {"nu": nu, "soft": polish == "soft"}

    def nearest_in(space: str, cap, start):
        """Nearest points over the rows with cap > 0; the others keep coefficient 0."""
        rows = Z if space == "sketch" else X
        if sign.shape[0] <= FULL_GRAM_ROWS:
            if space not in grams:
                grams[space] = _row_products(rows)  # the rows as this solve works on them
            # rows with cap 0 never move, so the full matrix serves every inlier set without a copy
            return nearest_point(rows, sign, cap, start, tol=tol, max_iter=max_iter, gram=grams[space],
                                 certify_within=certify_budget(int(np.count_nonzero(cap))))  # fmt: skip
        idx = np.flatnonzero(cap > 0.0)
        c_in, it, ok = nearest_point(rows[idx], sign[idx], cap[idx], start[idx], tol=tol, max_iter=max_iter)
        coef = np.zeros(sign.shape[0])
        coef[idx] = c_in
        return coef, it, ok

    def polish_once(inlier_mask, soft, nu_eff, previous):
        cap = _caps(sign, inlier_mask, soft, nu_eff)
        # Only the tree needs the sketch: a full-dimension polish started from a sketch-space one
        # took more MDM steps than started from the tree's inliers (benchmarks/sketch_speed.py).
        space = "sketch" if sketch is not None and polish_space == "sketch" else "full"
        rows = Z if space == "sketch" else X
        start = _feasible_start(sign, inlier_mask, cap, previous, rows)
        coef, it, ok = nearest_in(space, cap, start)
        w = _combine(X, sign, coef)
        # read the certificate even when the solve converged: it may have stopped at the absolute
        # gap floor (_gap_floor), which on rows of very different norms is not below w.w
        return coef, w, it, ok, separates(rows, sign, coef, cap, w=w if rows is X else None)

    def polish_on(inlier_mask, soft, previous):
        """Polish; when the (reduced) hulls of the inliers intersect, shrink them.

        Intersecting: no separation certificate (:func:`separates`), or ``w`` is rounding residue
        (:func:`negligible_direction`). A solve that ran out of steps without a certificate had ``w``
        shrinking towards 0: its direction is noise (CoresetSVMClassifier on mushrooms with 15% flips:
        64% training accuracy at ``nu`` = 0.3 after 100,000 steps, 81% at the ``nu`` that gives
        disjoint hulls). The last flag: whether it found hulls that do not intersect (on rows that
        give no direction, e.g. the same points in both classes, no ``nu`` does).
        """
        soft = soft or state["soft"]
        steps = 0
        for _ in range(8):
            coef, w, it, ok, separated = polish_once(inlier_mask, soft, state["nu"], previous)
            steps += it
            if separated and not negligible_direction(w, _support_scale(row_sq, coef)):
                return coef, steps, ok, True
            if soft:
                state["nu"] = 0.5 * (1.0 + state["nu"])
            soft = state["soft"] = True
            previous = None
        return coef, steps, ok, False

    def fit_inliers(inlier_mask, soft):
        coef, steps, ok, found = polish_on(inlier_mask, soft, start)
        rounds = 0
        for _ in range(refit_rounds):
            proj = _matvec(X, _combine(X, sign, coef))
            b = _intercept(proj, sign, coef, inlier_mask, intercept)
            new_inlier = _trim(sign * (proj + b), sign, n_discard)
            if np.array_equal(new_inlier, inlier_mask):
                break
            inlier_mask = new_inlier
            coef, it, ok, found = polish_on(inlier_mask, soft, coef)
            steps += it
            rounds += 1
        return coef, inlier_mask, steps, ok, found, rounds

    if polish == "auto":
        coef, inl, steps, ok, found, rounds = fit_inliers(inlier, soft=False)
        w = _combine(X, sign, coef)
        # hard if the inliers separate; a hard polish that met intersecting hulls went soft (state)
        if not state["soft"] and _slab_width(_matvec(X, w), sign, inl, w) > 0.0:
            mode = "hard"
        else:
            mode = "soft"
            coef, inl, s2, ok, found, rounds = fit_inliers(inlier, soft=True)
            steps += s2
    else:
        coef, inl, steps, ok, found, rounds = fit_inliers(inlier, soft=(polish == "soft"))
        mode = "soft" if state["soft"] else "hard"
    w = _combine(X, sign, coef)
    proj = _matvec(X, w)
    b = _intercept(proj, sign, coef, inl, intercept)
    if offset is not None:  # w.(x - offset) + b = w.x + (b - w.offset)
        b -= float(w @ offset)
    return Solution(
        coef=w,
        intercept=b,
        margin_width=_slab_width(proj, sign, inl, w),
        outlier_mask=~inl,
        convex_coef=coef,
        polish=mode,
        tree_width=float(tree_width),
        n_tree_nodes=int(n_nodes),
        n_refits=rounds,
        polish_iterations=int(steps),
        converged=bool(ok and found),
        info={
            "n_discard_pos": n_discard[1.0],
            "n_discard_neg": n_discard[-1.0],
            "samples_per_node": n_samples,
            "nu": state["nu"],
            "direction_found": bool(found),
        },
    )


def _intercept(proj, sign, coef, inlier=None, rule: str = "bisector") -> float:
    """Offset of the hyperplane along ``w``, from the projections ``proj = X @ w``.

    ``"bisector"``: halfway between the two nearest points c_P, c_Q, ``b = -<w, c_P + c_Q> / 2``.
    ``"min_error"``: the threshold with the fewest misclassified inliers (ties: nearest the
    bisector); better when the kept classes still overlap or are imbalanced.
    """
    pos = sign > 0
    b = -0.5 * float(coef[pos] @ proj[pos] + coef[~pos] @ proj[~pos])
    if rule == "bisector" or inlier is None:
        return b
    p_in, s_in = proj[inlier], sign[inlier]
    order = np.argsort(p_in, kind="stable")
    p_sorted, s_sorted = p_in[order], s_in[order]
    # threshold just above sorted value i-1 (i rows below it): errors = positives below + negatives above
    pos_below = np.r_[0, np.cumsum(s_sorted > 0)]
    neg_above = (s_sorted < 0).sum() - np.r_[0, np.cumsum(s_sorted < 0)]
    errors = pos_below + neg_above
    lo, hi = p_sorted[0], p_sorted[-1]
    cuts = np.r_[lo - max(1.0, abs(lo)), 0.5 * (p_sorted[:-1] + p_sorted[1:]), hi + max(1.0, abs(hi))]
    # a cut between two equal projections is no cut: every tied row would sit on it (decision 0)
    between_distinct = np.r_[True, p_sorted[:-1] < p_sorted[1:], True]
    errors = np.where(between_distinct, errors, np.iinfo(errors.dtype).max)
    best = np.flatnonzero(errors == errors.min())
    return -float(cuts[best[np.argmin(np.abs(cuts[best] + b))]])


def _slab_width(proj, sign, inlier, w) -> float:
    """Width of the slab between the inliers of the two classes along ``w`` (``proj = X @ w``)."""
    norm = float(np.linalg.norm(w))
    if norm == 0.0:
        return 0.0
    pos = sign > 0
    return float((proj[pos & inlier].min() - proj[~pos & inlier].max()) / norm)
