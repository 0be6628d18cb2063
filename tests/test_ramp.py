"""Tests for the box-constrained dual CD kernel and the CCCP ramp-loss SVM."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning, DataConversionWarning

from robustream import ramp
from robustream.kernels.dual_cd import (
    dual_cd_csr,
    dual_cd_csr_reference,
    dual_cd_dense,
    dual_cd_dense_reference,
)
from robustream.ramp import RampSolution, RampSVC, ramp_objective, ramp_svm_cccp


# ------------------------------------------------------------------------ data


def _linear_data(seed, n=120, d=8, noise=0.5, flip=0.1):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    X = rng.normal(size=(n, d)) + 0.3
    y = np.where(X @ w + 0.7 + noise * rng.normal(size=n) > 0, 1.0, -1.0)
    y[rng.random(n) < flip] *= -1
    return X, y


def _sparse_data(seed, n=120, d=40, density=0.15):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=seed,
                  data_rvs=lambda k: rng.normal(size=k) + 1.0)
    w = rng.normal(size=d)
    y = np.where(X @ w + 0.2 * rng.normal(size=n) > 0.1, 1.0, -1.0)
    y[rng.random(n) < 0.1] *= -1
    return X, y


def _gaussians(rng, n, dist=1.5):
    """Two unit-variance 2-D Gaussians whose means are +-dist from the boundary x1 + x2 = 0."""
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    X = rng.normal(size=(n, 2)) + y[:, None] * (dist / np.sqrt(2.0))
    return X, y


def _flip_farthest(X, y, frac=0.2):
    """Adversarial noise: relabel the `frac` of class -1 lying farthest on its own side."""
    neg = np.flatnonzero(y == -1)
    k = int(round(frac * neg.size))
    far = neg[np.argsort(X[neg].sum(axis=1))[:k]]
    y_noisy = y.copy()
    y_noisy[far] = 1.0
    return y_noisy, far


# ------------------------------------------------- kernel == NumPy reference


def _box_problem(n, rng, C, kind):
    if kind == "hinge":
        return np.zeros(n), np.full(n, C), np.zeros(n)
    beta = np.where(rng.random(n) < 0.3, C, 0.0)  # CCCP-style shifted box
    lower, upper = -beta, C - beta
    alpha0 = rng.uniform(-C, C, size=n)  # warm start, partly outside the box
    return lower, upper, alpha0


@pytest.mark.parametrize("layout", ["dense", "csr"])
@pytest.mark.parametrize("shrinking", [True, False])
@pytest.mark.parametrize("bias_scale", [0.0, 1.0, 2.5])
@pytest.mark.parametrize("kind", ["hinge", "shifted"])
@pytest.mark.parametrize("max_epochs", [5, 500])
def test_kernel_matches_numpy_reference(layout, shrinking, bias_scale, kind, max_epochs):
    rng = np.random.default_rng(7)
    C = 0.8
    if layout == "dense":
        X, y = _linear_data(3, n=70, d=6)
        n = X.shape[0]
        lower, upper, alpha0 = _box_problem(n, rng, C, kind)
        args = (y, lower, upper, alpha0, bias_scale, 1e-7, max_epochs, 11, shrinking)
        got = dual_cd_dense(X, *args)
        ref = dual_cd_dense_reference(X, *args)
    else:
        X, y = _sparse_data(3, n=70, d=25)
        n = X.shape[0]
        lower, upper, alpha0 = _box_problem(n, rng, C, kind)
        args = (y, lower, upper, alpha0, bias_scale, 1e-7, max_epochs, 11, shrinking)
        csr = (X.data, X.indices.astype(np.int64), X.indptr.astype(np.int64), X.shape[1])
        got = dual_cd_csr(*csr, *args)
        ref = dual_cd_csr_reference(*csr, *args)
    assert got[3] == ref[3]
    if max_epochs == 5:
        assert got[3] == 5  # stopped by the cap: compares a mid-run state
    np.testing.assert_allclose(got[0], ref[0], rtol=0, atol=1e-10)
    np.testing.assert_allclose(got[1], ref[1], rtol=0, atol=1e-10)
    assert abs(got[2] - ref[2]) <= 1e-10
    assert np.all(got[0] >= lower) and np.all(got[0] <= upper)
    if bias_scale == 0.0:
        assert got[2] == 0.0


def test_kernel_is_deterministic_and_seed_dependent():
    X, y = _linear_data(0, n=80)
    n = X.shape[0]
    args = (np.zeros(n), np.ones(n), np.zeros(n), 1.0, 1e-9, 7, 5, True)
    a = dual_cd_dense(X, y, *args)
    b = dual_cd_dense(X, y, *args)
    np.testing.assert_array_equal(a[0], b[0])
    other = dual_cd_dense(X, y, *args[:-2], 6, True)
    assert not np.array_equal(a[0], other[0])  # a different seed gives a different order


def test_kernel_primal_dual_consistency_and_kkt():
    """w = sum a_i y_i x_i, b = B^2 sum a_i y_i, and projected gradients ~ 0 at the optimum."""
    X, y = _linear_data(1, n=100)
    n = X.shape[0]
    C, B = 2.0, 1.7
    rng = np.random.default_rng(0)
    beta = np.where(rng.random(n) < 0.2, C, 0.0)
    lower, upper = -beta, C - beta
    alpha, w, b, ep = dual_cd_dense(X, y, lower, upper, np.zeros(n), B, 1e-9, 100000, 0, True)
    assert ep < 100000
    np.testing.assert_allclose(w, X.T @ (alpha * y), atol=1e-9)
    assert b == pytest.approx(B * B * np.sum(alpha * y), abs=1e-9)
    G = y * (X @ w + b) - 1.0
    PG = np.where(alpha <= lower, np.minimum(G, 0), np.where(alpha >= upper, np.maximum(G, 0), G))
    assert np.max(np.abs(PG)) < 1e-8


# ------------------------------------------ hinge case == sklearn LinearSVC


def _sk_hinge(X, y, C, intercept_scaling):
    svm = pytest.importorskip("sklearn.svm")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = svm.LinearSVC(loss="hinge", dual=True, C=C, intercept_scaling=intercept_scaling,
                          tol=1e-8, max_iter=100000).fit(X, y)
    return m.coef_.ravel(), float(m.intercept_[0])


@pytest.mark.parametrize("layout", ["dense", "csr"])
@pytest.mark.parametrize("C", [0.05, 1.0])
@pytest.mark.parametrize("bias_scale", [1.0, 3.0])
def test_hinge_solution_matches_linearsvc_objective(layout, C, bias_scale):
    """Box [0, C] with constant feature `bias_scale` is LinearSVC(intercept_scaling=bias_scale).

    liblinear appends the feature `intercept_scaling` with raw weight w_b and reports
    intercept_ = intercept_scaling * w_b, so both minimise
    1/2 (||w||^2 + (b / bias_scale)^2) + C sum_i max(0, 1 - y_i (w.x_i + b)).
    """
    X, y = _linear_data(5, n=150) if layout == "dense" else _sparse_data(5, n=150)
    sol = ramp_svm_cccp(X, y, C=C, max_cccp_iter=0, tol=1e-8, bias_scale=bias_scale,
                        max_epochs=200000)
    assert sol.n_cccp_iter == 0 and sol.n_epochs[0] < 200000
    coef, intercept = _sk_hinge(X, y, C, bias_scale)
    ours = ramp_objective(X, y, sol.coef, sol.intercept, C=C, s=-np.inf, bias_scale=bias_scale)
    theirs = ramp_objective(X, y, coef, intercept, C=C, s=-np.inf, bias_scale=bias_scale)
    assert ours == pytest.approx(theirs, rel=1e-3)
    # the optimum is unique: the solutions themselves agree too
    np.testing.assert_allclose(sol.coef, coef, atol=2e-3 * max(1.0, np.abs(coef).max()))
    assert sol.intercept == pytest.approx(intercept, abs=2e-3 * max(1.0, abs(intercept)))


def test_objective_correspondence_detects_wrong_bias_scale():
    """The comparison above can fail: the intercept penalty differs between scalings."""
    X, y = _linear_data(5, n=150)
    sol = ramp_svm_cccp(X, y, C=1.0, max_cccp_iter=0, tol=1e-8, bias_scale=1.0,
                        max_epochs=200000)
    coef, intercept = _sk_hinge(X, y, 1.0, 0.05)  # an intercept that is heavily penalised
    assert abs(sol.intercept - intercept) > 1e-2


# --------------------------------------------------------------------- CCCP


def _noisy_gaussian_problem(seed, n=300):
    rng = np.random.default_rng(seed)
    X, y = _gaussians(rng, n)
    y_noisy, far = _flip_farthest(X, y)
    return X, y_noisy, far


@pytest.mark.parametrize("s", [-1.0, 0.0, -0.5])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cccp_objective_non_increasing(s, seed):
    X, y, _ = _noisy_gaussian_problem(seed)
    C = 1.0
    sol = ramp_svm_cccp(X, y, C=C, s=s, tol=1e-9, max_epochs=100000, seed=seed)
    assert isinstance(sol, RampSolution)
    h = sol.objective_history
    assert h.shape == (sol.n_cccp_iter + 1,)
    assert sol.n_cccp_iter >= 1  # the flipped labels make CCCP move away from the hinge start
    assert np.all(np.diff(h) <= 1e-9 * abs(h[0]))
    assert h[-1] < h[0]  # and it does improve on the hinge solution
    assert h[-1] == pytest.approx(
        ramp_objective(X, y, sol.coef, sol.intercept, C=C, s=s), rel=1e-12)
    # the hinge start is the starting point of the history
    start = ramp_svm_cccp(X, y, C=C, s=s, tol=1e-9, max_epochs=100000, seed=seed,
                          max_cccp_iter=0)
    assert start.objective_history[0] == pytest.approx(h[0], rel=1e-9)


def test_cccp_fixed_point_and_outlier_mask():
    X, y, far = _noisy_gaussian_problem(0)
    C, s = 1.0, -1.0
    sol = ramp_svm_cccp(X, y, C=C, s=s, tol=1e-9, max_epochs=100000)
    assert sol.converged
    z = y * (X @ sol.coef + sol.intercept)
    np.testing.assert_array_equal(sol.outlier_mask, z < s)
    # the dual variables live in the box of the final outlier set
    beta = np.where(sol.outlier_mask, C, 0.0)
    assert np.all(sol.alpha >= -beta - 1e-12) and np.all(sol.alpha <= C - beta + 1e-12)
    # (nearly) every flipped label is detected as an outlier; the other outliers are
    # natural overlap points of the two Gaussians
    assert np.mean(sol.outlier_mask[far]) > 0.9


def test_cccp_dense_and_csr_agree():
    X, y, _ = _noisy_gaussian_problem(3)
    a = ramp_svm_cccp(X, y, C=1.0, s=0.0, tol=1e-8, max_epochs=100000, seed=4)
    b = ramp_svm_cccp(sp.csr_matrix(X), y, C=1.0, s=0.0, tol=1e-8, max_epochs=100000, seed=4)
    np.testing.assert_allclose(a.coef, b.coef, atol=1e-8)
    assert a.intercept == pytest.approx(b.intercept, abs=1e-8)
    np.testing.assert_array_equal(a.outlier_mask, b.outlier_mask)
    assert a.n_cccp_iter == b.n_cccp_iter


def test_cccp_init_from_given_solution_and_iteration_cap():
    X, y, _ = _noisy_gaussian_problem(1)
    full = ramp_svm_cccp(X, y, C=1.0, s=-1.0, tol=1e-9, max_epochs=100000)
    again = ramp_svm_cccp(X, y, C=1.0, s=-1.0, tol=1e-9, max_epochs=100000,
                          init=(full.coef, full.intercept))
    assert again.converged and again.n_cccp_iter == 1
    np.testing.assert_allclose(again.coef, full.coef, atol=1e-6)
    capped = ramp_svm_cccp(X, y, C=1.0, s=0.0, max_cccp_iter=1)
    assert capped.n_cccp_iter <= 1
    with pytest.raises(ValueError, match="init"):
        ramp_svm_cccp(X, y, C=1.0, init="zeros")
    with pytest.raises(ValueError, match="-1 and \\+1"):
        ramp_svm_cccp(X, (y > 0).astype(float), C=1.0)
    with pytest.raises(ValueError, match="s must be < 1"):
        ramp_svm_cccp(X, y, C=1.0, s=1.0)


def test_ramp_beats_hinge_under_adversarial_flips():
    """20% of class -1 (its points farthest from the boundary) relabelled +1.

    Averaged over 5 seeds, the clean test error of RampSVC must be below that of the
    plain hinge SVM at the same C.  (Observed: hinge ~0.074, ramp ~0.068, Bayes 0.067;
    every 5-seed block out of 30 seeds tried has a positive mean gap of >= 0.0028.)
    """
    svm = pytest.importorskip("sklearn.svm")
    C = 1.0
    hinge_err, ramp_err = [], []
    for seed in range(5):
        rng = np.random.default_rng(seed)
        X, y = _gaussians(rng, 400)
        X_test, y_test = _gaussians(rng, 20000)
        y_noisy, _ = _flip_farthest(X, y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            hinge = svm.LinearSVC(loss="hinge", C=C, tol=1e-6, max_iter=100000, random_state=seed).fit(X, y_noisy)
        robust = RampSVC(C=C, random_state=seed).fit(X, y_noisy)
        assert robust.converged_
        hinge_err.append(np.mean(hinge.predict(X_test) != y_test))
        ramp_err.append(1.0 - robust.score(X_test, y_test))
    hinge_err, ramp_err = np.mean(hinge_err), np.mean(ramp_err)
    assert ramp_err < hinge_err - 0.002, (ramp_err, hinge_err)
    assert ramp_err < 0.0668 + 0.005  # close to the Bayes error Phi(-1.5)


# -------------------------------------------------------- estimator protocol


def test_params_stored_unchanged_and_get_set_params():
    gen = np.random.default_rng(0)
    est = RampSVC(C=3, s=-0.25, max_cccp_iter=7, tol=1e-3, max_epochs=50, random_state=gen)
    params = est.get_params()
    assert params == {"C": 3, "s": -0.25, "max_cccp_iter": 7, "tol": 1e-3, "max_epochs": 50, "random_state": gen}
    assert type(params["C"]) is int and params["random_state"] is gen
    assert RampSVC().get_params() == {"C": 1.0, "s": -1.0, "max_cccp_iter": 30, "tol": 1e-4, "max_epochs": 1000,
                                      "random_state": None}
    # nothing is validated or converted at construction time
    bad = RampSVC(C=-1.0)
    assert bad.C == -1.0
    with pytest.raises(ValueError, match="C must be"):
        bad.fit(*_linear_data(0))
    assert est.set_params(C=0.5, s=0.0) is est
    assert est.C == 0.5 and est.s == 0.0
    with pytest.raises(ValueError, match="Invalid parameter 'gamma'"):
        est.set_params(gamma=1.0)
    assert "C=0.5" in repr(est)


def test_sklearn_clone_and_cross_val_compatible():
    base = pytest.importorskip("sklearn.base")
    model_selection = pytest.importorskip("sklearn.model_selection")
    est = RampSVC(C=0.3, s=0.0, random_state=1)
    cl = base.clone(est)
    assert cl is not est and cl.get_params() == est.get_params()
    X, y = _linear_data(2, n=150)
    scores = model_selection.cross_val_score(RampSVC(random_state=0), X, y, cv=3)
    assert scores.shape == (3,) and np.all(scores > 0.6)


def test_fit_returns_self_and_learned_attributes():
    X, y = _linear_data(4, n=150)
    labels = np.where(y > 0, "spam", "ham")
    est = RampSVC(random_state=0)
    assert est.fit(X, labels) is est
    assert est.classes_.tolist() == ["ham", "spam"]
    assert est.coef_.shape == (1, X.shape[1]) and est.intercept_.shape == (1,)
    assert est.outlier_mask_.shape == (X.shape[0],) and est.outlier_mask_.dtype == bool
    assert isinstance(est.n_iter_, int) and est.n_features_in_ == X.shape[1]
    dec = est.decision_function(X)
    assert dec.shape == (X.shape[0],)
    pred = est.predict(X)
    np.testing.assert_array_equal(pred, np.where(dec > 0, "spam", "ham"))  # classes_[1] -> +1
    assert est.score(X, labels) == pytest.approx(np.mean(pred == labels))
    # same fit through the functional API with the mapped labels
    sol = ramp_svm_cccp(X, y, C=1.0, seed=0)
    np.testing.assert_allclose(est.coef_[0], sol.coef, atol=1e-12)
    # sparse input gives the same model
    est_sp = RampSVC(random_state=0).fit(sp.csr_matrix(X), labels)
    np.testing.assert_allclose(est_sp.coef_, est.coef_, atol=1e-6)
    np.testing.assert_array_equal(est_sp.predict(sp.csr_matrix(X)), pred)


def test_input_errors_name_the_problem():
    X, y = _linear_data(0, n=50)
    est = RampSVC()
    with pytest.raises(ValueError, match="not fitted"):
        est.predict(X)
    X_nan = X.copy()
    X_nan[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.fit(X_nan, y)
    X_inf = X.copy()
    X_inf[0, 0] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        est.fit(X_inf, y)
    with pytest.raises(ValueError, match="NaN"):
        est.fit(sp.csr_matrix(X_nan), y)
    y_nan = y.copy()
    y_nan[0] = np.nan
    with pytest.raises(ValueError, match="y contains NaN"):
        est.fit(X, y_nan)
    with pytest.raises(ValueError, match="one class"):
        est.fit(X, np.ones(X.shape[0]))
    with pytest.raises(ValueError, match="binary only"):
        est.fit(X, np.arange(X.shape[0]) % 3)
    with pytest.raises(ValueError, match="2-D"):
        est.fit(X[:, 0], y)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        est.fit(X, y[:-1])
    with pytest.raises(ValueError, match="1-D"):
        est.fit(X, np.c_[y, y])
    with pytest.warns(DataConversionWarning, match="column-vector y"):  # flattened, as scikit-learn does
        from_column = RampSVC(random_state=0).fit(X, y[:, None]).coef_
    np.testing.assert_array_equal(from_column, RampSVC(random_state=0).fit(X, y).coef_)
    est.fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :-1])
    with pytest.raises(ValueError, match="NaN"):
        est.predict(X_nan)


def test_not_fitted_error_types():
    est = RampSVC()
    with pytest.raises(ramp.NotFittedError):
        est.decision_function(np.zeros((2, 3)))
    exceptions = pytest.importorskip("sklearn.exceptions")
    with pytest.raises(exceptions.NotFittedError):
        est.predict(np.zeros((2, 3)))


def test_sklearn_check_estimator():
    """scikit-learn's own estimator checks, every one expected to pass."""
    estimator_checks = pytest.importorskip("sklearn.utils.estimator_checks")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = estimator_checks.check_estimator(RampSVC(random_state=0), on_fail=None)
    failed = [(r["check_name"], str(r["exception"])) for r in results if r["status"] == "failed"]
    assert not failed
    skipped = {r["check_name"] for r in results if r["status"] == "skipped"}
    assert skipped <= {"check_array_api_input"}  # needs SCIPY_ARRAY_API=1 set before scipy is imported


def test_a_dual_cd_stopped_by_max_epochs_warns():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-1, 1, (60, 3)), rng.normal(1, 1, (60, 3))])
    X[:, 0] *= 1e3  # one feature on a far larger scale: coordinate descent crawls
    y = np.repeat([0, 1], 60)
    with pytest.warns(ConvergenceWarning, match=r"RampSVC: \d+ of \d+ dual coordinate descent solves stopped at "
                                                r"max_epochs=5 "):
        clf = RampSVC(C=10.0, max_epochs=5, random_state=0).fit(X, y)
    assert max(clf.n_epochs_) == 5
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        fitted = RampSVC(random_state=0).fit(X / X.std(axis=0), y)
    assert fitted.n_epochs_ and max(fitted.n_epochs_) < 1000
    with warnings.catch_warnings():  # converged on its very last allowed epoch: no warning either
        warnings.simplefilter("error", ConvergenceWarning)
        last = RampSVC(random_state=0, max_epochs=max(fitted.n_epochs_)).fit(X / X.std(axis=0), y)
    np.testing.assert_array_equal(last.coef_, fitted.coef_)
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="max_epochs must be a positive integer"):
            RampSVC(max_epochs=bad).fit(X, y)


def test_cccp_returns_its_iterate_of_lowest_objective_when_an_inexact_step_raised_it():
    # sub-problems stopped at max_epochs raised J (1039.2 after step 7, 1070.5 after step 8) and the
    # last iterate (1046.5) was returned; the stream learner calls the solver with these defaults
    rng = np.random.default_rng(110)
    w = rng.normal(size=8)
    X = rng.normal(size=(800, 8))
    y = np.where(X @ w + 0.5 * rng.normal(size=800) > 0, 1.0, -1.0)
    y[rng.random(800) < 0.2] *= -1
    sol = ramp_svm_cccp(X, y, C=10.0, s=0.5, seed=10)
    assert sol.unconverged and np.any(np.diff(sol.objective_history) > 1.0)  # the case: J rose
    returned = ramp_objective(X, y, sol.coef, sol.intercept, C=10.0, s=0.5)
    assert returned == sol.objective_history.min() < sol.objective_history[-1]
    np.testing.assert_array_equal(sol.outlier_mask, y * (X @ sol.coef + sol.intercept) < 0.5)


@pytest.mark.parametrize("params, message", [
    ({"C": "1"}, "C must be a positive finite number; got '1'"),  # was a ufunc TypeError
    ({"C": 1.0, "s": "0"}, "s must be < 1"),
    ({"C": 1.0, "shrinking": "no"}, "shrinking must be True or False; got 'no'"),  # bool("no") is True
    ({"C": 1.0, "init": None}, "init must be 'hinge' or a \\(coef, intercept\\) pair"),  # was an unpacking TypeError
    ({"C": 1.0, "max_epochs": 10**30}, "max_epochs must be a positive integer at most 2\\*\\*62"),  # overflowed in numba
    ({"C": 1.0, "max_cccp_iter": 2.5}, "max_cccp_iter must be a non-negative integer"),  # int() took it
])  # fmt: skip
def test_ramp_svm_cccp_names_a_bad_setting(params, message):
    X = np.random.default_rng(0).normal(size=(40, 3))
    with pytest.raises(ValueError, match=message):
        ramp_svm_cccp(X, np.where(X[:, 0] > 0, 1.0, -1.0), **params)


def test_rampsvc_names_mixed_labels_a_short_sample_weight_and_a_cap_beyond_int64():
    X = np.random.default_rng(0).normal(size=(40, 3))
    y = np.where(X[:, 0] > 0, 1, 0)
    with pytest.raises(ValueError, match="y mixes labels of types int, str"):  # np.unique's TypeError
        RampSVC().fit(X, np.array([1, "a"] * 20, dtype=object))
    with pytest.raises(ValueError, match="max_epochs must be a positive integer at most"):
        RampSVC(max_epochs=10**30).fit(X, y)
    model = RampSVC().fit(X, y)
    with pytest.raises(ValueError, match=r"sample_weight must have shape \(40,\); got \(2,\)"):  # NumPy's error
        model.score(X, y, sample_weight=[1, 2])
    assert model.score(X, y, sample_weight=np.ones(40)) == model.score(X, y)
