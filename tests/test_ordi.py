"""ORDIFilter: the ORDI score against direct batch computations, what it ranks low, what the filter skips."""

import copy
import math
import pickle

import numpy as np
import pytest
from river import base, linear_model, naive_bayes, preprocessing
from sklearn.metrics import roc_auc_score

from robustream import ORDIFilter, RGDSVMClassifier
from robustream.evaluate import noisy_stream, prequential
from robustream.learners import ordi as ordi_module
from robustream.learners.ordi import H_4_HALF, ordi_bound
from robustream.learners.registry import make_learner


def _gaussian_rows(n=2000, d=10, sep=1.5, flip=0.15, seed=0):
    """Two Gaussian classes along a random unit direction; returns rows, noisy labels, flip mask."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    w /= np.linalg.norm(w)
    y = rng.random(n) < 0.5
    X = rng.normal(size=(n, d)) + np.outer(np.where(y, sep, -sep), w)
    flipped = rng.random(n) < flip
    rows = [{f"f{j}": float(X[i, j]) for j in range(d)} for i in range(n)]
    return rows, [bool(v) for v in y ^ flipped], flipped, X


class _Recorder(base.Classifier):
    """Remembers which samples (by object identity) it was taught."""

    def __init__(self):
        self.taught = []

    def learn_one(self, x, y):
        self.taught.append(id(x))

    def predict_one(self, x):
        return True


def _streamed_scores(model, rows, labels):
    scores = []
    for x, y in zip(rows, labels):
        scores.append(model.outlier_score_one(x, y))
        model.learn_one(x, y)
    return np.array(scores)


# -- batch references -----------------------------------------------------------------------------
def _psi(S, SB):
    return float(np.trace(np.linalg.solve(S, SB)))


def _batch_exact_dpsi(X, y, ridge):
    """dψ of the last row by definition: ψ(all rows) - ψ(all rows but the last), mean held fixed."""
    m = X.mean(axis=0)
    Xc = X - m
    d = X.shape[1]

    def scatters(rows, labels):
        S = rows.T @ rows + ridge * np.eye(d)
        SB = np.zeros((d, d))
        for c in set(labels):
            idx = [i for i, lab in enumerate(labels) if lab == c]
            nu = rows[idx].mean(axis=0)
            SB += len(idx) * np.outer(nu, nu)
        return S, SB

    return _psi(*scatters(Xc, list(y))) - _psi(*scatters(Xc[:-1], list(y[:-1])))


def _batch_bound(X, y, ridge):
    """Theorem 3 (linear kernel) for every row at once, vectorised over rows."""
    y = np.asarray(y)
    Xc = X - X.mean(axis=0)
    classes = sorted(set(y.tolist()))
    nu = {c: Xc[y == c].mean(axis=0) for c in classes}
    N = {c: int((y == c).sum()) for c in classes}
    beta = sum(N[c] * nu[c] @ nu[c] for c in classes)
    mu_x = np.array([nu[c] for c in y])
    n_x = np.array([N[c] for c in y], dtype=float)
    kappa = np.einsum("ij,ij->i", Xc, Xc)
    a = np.einsum("ij,ij->i", mu_x, mu_x)
    b = np.einsum("ij,ij->i", Xc, mu_x)
    delta = n_x * np.sqrt(a**2 - 4 * a * b + 2 * kappa * a + 2 * b**2)
    h = sum(1 / np.sqrt(i) for i in range(1, 5))
    return (
        beta * kappa / (ridge * (kappa - ridge))
        + h * (delta + kappa) / (ridge * (n_x - 1))
        + kappa * (delta + kappa) / (ridge * (kappa - ridge) * (n_x - 1))
    )


# -- the score against the batch computations -------------------------------------------------------
@pytest.mark.parametrize("ridge", [0.1, 1.0, 10.0])
def test_exact_score_is_the_change_of_discriminant_information(ridge):
    rng = np.random.default_rng(1)
    n, d = 120, 5
    X = rng.normal(size=(n, d)) + np.repeat(rng.normal(size=(3, d)) * 2, n // 3, axis=0)
    X[: n // 2, 4] = 0.0  # feature f4 only appears in the second half of the stream
    y = np.repeat(["a", "b", "c"], n // 3)
    order = rng.permutation(n)
    X, y = X[order], y[order]
    model = ORDIFilter(ridge=ridge, classifier=naive_bayes.GaussianNB())  # 3 classes
    for t in range(n):
        x = {f"f{j}": float(X[t, j]) for j in range(d) if X[t, j] != 0.0}
        before = model.outlier_score_one(x, y[t])
        model.learn_one(x, y[t])
        if model.last_score_ == -math.inf:  # not scorable (the first of its class): never skipped, not suspect
            assert before == -math.inf and model.class_counts_[y[t]] == 1
        else:
            assert -before == model.last_score_  # the pure score is the one learn_one uses
        if t >= 10:
            cols = [int(str(f)[1:]) for f in model.features_]  # the model's feature order
            expected = _batch_exact_dpsi(X[: t + 1][:, cols], y[: t + 1], ridge)
            assert model.last_score_ == pytest.approx(expected, rel=1e-7, abs=1e-12), t


def test_ridge_inverse_stays_exact_over_many_updates():
    rows, labels, _, X = _gaussian_rows(n=2100, d=4, seed=3)
    model = ORDIFilter(grace_period=0)
    for x, y in zip(rows, labels):
        model.learn_one(x, y)
    Xc = X - X.mean(axis=0)
    np.testing.assert_allclose(model.mean_, X.mean(axis=0), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(model.scatter_, Xc.T @ Xc, rtol=1e-9)
    np.testing.assert_allclose(model.ridge_inverse_, np.linalg.inv(Xc.T @ Xc + np.eye(4)), rtol=1e-8, atol=1e-14)


@pytest.mark.parametrize("ridge", [0.5, 2.0])
def test_bound_score_matches_batch_theorem_3(ridge):
    rows, labels, _, X = _gaussian_rows(n=300, d=6, seed=2)
    model = ORDIFilter(score="bound", ridge=ridge)
    for t, (x, y) in enumerate(zip(rows, labels)):
        model.learn_one(x, y)
        if t >= 5:
            expected = _batch_bound(X[: t + 1], labels[: t + 1], ridge)[-1]
            if np.sum((X[t] - X[: t + 1].mean(axis=0)) ** 2) <= ridge:
                assert model.last_score_ == math.inf  # outside the theorem's assumption: kept
            else:
                assert model.last_score_ == pytest.approx(expected, rel=1e-9)
    # the function itself, on every row of the final batch
    Xc = X - X.mean(axis=0)
    y = np.asarray(labels)
    nus = {c: Xc[y == c].mean(axis=0) for c in (False, True)}
    counts = {c: int((y == c).sum()) for c in (False, True)}
    beta = sum(counts[c] * nus[c] @ nus[c] for c in counts)
    batch = _batch_bound(X, labels, ridge)
    for i in range(0, 300, 7):
        got = ordi_bound(Xc[i], nus[y[i]], counts[y[i]], beta, ridge)
        assert got == math.inf or got == pytest.approx(batch[i], rel=1e-9)
    assert H_4_HALF == pytest.approx(1 + 2**-0.5 + 3**-0.5 + 0.5)


# -- what the scores rank low -----------------------------------------------------------------------
def test_exact_score_ranks_flipped_rows_as_outliers():
    rows, labels, flipped, _ = _gaussian_rows(n=2000, flip=0.15, seed=0)
    scores = _streamed_scores(ORDIFilter(), rows, labels)
    ok = np.isfinite(scores)
    ok[:100] = False  # the statistics need a start
    assert roc_auc_score(flipped[ok], scores[ok]) > 0.9


def test_theorem_3_bound_does_not_detect_flipped_rows():
    # The documented caveat: the bound is built from norms, it cannot see on which side of its class
    # mean a sample lies, and it ranks flipped rows *higher* (more important) than clean ones.
    # Checked on the whole batch (the paper's use), where every row shares the same statistics.
    _, labels, flipped, X = _gaussian_rows(n=2000, d=10, sep=2.0, flip=0.15, seed=0)
    aucs = [roc_auc_score(flipped, -_batch_bound(X, labels, ridge)) for ridge in (0.1, 1.0, 10.0)]
    assert max(aucs) < 0.55 and min(aucs) < 0.4, aucs


# -- the filter ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("memory", [None, 300])
@pytest.mark.parametrize("fraction", [0.0, 0.1, 0.3])
def test_filter_skips_the_expected_fraction_mostly_flipped_rows(fraction, memory):
    rows, labels, flipped, _ = _gaussian_rows(n=3000, flip=0.15, seed=4)
    model = ORDIFilter(_Recorder(), removal_fraction=fraction, window_size=400, grace_period=200, memory=memory)
    for x, y in zip(rows, labels):
        model.learn_one(x, y)
    taught = set(model.classifier_.taught)
    skipped = np.array([id(x) not in taught for x in rows])
    assert skipped.sum() == model.n_skipped_
    assert not skipped[:200].any()  # grace period
    assert skipped[200:].mean() == pytest.approx(fraction, abs=0.02)
    assert model.outlier_rate_ == pytest.approx(fraction, abs=0.05)
    if fraction:
        # flipped rows are 15% of the stream; among the skipped rows they are far more common
        assert flipped[skipped].mean() > 2.5 * flipped.mean()
        assert model.classifier is not None and model.classifier.taught == []  # the argument was cloned


@pytest.mark.parametrize("score", ["exact", "bound"])
def test_tied_or_drifting_scores_do_not_skip_far_more_than_the_removal_fraction(score):
    # repeated rows and one-hot features give runs of equal (or steadily falling) scores: every
    # one of them was ranked "lowest" and skipped (63-99% of the stream at removal_fraction 0.2)
    rng = np.random.default_rng(0)
    streams = {
        "two repeated rows": lambda y: {"a": 1.0, "b": 2.0} if y else {"a": -1.0, "b": 0.5},
        "one-hot": lambda y: {f"c{rng.integers(3) + (3 if y else 0)}": 1.0},
    }
    for name, row in streams.items():
        model = ORDIFilter(linear_model.LogisticRegression(), removal_fraction=0.2, score=score, grace_period=10,
                           window_size=100)  # fmt: skip
        for _ in range(1000):
            y = bool(rng.random() < 0.5)
            model.learn_one(row(y), y)
        assert model.n_skipped_ <= 1.25 * 0.2 * 1000 + 2, (name, model.n_skipped_)
        assert model.outlier_rate_ <= 1.25 * 0.2 + 0.01, (name, model.outlier_rate_)


def test_a_feature_that_is_not_a_finite_number_is_rejected_by_name():
    model = ORDIFilter(linear_model.LogisticRegression())
    model.learn_one({"a": 1.0}, True)
    with pytest.raises(ValueError, match="feature 'v' is not a finite number: nan"):
        model.learn_one({"a": 1.0, "v": float("nan")}, False)
    with pytest.raises(ValueError, match="feature 'city': 'Paris' is not a number"):
        model.learn_one({"a": 1.0, "city": "Paris"}, False)
    assert np.all(np.isfinite(model.mean_))  # the statistics did not take the row in
    assert model.features_ == ["a"]  # nor its new keys


@pytest.mark.parametrize("memory", [None, 50])
def test_a_sample_the_wrapped_model_refuses_leaves_no_trace(memory):
    # a binary robustream learner refuses the label 2 (and a new key comes with it): before, the
    # statistics had taken the sample in, and 2 counted as a third class from then on
    rows, labels, _, _ = _gaussian_rows(n=400, d=4, seed=3)
    model = ORDIFilter(RGDSVMClassifier(rebuild_every=50, seed=0), grace_period=20, memory=memory)
    for x, y in zip(rows[:200], labels[:200]):
        model.learn_one(x, y)
    twin = copy.deepcopy(model)
    with pytest.raises(ValueError, match=r"label 2: ORDIFilter\(RGDSVMClassifier\) is a binary learner"):
        model.learn_one({**rows[200], "new": 1.0}, 2)
    assert model.n_seen_ == twin.n_seen_ and model.class_counts_ == twin.class_counts_
    assert model.features_ == twin.features_ and model._taught == twin._taught
    for x, y in zip(rows[200:], labels[200:]):  # from then on, the same model as one that never saw it
        assert model.outlier_score_one(x, y) == twin.outlier_score_one(x, y)
        assert model.predict_proba_one(x) == twin.predict_proba_one(x)
        model.learn_one(x, y)
        twin.learn_one(x, y)
    assert model.n_skipped_ == twin.n_skipped_ > 0
    assert np.array_equal(model.mean_, twin.mean_) and np.array_equal(model.ridge_inverse_, twin.ridge_inverse_)


def test_wrapped_logistic_regression_beats_the_bare_one_on_noisy_streams():
    gains = []
    for seed in range(3):
        rows, labels, _, _ = _gaussian_rows(n=6000, d=10, sep=1.0, flip=0.0, seed=seed)
        stream = list(noisy_stream(zip(rows, labels), flip=0.3, seed=seed))
        bare = prequential(preprocessing.StandardScaler() | linear_model.LogisticRegression(), stream).get()
        ordi = ORDIFilter(linear_model.LogisticRegression(), removal_fraction=0.2)
        filtered = prequential(preprocessing.StandardScaler() | ordi, stream).get()
        assert filtered > bare, (seed, filtered, bare)
        gains.append(filtered - bare)
    assert np.mean(gains) > 0.005


def test_prediction_delegates_and_scoring_is_pure():
    rows, labels, _, _ = _gaussian_rows(n=400, seed=5)
    model = ORDIFilter(removal_fraction=0.2)
    for x, y in zip(rows, labels):
        model.learn_one(x, y)
    x, y = rows[0], labels[0]
    before = (model.mean_.copy(), model.ridge_inverse_.copy(), dict(model.class_counts_), model.n_seen_)
    model.outlier_score_one({**x, "new": 3.0}, y)
    assert np.array_equal(before[0], model.mean_) and np.array_equal(before[1], model.ridge_inverse_)
    assert before[2:] == (model.class_counts_, model.n_seen_) and "new" not in model.features_
    assert model.predict_proba_one(x) == model.classifier_.predict_proba_one(x)
    assert model.predict_one(x) == model.classifier_.predict_one(x)


# -- parameters ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "params, name",
    [
        ({"classifier": "river:LogisticRegression"}, "classifier"),
        ({"removal_fraction": 1.0}, "removal_fraction"),
        ({"removal_fraction": -0.1}, "removal_fraction"),
        ({"ridge": 0.0}, "ridge"),
        ({"ridge": float("inf")}, "ridge"),
        ({"score": "rbf"}, "score"),
        ({"window_size": 0}, "window_size"),
        ({"window_size": 2.5}, "window_size"),
        ({"grace_period": -1}, "grace_period"),
        ({"memory": 1}, "memory"),
        ({"memory": 0}, "memory"),
        ({"memory": 50.0}, "memory"),
        ({"memory": True}, "memory"),
        ({"memory": "50"}, "memory"),
    ],
)
def test_invalid_parameters_are_rejected_by_name(params, name):
    with pytest.raises(ValueError, match=f"^{name} must be"):
        ORDIFilter(**params)


def test_constructor_stores_parameters_unchanged_and_registry_builds_it():
    clf = linear_model.LogisticRegression()
    model = ORDIFilter(clf, removal_fraction=0.1, ridge=2)
    assert model.classifier is clf and model.ridge == 2 and model.classifier_ is not clf
    built = make_learner("ordi", {})
    assert isinstance(built, ORDIFilter) and isinstance(built.classifier_, linear_model.LogisticRegression)
    assert make_learner("ordi", {"removal_fraction": 0.05}).removal_fraction == 0.05


# -- memory: the statistics of the last m samples -----------------------------------------------------
def _scratch_statistics(X, labels, ridge):
    """Mean, centred scatter, ridge inverse, class counts and sums of the rows X, computed directly."""
    mean = X.mean(axis=0)
    Xc = X - mean
    scatter = Xc.T @ Xc
    counts = {c: labels.count(c) for c in set(labels)}
    sums = {c: X[[lab == c for lab in labels]].sum(axis=0) for c in counts}
    return mean, scatter, np.linalg.inv(scatter + ridge * np.eye(X.shape[1])), counts, sums


@pytest.mark.parametrize("score", ["exact", "bound"])
def test_memory_statistics_are_those_of_the_last_m_samples(score):
    # one row at 1e3 times the data's scale enters at t = 300 and leaves at t = 500: downdating the
    # inverse by it divides by ~1e-5 and left relative errors of ~5e-6 (recomputed from the kept rows now)
    m, n, d, ridge = 200, 900, 5, 1.0
    rng = np.random.default_rng(7)
    X = rng.normal(size=(n, d)) + np.repeat(rng.normal(size=(3, d)) * 2, n // 3, axis=0)
    order = rng.permutation(n)
    X, y = X[order], [str(c) for c in np.repeat(["a", "b", "c"], n // 3)[order]]
    X[:250, 4] = 0.0  # feature f4 appears at row 250: the kept rows get padded
    X[300] *= 1e3  # kept from row 300 to row 499
    model = ORDIFilter(naive_bayes.GaussianNB(), ridge=ridge, score=score, grace_period=0, memory=m)
    for t in range(n):
        x = {f"f{j}": float(X[t, j]) for j in range(d) if X[t, j] != 0.0}
        before = model.outlier_score_one(x, y[t])
        model.learn_one(x, y[t])
        assert before == -math.inf or -before == model.last_score_, t  # the pure score is learn_one's
        if model.last_score_ > -math.inf:  # ranked as n·dψ (bound / n), n the samples in the statistics
            k = min(t + 1, m)
            assert model._scores[-1] == (model.last_score_ * k if score == "exact" else model.last_score_ / k)
        if t < 10:
            continue
        cols = [int(str(f)[1:]) for f in model.features_]
        lo = max(0, t + 1 - m)
        window = X[lo : t + 1][:, cols]
        mean, scatter, inverse, counts, sums = _scratch_statistics(window, y[lo : t + 1], ridge)
        assert len(model._kept) == min(t + 1, m)
        assert model.class_counts_ == counts, t
        assert set(model.class_sums_) == set(counts)
        for c in counts:
            np.testing.assert_allclose(model.class_sums_[c], sums[c], rtol=1e-9, atol=1e-9 * (1 + abs(window).max()))
        np.testing.assert_allclose(model.mean_, mean, rtol=1e-9, atol=1e-9)
        if score == "exact":
            np.testing.assert_allclose(model.scatter_, scatter, rtol=1e-9, atol=1e-9 * abs(scatter).max())
            np.testing.assert_allclose(model.ridge_inverse_, inverse, rtol=1e-9, atol=1e-9 * abs(inverse).max())
            if model.last_score_ > -math.inf:
                expected = _batch_exact_dpsi(window, y[lo : t + 1], ridge)
                assert model.last_score_ == pytest.approx(expected, rel=1e-7, abs=1e-12), t


@pytest.mark.parametrize("score", ["exact", "bound"])
def test_a_class_that_left_the_memory_leaves_the_statistics(score):
    rng = np.random.default_rng(0)
    model = ORDIFilter(naive_bayes.GaussianNB(), score=score, grace_period=0, memory=6)
    for label in ["a"] * 10 + ["b", "c"] * 8:
        model.learn_one({"u": float(rng.normal()), "v": float(rng.normal())}, label)
        assert not math.isnan(model.last_score_)
    assert model.class_counts_ == {"b": 3, "c": 3} and set(model.class_sums_) == {"b", "c"}


def test_memory_refresh_recomputes_from_the_kept_rows():
    rows, labels, _, X = _gaussian_rows(n=2100, d=4, seed=3)
    model = ORDIFilter(grace_period=0, memory=300)
    for t, (x, y) in enumerate(zip(rows, labels)):
        model.learn_one(x, y)
        if t + 1 == 1024:  # refreshed: the same numbers as computed from the last 300 rows, to the bit
            kept = X[t + 1 - 300 : t + 1]
            Xc = kept - kept.mean(axis=0)
            assert np.array_equal(model.mean_, kept.mean(axis=0)) and np.array_equal(model.scatter_, Xc.T @ Xc)
            assert np.array_equal(model.ridge_inverse_, np.linalg.inv(Xc.T @ Xc + np.eye(4)))
    mean, scatter, inverse, counts, _ = _scratch_statistics(X[-300:], labels[-300:], 1.0)
    assert model.class_counts_ == counts and model.n_seen_ == 2100
    np.testing.assert_allclose(model.mean_, mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(model.scatter_, scatter, rtol=1e-9)
    np.testing.assert_allclose(model.ridge_inverse_, inverse, rtol=1e-9, atol=1e-14)


def _reference_stream():
    """1500 Gaussian rows (d = 6) and a feature 'late' that appears at row 700."""
    rows, labels, _, _ = _gaussian_rows(n=1500, d=6, sep=1.0, flip=0.15, seed=11)
    rows = [({**x, "late": 0.5} if i == 700 else {**x, "late": float(i % 7) / 3} if i > 700 else x)
            for i, x in enumerate(rows)]  # fmt: skip
    return rows, labels


def _scores_and_skips(model, rows, labels):
    scores, skipped = [], []
    for x, y in zip(rows, labels):
        before = model.n_skipped_
        model.learn_one(x, y)
        scores.append(model.last_score_)
        skipped.append(model.n_skipped_ > before)
    return np.array(scores), np.array(skipped)


# Recorded with ORDIFilter as it was before the `memory` parameter existed, on _reference_stream()
# with LogisticRegression, removal_fraction=0.2, window_size=200, grace_period=50: the number of
# skipped rows, the sum and the first 8 of their indices, and the scores of rows 99, 1023 and 1499
# (the same code gave the same bits; compared to 1e-12 here, the last bits depend on the BLAS build).
_BEFORE_MEMORY = {
    "exact": (273, 222539, [61, 73, 82, 93, 94, 99, 105, 106],
              [-0.03928845916104018, 0.0005312422350997128, -0.00021786073495344183]),
    "bound": (301, 230266, [58, 59, 61, 62, 64, 65, 66, 69],
              [112.39619047623589, 680.0139246621753, 983.6952799511547]),
}  # fmt: skip


@pytest.mark.parametrize("score", ["exact", "bound"])
def test_no_memory_is_the_cumulative_filter_unchanged(score):
    rows, labels = _reference_stream()
    params = {"removal_fraction": 0.2, "score": score, "window_size": 200, "grace_period": 50}
    scores, skipped = _scores_and_skips(ORDIFilter(linear_model.LogisticRegression(), **params), rows, labels)
    n_skipped, index_sum, first, some_scores = _BEFORE_MEMORY[score]
    idx = np.flatnonzero(skipped)
    assert (len(idx), int(idx.sum()), idx[:8].tolist()) == (n_skipped, index_sum, first)
    assert scores[[99, 1023, 1499]].tolist() == pytest.approx(some_scores, rel=1e-12)
    # a memory longer than the stream never removes a row: the same arithmetic up to the first
    # refresh (row 1024), which recomputes from the kept rows instead of the running scatter
    huge, huge_skipped = _scores_and_skips(
        ORDIFilter(linear_model.LogisticRegression(), **params, memory=10**9), rows, labels
    )
    assert np.array_equal(huge_skipped, skipped)
    assert huge[:1024].tobytes() == scores[:1024].tobytes()
    finite = np.isfinite(scores)
    np.testing.assert_allclose(huge[finite], scores[finite], rtol=1e-9, atol=1e-15)


def test_memory_state_survives_pickle_and_copy():
    rows, labels = _reference_stream()
    model = ORDIFilter(linear_model.LogisticRegression(), memory=100, grace_period=20)
    for x, y in zip(rows[:800], labels[:800]):
        model.learn_one(x, y)
    twins = [pickle.loads(pickle.dumps(model)), copy.deepcopy(model)]
    assert all(len(t._kept) == 100 for t in twins)
    reference = _scores_and_skips(model, rows[800:], labels[800:])
    for twin in twins:
        scores, skipped = _scores_and_skips(twin, rows[800:], labels[800:])
        assert scores.tobytes() == reference[0].tobytes() and np.array_equal(skipped, reference[1])


def _drifting_rows(n=4000, d=10, sep=1.5, flip=0.15, seed=0):
    """Two Gaussian classes along w; from row n/2 on along an orthogonal direction v (the old
    boundary is a coin toss on the new concept). Returns rows, noisy labels, flip mask."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    w /= np.linalg.norm(w)
    v = rng.normal(size=d)
    v -= (v @ w) * w
    v /= np.linalg.norm(v)
    y = rng.random(n) < 0.5
    direction = np.where(np.arange(n)[:, None] < n // 2, w, v)
    X = rng.normal(size=(n, d)) + np.where(y, sep, -sep)[:, None] * direction
    flipped = rng.random(n) < flip
    rows = [{f"f{j}": float(X[i, j]) for j in range(d)} for i in range(n)]
    return rows, [bool(b) for b in y ^ flipped], flipped


def test_after_a_concept_change_memory_skips_fewer_clean_rows_of_the_new_concept():
    # Cumulative statistics judge the new concept by the old one: its clean rows that the old
    # boundary calls wrong score low and are skipped. Measured over 5 seeds (removal_fraction 0.1):
    # clean rows of the new concept skipped 2.6-3.7% cumulative vs 0.5-1.0% with memory=300; flipped
    # rows among the skipped ones 60-71% vs 90-95%.
    clean_skips, precision = {None: [], 300: []}, {None: [], 300: []}
    for seed in range(5):
        rows, labels, flipped = _drifting_rows(seed=seed)
        new = np.arange(len(rows)) >= len(rows) // 2
        for memory in (None, 300):
            model = ORDIFilter(_Recorder(), removal_fraction=0.1, memory=memory)
            for x, y in zip(rows, labels):
                model.learn_one(x, y)
            taught = set(model.classifier_.taught)
            skipped = np.array([id(x) not in taught for x in rows])
            clean_skips[memory].append((skipped & ~flipped)[new].mean())
            precision[memory].append(flipped[skipped & new].mean())
        assert clean_skips[300][-1] < clean_skips[None][-1], seed
    assert np.mean(clean_skips[300]) < 0.5 * np.mean(clean_skips[None]), clean_skips
    assert np.mean(precision[300]) > np.mean(precision[None]) + 0.1, precision


@pytest.mark.parametrize("score", ["exact", "bound"])
def test_a_value_whose_square_overflows_is_refused_and_leaves_no_trace(score):
    # 1e160 was taken: the scatter became inf for good, and the filter skipped 45 of 1,000 rows, not 200
    rng = np.random.default_rng(0)
    rows = [({"a": float(rng.normal()) + (1.0 if y else -1.0), "b": float(rng.normal())}, bool(y))
            for y in rng.random(300) < 0.5]
    model, twin = (ORDIFilter(linear_model.LogisticRegression(), score=score) for _ in range(2))
    for i, (x, y) in enumerate(rows):
        if i == 150:
            with pytest.raises(ValueError, match=r"feature 'a' is 1e\+160, larger in absolute value than the 1e\+140 "
                                                 r"ORDIFilter's statistics can take"):
                model.learn_one({"a": 1e160, "b": 0.0}, True)
        model.learn_one(x, y)
        twin.learn_one(x, y)
    assert np.array_equal(model.mean_, twin.mean_) and model.n_skipped_ == twin.n_skipped_ > 0
    assert model.classifier_.weights == twin.classifier_.weights


@pytest.mark.parametrize("label", [2, -1, "yes", 0.5])
def test_a_label_a_binary_wrapped_model_cannot_read_is_refused_and_leaves_no_trace(label):
    # 2 and -1 were taken: the statistics got a third and fourth class while LogisticRegression read
    # both as positives; "yes" failed inside River's loss with a TypeError naming no label
    f = ORDIFilter(linear_model.LogisticRegression())
    f.learn_one({"a": 1.0}, True)
    with pytest.raises(ValueError, match=rf"label {label!r}: ORDIFilter\(LogisticRegression\) is a binary learner"):
        f.learn_one({"a": -1.0}, label)
    assert f.class_counts_ == {True: 1} and f.n_seen_ == 1
    f.learn_one({"a": -1.0}, 0)  # River's other spelling of False
    assert f.class_counts_ == {True: 1, False: 1}
    multi = ORDIFilter(naive_bayes.GaussianNB())  # a multi-class model takes any label
    for y in ("yes", 2, -1):
        multi.learn_one({"a": 1.0}, y)
    assert multi.class_counts_ == {"yes": 1, 2: 1, -1: 1}


@pytest.mark.parametrize("value", [math.nan, math.inf, "1.5", None])
def test_prediction_on_a_feature_that_is_not_a_finite_number_names_it(value):
    # NaN gave {False: nan, True: nan} without a word; learn_one already refused it
    f = ORDIFilter(linear_model.LogisticRegression())
    for i in range(10):
        f.learn_one({"a": float(i % 2), "b": 1.0}, bool(i % 2))
    for predict in (f.predict_one, f.predict_proba_one):
        with pytest.raises(ValueError, match="feature 'a'"):
            predict({"a": value, "b": 1.0})
    assert f.predict_proba_one({"a": 1.0, "b": 1.0})[True] > 0.5
