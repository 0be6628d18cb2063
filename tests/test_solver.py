"""The solver against exact references: hard margins from an independent QP, an exhaustive
outlier oracle on tiny instances, and the JL map-back."""

import itertools
import re

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog, minimize

from robustream import RGDSVC
from robustream.kernels.gilbert import gilbert, mdm_reference
from robustream.sketch import JLSketch
from robustream.solver import _feasible_start, gram_matrix, nearest_point, per_class_outlier_fractions, solve


def exact_hard_margin(X, y) -> float:
    """Width of the maximum-margin slab by an independent solver: an LP decides separability
    (0 if not separable), then SLSQP solves min ||w||^2 s.t. y_i (w.x_i + b) >= 1 from the LP point."""
    n, d = X.shape
    A = y[:, None] * np.c_[X, np.ones(n)]
    lp = linprog(np.zeros(d + 1), A_ub=-A, b_ub=-np.ones(n), bounds=[(None, None)] * (d + 1), method="highs")
    if lp.status != 0:
        return 0.0
    qp = minimize(
        lambda v: 0.5 * v[:d] @ v[:d], lp.x, jac=lambda v: np.r_[v[:d], 0.0], method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda v: A @ v - 1.0, "jac": lambda v: A}],
        options={"ftol": 1e-14, "maxiter": 1000},
    )  # fmt: skip
    return 2.0 / np.linalg.norm(qp.x[:d])


def slab_width(X, y, w) -> float:
    proj = X @ w
    return (proj[y > 0].min() - proj[y < 0].max()) / np.linalg.norm(w)


def separable_instance(seed, n=80, d=10):
    rng = np.random.default_rng(seed)
    direction = rng.normal(size=d)
    direction /= np.linalg.norm(direction)
    X = rng.normal(size=(n, d)) * rng.uniform(0.5, 2.0, d)
    score = X @ direction
    y = np.where(score > np.median(score), 1.0, -1.0)
    X += np.outer(y * rng.uniform(0.3, 1.0), direction)  # open a margin
    return X, y


def _check_convex(coef, sign, cap=None):
    assert np.all(coef >= 0)
    for s in (1.0, -1.0):
        assert coef[sign == s].sum() == pytest.approx(1.0, abs=1e-12)
    if cap is not None:
        assert np.all(coef <= cap + 1e-12)


@pytest.mark.parametrize("path", ["full_gram", "decomposition"])
def test_mdm_reaches_exact_hard_margin_on_20_instances(path):
    eps = 1e-3
    kw = {} if path == "full_gram" else {"full_gram_rows": 10, "working_set": 16}
    for seed in range(20):
        X, y = separable_instance(seed)
        exact = exact_hard_margin(X, y)
        assert exact > 0
        coef, _, converged = nearest_point(X, y, np.ones(y.size), tol=eps, **kw)
        assert converged
        _check_convex(coef, y)
        w = X.T @ (y * coef)
        # coefficients reproduce w exactly (the map-back relies on it)
        np.testing.assert_allclose(sum(y[i] * coef[i] * X[i] for i in range(y.size)), w, atol=1e-9)
        assert slab_width(X, y, w) >= (1 - eps) * exact


def test_plain_gilbert_also_certifies_but_is_slower():
    eps = 1e-2
    steps_gilbert, steps_mdm = [], []
    for seed in range(20):
        X, y = separable_instance(seed)
        exact = exact_hard_margin(X, y)
        start = np.where(y > 0, 1.0 / (y > 0).sum(), 1.0 / (y < 0).sum())
        coef, it, ok = gilbert(X, y, start, eps, 200_000)
        assert ok
        _check_convex(coef, y)
        assert slab_width(X, y, X.T @ (y * coef)) >= (1 - eps) * exact
        steps_gilbert.append(it)
        steps_mdm.append(nearest_point(X, y, np.ones(y.size), tol=eps, full_gram_rows=0, working_set=4)[1])
    assert np.median(steps_gilbert) > np.median(steps_mdm)


def test_soft_polish_matches_reference_on_reduced_hulls():
    rng = np.random.default_rng(3)
    X = np.r_[rng.normal(1.0, 1, (60, 4)), rng.normal(-1.0, 1, (50, 4))]
    y = np.r_[np.ones(60), -np.ones(50)]
    cap = np.where(y > 0, 1 / (0.4 * 60), 1 / (0.4 * 50))
    for kw in ({}, {"full_gram_rows": 10, "working_set": 24}):
        coef, _, ok = nearest_point(X, y, cap, tol=1e-6, **kw)
        assert ok
        _check_convex(coef, y, cap)
        start = np.where(y > 0, 1 / 60, 1 / 50)
        ref, _, _ = mdm_reference(X, y, start, cap, 1e-9, 200_000)
        assert np.linalg.norm(X.T @ (y * coef)) == pytest.approx(np.linalg.norm(X.T @ (y * ref)), rel=1e-3)


def test_per_class_fractions_follow_the_flip_model():
    # w8a-like imbalance: 3% true positives, 15% uniform flips
    n_pos_true, n_neg_true, r = 300, 9700, 0.15
    n_pos = round((1 - r) * n_pos_true + r * n_neg_true)
    g_pos, g_neg = per_class_outlier_fractions(r, n_pos, 10000 - n_pos)
    assert g_pos == pytest.approx(r * n_neg_true / n_pos, rel=0.01)
    assert g_neg == pytest.approx(r * n_pos_true / (10000 - n_pos), rel=0.05)
    assert per_class_outlier_fractions(0.0, 10, 10) == (0.0, 0.0)


def _oracle_instance(rng):
    d = int(rng.choice([2, 3, 5]))
    n_pos, n_neg = int(rng.integers(5, 8)), int(rng.integers(5, 8))
    direction = rng.normal(size=d)
    direction /= np.linalg.norm(direction)
    X = rng.normal(size=(n_pos + n_neg, d))
    y = np.r_[np.ones(n_pos), -np.ones(n_neg)]
    X -= np.outer(X @ direction, direction)
    X += np.outer(y * rng.uniform(0.5, 2.0, n_pos + n_neg), direction)
    n_out = int(rng.integers(1, 4))
    flipped = rng.choice(n_pos + n_neg, n_out, replace=False)
    y_obs = y.copy()
    y_obs[flipped] *= -1
    return X, y_obs, flipped


def _optimal_width(X, y, k_pos, k_neg):
    """Enumerate every way of discarding k_pos positive and k_neg negative rows; solve each."""
    pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y < 0)
    best = 0.0
    for drop_p in itertools.combinations(pos, k_pos):
        for drop_n in itertools.combinations(neg, k_neg):
            keep = np.setdiff1d(np.arange(y.size), drop_p + drop_n)
            if np.unique(y[keep]).size < 2:
                continue
            best = max(best, exact_hard_margin(X[keep], y[keep]))
    return best


@pytest.mark.parametrize("polish", ["hard", "soft"])
@pytest.mark.parametrize("sketched", [False, True])
@pytest.mark.parametrize("rows", ["dense", "sparse"])
def test_the_convex_coefficients_of_a_solution_reproduce_its_w(polish, sketched, rows):
    X, y = separable_instance(4, n=80, d=30)
    y[:6] *= -1
    sketch = JLSketch(8, "gaussian", seed=1) if sketched else None
    sol = solve(sp.csr_matrix(X) if rows == "sparse" else X, y, outlier_fraction=(0.1, 0.1), polish=polish,
                sketch=sketch, polish_space="sketch" if sketched else "full", seed=0)  # fmt: skip
    _check_convex(sol.convex_coef, y)
    assert not np.any(sol.convex_coef[sol.outlier_mask])  # discarded rows carry nothing
    np.testing.assert_allclose(X.T @ (y * sol.convex_coef), sol.coef, rtol=0, atol=1e-9)


@pytest.mark.slow
def test_exhaustive_oracle_on_tiny_instances():
    """n <= 14, d in {2, 3, 5}, 1-3 planted outliers; >= 0.9 of the optimal width on >= 95% (the
    issue's bar) for solve() and for RGDSVC (measured 200 and 200), and what the search adds: these
    instances are easy enough that trimming along the root alone reaches the bar on 194, so the test
    also asks for >= 0.99 of the optimum on >= 194 (measured 198; a few spare for another CPU's rounding) and for the tree to widen its root
    on most instances (measured 186)."""
    rng = np.random.default_rng(2024)
    delta = 0.5
    successes = estimator_successes = near_optimal = widened = 0
    for trial in range(200):
        X, y, flipped = _oracle_instance(rng)
        n_pos, n_neg = int((y > 0).sum()), int((y < 0).sum())
        k_pos, k_neg = int((y[flipped] > 0).sum()), int((y[flipped] < 0).sum())
        optimum = _optimal_width(X, y, k_pos, k_neg)
        assert optimum > 0  # discarding the planted rows leaves a separable set
        fit = dict(outlier_fraction=(k_pos / n_pos, k_neg / n_neg), polish="hard", delta=delta, tol=1e-6, seed=trial)
        sol = solve(X, y, **fit)
        root = solve(X, y, tree_height=0, **fit)  # no search: trimmed along the root
        # the estimator users call, on the same instance (its own seed; delta stays the default 0.5)
        est = RGDSVC(outlier_fraction=fit["outlier_fraction"], polish="hard", tol=1e-6, random_state=trial).fit(X, y)
        allowed = (1 + delta) * (k_pos + k_neg)
        if sol.margin_width >= 0.9 * optimum and sol.outlier_mask.sum() <= allowed:
            successes += 1
        if est.margin_width_ >= 0.9 * optimum and est.outlier_mask_.sum() <= allowed:
            estimator_successes += 1
        near_optimal += sol.margin_width >= 0.99 * optimum
        widened += sol.tree_width > root.tree_width + 1e-12
    assert successes >= 190 and estimator_successes >= 190, (successes, estimator_successes)
    assert near_optimal >= 194 and widened >= 150, (near_optimal, widened)


def _map_back_case(kind, d=2000, k=128, n=200, seed=0):
    """Separable rows with diameter/margin D/rho ~ 2.3 (the map-back ratio falls as D/rho grows:
    about 0.92 at D/rho 2.1, 0.87 at 2.3, 0.78 at 2.7 for k = 128; see benchmarks/sketch_map_back.py)."""
    rng = np.random.default_rng(seed)
    direction = np.zeros(d)
    direction[:20] = 1 / np.sqrt(20)
    X = rng.normal(size=(n, d)) * 0.03
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    X += np.outer(y * rng.uniform(1.0, 2.0, n), direction)
    return X, y, JLSketch(k, kind, seed=seed)


@pytest.mark.parametrize("kind", ["gaussian", "achlioptas", "srht", "hashed"])
def test_map_back_reproduces_the_sketch_solution(kind):
    X, y, sketch = _map_back_case(kind, d=300, k=32, n=120)
    sol = solve(X, y, outlier_fraction=(0.0, 0.0), polish="hard", sketch=sketch, polish_space="sketch", refit_rounds=0)
    Z = sketch.transform(X)
    w_sketch = Z.T @ (y * sol.convex_coef)
    np.testing.assert_allclose(sketch.transform(sol.coef[None, :])[0], w_sketch, atol=1e-9)


@pytest.mark.parametrize("kind", ["gaussian", "achlioptas", "srht", "hashed"])
def test_map_back_keeps_most_of_the_margin_in_full_dimension(kind):
    X, y, sketch = _map_back_case(kind)
    exact = exact_hard_margin(X, y)
    sol = solve(X, y, outlier_fraction=(0.0, 0.0), polish="hard", sketch=sketch, polish_space="sketch", refit_rounds=0)
    assert slab_width(X, y, sol.coef) >= 0.8 * exact


@pytest.mark.parametrize("polish", ["hard", "soft"])
def test_with_a_full_dimension_polish_only_the_tree_reads_the_sketch(polish):
    # nothing to discard: the tree cannot change the inliers, so the polish (in full dimension,
    # from the same start) must give the solution found without a sketch
    X, y, sketch = _map_back_case("gaussian", d=300, k=32, n=120)
    plain = solve(X, y, outlier_fraction=(0.0, 0.0), polish=polish, refit_rounds=0)
    sketched = solve(X, y, outlier_fraction=(0.0, 0.0), polish=polish, sketch=sketch, refit_rounds=0)
    np.testing.assert_array_equal(sketched.convex_coef, plain.convex_coef)
    assert sketched.polish_iterations == plain.polish_iterations


def test_sparse_and_dense_rows_give_the_same_solution():
    X, y = separable_instance(5, n=60, d=8)
    y[:4] *= -1
    # a sparse and a dense Gram matrix round differently, so the polishes take different paths to
    # the duality gap: compare at a gap small enough for 1e-8
    a = solve(X, y, outlier_fraction=(0.1, 0.1), seed=3, tol=1e-6)
    b = solve(sp.csr_matrix(X), y, outlier_fraction=(0.1, 0.1), seed=3, tol=1e-6)
    np.testing.assert_allclose(a.coef, b.coef, atol=1e-8)
    assert np.array_equal(a.outlier_mask, b.outlier_mask)


def test_solver_rejects_bad_labels():
    with pytest.raises(ValueError, match="-1 and \\+1"):
        solve(np.zeros((3, 2)), np.array([0, 1, 1]))
    with pytest.raises(ValueError, match="both classes"):
        solve(np.zeros((3, 2)), np.ones(3))


def test_min_error_intercept_is_the_best_threshold_along_w():
    rng = np.random.default_rng(8)
    X = np.r_[rng.normal(1.0, 1.0, (300, 3)), rng.normal(-1.0, 1.5, (60, 3))]  # imbalanced, overlapping
    y = np.r_[np.ones(300), -np.ones(60)]
    sol = solve(X, y, outlier_fraction=(0.05, 0.05), intercept="min_error", seed=0)
    inl = ~sol.outlier_mask
    proj = X[inl] @ sol.coef

    def errors(b):
        return int(np.sum(np.where(proj + b > 0, 1.0, -1.0) != y[inl]))

    brute = min(errors(-t) for t in np.r_[proj - 1e-9, proj + 1e-9])
    assert errors(sol.intercept) == brute
    with pytest.raises(ValueError, match="intercept"):
        solve(X, y, intercept="middle")


def _trimmed_width(X, y, w, k_pos, k_neg):
    proj = X @ w
    return (np.sort(proj[y > 0])[k_pos] - np.sort(proj[y < 0])[::-1][k_neg]) / np.linalg.norm(w)


@pytest.mark.parametrize("sketch", [None, "gaussian"])
def test_warm_start_roots_the_tree_at_the_given_direction(sketch):
    # classes apart along feature 1 (margin 1), their means far apart along the noisy feature 0: the
    # difference of the means, the cold root, is a poor direction; (0, 1, 0, ...) is a good one
    rng = np.random.default_rng(11)
    n, d = 200, 12
    y = np.where(np.arange(n) < n // 2, 1.0, -1.0)
    X = rng.normal(size=(n, d)) * 0.1
    X[:, 0] = 10.0 * y + rng.normal(0.0, 30.0, n)
    X[:, 1] = y * (0.5 + rng.uniform(0.0, 1.0, n))
    good = np.zeros(d)
    good[1] = 1.0
    js = None if sketch is None else JLSketch(64, sketch, seed=0)
    tiny = {"tree_height": 0, "boosting_rounds": 1, "tree_rows": None}  # the root alone
    cold = solve(X, y, outlier_fraction=(0.0, 0.0), sketch=js, seed=1, **tiny)
    warm = solve(X, y, outlier_fraction=(0.0, 0.0), sketch=js, warm_start=good, seed=1, **tiny)
    Z = X if js is None else js.transform(X)
    root = good if js is None else js.transform(good[None, :])[0]
    good_width = _trimmed_width(Z, y, root, 0, 0)
    assert warm.tree_width == pytest.approx(good_width, rel=1e-9)  # the tree is its root alone
    assert cold.tree_width != pytest.approx(good_width, rel=1e-3)
    if sketch is None:
        assert good_width > 0.0 > cold.tree_width
    with pytest.raises(ValueError, match=r"warm_start must be 12 finite values, got shape \(3,\)"):
        solve(X, y, warm_start=np.ones(3))


def test_polish_start_from_a_previous_solution_needs_fewer_steps_for_the_same_solution():
    X, y = separable_instance(12, n=400, d=20)
    y[:30] *= -1
    kw = {"outlier_fraction": (0.1, 0.1), "polish": "soft", "refit_rounds": 0, "seed": 2, "tol": 1e-6}
    cold = solve(X, y, **kw)
    warm = solve(X, y, polish_start=cold.convex_coef, **kw)
    assert np.array_equal(warm.outlier_mask, cold.outlier_mask)
    assert warm.polish_iterations < cold.polish_iterations / 2, (warm.polish_iterations, cold.polish_iterations)
    np.testing.assert_allclose(warm.coef, cold.coef, atol=1e-2 * np.linalg.norm(cold.coef))
    with pytest.raises(ValueError, match="polish_start must be 400 non-negative weights"):
        solve(X, y, polish_start=-np.ones(400))


def test_mass_clipped_off_a_previous_solution_goes_to_the_rows_with_the_lowest_projections():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(12, 3))
    sign = np.r_[np.ones(6), -np.ones(6)]
    inlier = np.ones(12, dtype=bool)
    inlier[[5, 11]] = False
    cap = np.where(inlier, 0.3, 0.0)
    previous = np.zeros(12)
    previous[[0, 1, 5]] = [0.5, 0.3, 0.2]  # row 5 is no inlier any more: 0.5 and 0.3 renormalise above the cap
    previous[[6, 7]] = [0.2, 0.2]  # below the caps after renormalising (0.5 each): clipped to 0.3
    start = _feasible_start(sign, inlier, cap, previous, X)
    _check_convex(start, sign, cap)
    assert np.all(start[~inlier] == 0.0)
    assert start[0] == start[1] == 0.3 and start[6] == start[7] == 0.3
    clipped = np.minimum(np.where(inlier, previous, 0.0) / np.r_[[0.8] * 6, [0.4] * 6], cap)
    g = sign * (X @ (X.T @ (sign * clipped)))
    for s, excess in ((1.0, 0.4), (-1.0, 0.4)):
        room = np.flatnonzero((sign == s) & inlier & (clipped < cap))
        filled = room[np.argsort(g[room], kind="stable")]
        expected = clipped.copy()
        for i in filled:
            add = min(excess, cap[i] - expected[i])
            expected[i] += add
            excess -= add
        np.testing.assert_allclose(start[sign == s], expected[sign == s], atol=1e-15)
    assert np.count_nonzero(start) == 8  # 2 + 2 rows at the cap per class, not every row with room


def test_a_shared_gram_matrix_gives_the_same_solution():
    X, y = separable_instance(5, n=300, d=12)
    y[:25] *= -1
    kw = {"outlier_fraction": (0.1, 0.1), "seed": 1}
    alone, shared = solve(X, y, **kw), solve(X, y, gram=gram_matrix(X), **kw)
    assert np.array_equal(alone.coef, shared.coef) and alone.intercept == shared.intercept
    assert np.array_equal(alone.convex_coef, shared.convex_coef)
    with pytest.raises(ValueError, match=r"gram must have shape \(300, 300\)"):
        solve(X, y, gram=np.eye(3), **kw)


def test_without_a_tree_sparse_rows_stay_sparse_and_nothing_discarded_searches_no_tree(monkeypatch):
    rng = np.random.default_rng(3)
    n, d = 240, 40_000  # wide sparse rows: a dense copy would be n x d
    w = np.zeros(d)
    w[:30] = rng.normal(size=30)
    cols = [np.r_[rng.choice(30, 4, replace=False), 30 + rng.choice(d - 30, 6, replace=False)] for _ in range(n)]
    X = sp.csr_matrix((rng.normal(size=10 * n), np.concatenate(cols), np.arange(0, 10 * n + 1, 10)), shape=(n, d))
    y = np.where(X @ w > 0, 1.0, -1.0)
    y[rng.choice(n, 20, replace=False)] *= -1
    densified = []
    toarray = sp.csr_matrix.toarray

    def recording(self, *args, **kwargs):
        densified.append(self.shape)
        return toarray(self, *args, **kwargs)

    monkeypatch.setattr(sp.csr_matrix, "toarray", recording)
    flat = solve(X, y, outlier_fraction=(0.0, 0.0), polish="auto", tree_height=0, refit_rounds=0, seed=2)
    assert (n, d) not in densified and all(shape[1] < d for shape in densified)  # only the (n, n) Gram matrix
    assert flat.n_tree_nodes == 1 and not flat.outlier_mask.any()
    # nothing is discarded, so a tree could change nothing: none is searched, and the solution is the same
    densified.clear()
    tree = solve(X, y, outlier_fraction=(0.0, 0.0), polish="auto", tree_height=1, boosting_rounds=1,
                 refit_rounds=0, seed=2)  # fmt: skip
    assert tree.n_tree_nodes == 1 and all(shape[1] < d for shape in densified)
    np.testing.assert_array_equal(flat.coef, tree.coef)
    assert flat.intercept == tree.intercept and flat.polish == tree.polish
    # with rows to discard, the tree evaluates its nodes on dense rows, densified class by class
    # (one dense copy, not two)
    solve(X, y, outlier_fraction=(0.05, 0.05), tree_height=1, boosting_rounds=1, refit_rounds=0, seed=2)
    n_pos = int((y > 0).sum())
    assert (n_pos, d) in densified and (n - n_pos, d) in densified and (n, d) not in densified
    # with outliers to discard, the inliers are trimmed along the root: the class means' difference
    # (these rows have no gross outlier for the root to leave out)
    trimmed = solve(X.toarray(), y, outlier_fraction=(0.1, 0.1), tree_height=0, refit_rounds=0, seed=2)
    root = np.asarray(X[y > 0].mean(axis=0) - X[y < 0].mean(axis=0)).ravel()
    margins = y * (X @ root)
    for s in (1.0, -1.0):
        n_out = int(np.floor(0.1 * (y == s).sum()))
        expected = np.sort(np.argsort(np.where(y == s, margins, np.inf), kind="stable")[:n_out])
        np.testing.assert_array_equal(np.flatnonzero(trimmed.outlier_mask & (y == s)), expected)
    with pytest.raises(ValueError, match="tree_height must be an integer >= 0, got -1"):
        solve(X, y, tree_height=-1)


def _separable_strips(n=100, seed=0):
    rng = np.random.default_rng(seed)
    P = np.c_[rng.uniform(-5, 15, n), rng.uniform(0.1, 1.0, n)]
    Q = np.c_[rng.uniform(-15, 5, n), rng.uniform(-1.0, -0.1, n)]
    return np.r_[P, Q], np.r_[np.ones(n), -np.ones(n)]


@pytest.mark.parametrize("far", [1e5, 1e7])
def test_a_far_row_that_carries_no_coefficient_does_not_make_separable_hulls_look_intersecting(far):
    X, y = _separable_strips()
    clean = solve(X, y, outlier_fraction=(0.02, 0.02), polish="hard", seed=0)
    # one correctly labelled row deep on its own side: it is an inlier with coefficient 0
    Xf, yf = np.r_[X, [[far, 0.5 * far]]], np.r_[y, 1.0]
    sol = solve(Xf, yf, outlier_fraction=(0.02, 0.02), polish="hard", seed=0)
    assert sol.polish == "hard" and sol.info["nu"] == 0.3  # no fall back to shrunken hulls
    assert clean.margin_width > 0.2 and sol.margin_width > 0.2  # the strips are 0.2 apart
    assert np.mean(np.sign(X @ sol.coef + sol.intercept) == y) == 1.0


@pytest.mark.parametrize("far", [1e3, 1e4])
@pytest.mark.parametrize("rows", ["dense", "sparse"])
@pytest.mark.parametrize("tree_height", [6, 0])
def test_gross_mislabelled_row_does_not_steer_the_root(far, rows, tree_height):
    X, y = _separable_strips()
    # one row far out on the negative side, labelled +1: a plain class mean is dragged towards it
    Xg, yg = np.r_[X, [[-far, -far]]], np.r_[y, 1.0]
    sol = solve(sp.csr_matrix(Xg) if rows == "sparse" else Xg, yg, outlier_fraction=(0.02, 0.0),
                tree_height=tree_height, seed=0)
    assert sol.outlier_mask[-1]  # along a plain-mean root it sat deepest on the positive side
    if tree_height:
        assert sol.tree_width > 0.15  # the strips are 0.2 apart; from a plain-mean root the tree stayed at -2.1
        assert np.mean(np.sign(X @ sol.coef + sol.intercept) == y) >= 0.99  # 0.82 from a plain-mean root


def test_min_error_intercept_never_cuts_through_tied_projections():
    from robustream.solver import _intercept

    # 5 negatives at 0, then 3 negatives and 5 positives tied at 1: the best cut is between 0 and 1
    proj = np.r_[np.zeros(5), np.ones(8)]
    sign = np.r_[-np.ones(8), np.ones(5)]
    coef = np.r_[np.full(8, 1 / 8), np.full(5, 1 / 5)]
    for order in (np.arange(13), np.r_[np.arange(8, 13), np.arange(8)]):  # the row order must not matter
        b = _intercept(proj[order], sign[order], coef[order], np.ones(13, bool), "min_error")
        assert 0.0 < -b < 1.0
        assert np.sum(np.where(proj + b > 0, 1.0, -1.0) != sign) == 3
    # the end cuts are clear of the values, even for large projections
    big = np.array([1e17, 1e17 + 64.0])
    b = _intercept(big, np.array([1.0, 1.0]), np.array([0.5, 0.5]), np.ones(2, bool), "min_error")
    assert np.all(big + b > 0.0)


def test_equal_class_means_and_equal_first_rows_still_give_a_search_direction():
    X = np.array([[0.0, 1.0], [0.0, -1.0], [2.0, 0.0], [-2.0, 0.0]] * 5)  # class means both 0
    y = np.array([1.0, 1.0, -1.0, -1.0] * 5)
    X = np.r_[[[0.0, 0.0]], X, [[0.0, 0.0]]]  # the first positive and the first negative are the same point
    y = np.r_[1.0, y, -1.0]
    results = []
    for order in (np.arange(y.size), np.random.default_rng(0).permutation(y.size)):
        sol = solve(X[order], y[order], outlier_fraction=(0.2, 0.2), seed=0)
        assert np.isfinite(sol.tree_width) and sol.n_tree_nodes > 1
        results.append(round(sol.tree_width, 9))
    assert results[0] == results[1]  # the search does not depend on which rows come first


def test_auto_polish_reports_soft_when_a_hard_polish_met_intersecting_hulls():
    rng = np.random.default_rng(0)
    reported = set()
    for trial in range(60):
        X = np.r_[rng.normal([2.0, 0], 1, (40, 2)), rng.normal([-2.0, 0], 1, (40, 2))]
        y = np.r_[np.ones(40), -np.ones(40)]
        y[rng.choice(80, 6, replace=False)] *= -1
        # a poor root (orthogonal to the separation): the first inliers overlap, the hard polish goes soft
        sol = solve(X, y, outlier_fraction=(0.15, 0.15), polish="auto", tree_height=0, warm_start=np.array([0.0, 1.0]),
                    seed=trial)  # fmt: skip
        if sol.polish == "hard":  # then the result is the max-margin solution of its inliers
            hard = solve(X, y, outlier_fraction=(0.15, 0.15), polish="hard", tree_height=0,
                         warm_start=np.array([0.0, 1.0]), seed=trial)  # fmt: skip
            np.testing.assert_allclose(sol.coef, hard.coef, rtol=1e-9)
        reported.add(sol.polish)
    assert "soft" in reported


def _overlapping_labels(n=300, flip=0.15, seed=0):
    """Two Gaussian classes in d = 5, means 4 apart, ``flip`` of the labels flipped: the hulls of the
    labelled classes intersect, and so do the reduced ones at nu = 0.3."""
    rng = np.random.default_rng(seed)
    clean = np.r_[np.ones(n // 2), -np.ones(n - n // 2)]
    X = rng.standard_normal((n, 5))
    X[:, 0] += 2.0 * clean
    noisy = np.where(rng.random(n) < flip, -clean, clean)
    return X, noisy, clean


def _reduced_caps(sign, nu):
    """The caps of the soft polish on every row (the solver's own rule)."""
    from robustream.solver import _caps

    return _caps(sign, np.ones(sign.size, bool), True, nu)


def test_a_polish_stopped_without_a_separation_certificate_shrinks_the_hulls():
    from robustream.solver import separates

    X, noisy, clean = _overlapping_labels()
    cap = _reduced_caps(noisy, 0.3)
    coef, steps, ok = nearest_point(X, noisy, cap, max_iter=20)
    assert (steps, ok) == (20, False) and not separates(X, noisy, coef, cap)
    assert separates(X, noisy, *nearest_point(X, noisy, _reduced_caps(noisy, 0.65))[:1], _reduced_caps(noisy, 0.65))
    # a polish stopped there (max_iter; on mushrooms with 15% flips, CoresetSVMClassifier's solves ran out of
    # 100,000 steps so) must not return that w, which is on its way to 0: it shrinks the hulls as for w = 0
    sol = solve(X, noisy, outlier_fraction=(0.0, 0.0), polish="soft", nu=0.3, tree_height=0, refit_rounds=0,
                max_iter=20, seed=0)  # fmt: skip
    assert sol.info["nu"] == 0.65
    assert separates(X, noisy, sol.convex_coef, _reduced_caps(noisy, sol.info["nu"]))


def test_certify_within_stops_on_intersecting_hulls_and_leaves_separable_ones_alone():
    X, noisy, _ = _overlapping_labels()
    ones = np.ones(noisy.size)
    free = nearest_point(X, noisy, ones)
    assert free[2] and free[1] > 40  # w reaches 0 (the hulls intersect), after this many steps
    assert nearest_point(X, noisy, ones, certify_within=20)[1:] == (20, False)
    Xs, ys = _separable_strips()
    free = nearest_point(Xs, ys, np.ones(ys.size))
    capped = nearest_point(Xs, ys, np.ones(ys.size), certify_within=100)  # separated long before it converges
    assert free[1] > 10_000 and capped[2] and abs(capped[1] - free[1]) < 100
    np.testing.assert_allclose(capped[0], free[0], atol=1e-12)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"outlier_fraction": (-0.1, 0.1)}, r"outlier_fraction must be a pair .* got \(-0.1, 0.1\)"),
        ({"outlier_fraction": (float("nan"), 0.1)}, "outlier_fraction must be a pair"),
        ({"outlier_fraction": 0.1}, r"outlier_fraction must be a pair .* got 0.1"),
        ({"nu": 0.0}, r"nu must be in \(0, 1\], got 0.0"),
        ({"delta": 0.0}, r"delta must be in \(0, 1\), got 0.0"),
        ({"level_width": 0}, "level_width must be an integer >= 1, got 0"),
        ({"tree_rows": 0}, "tree_rows must be a positive integer or None, got 0"),
        ({"refit_rounds": 1.5}, "refit_rounds must be an integer >= 0, got 1.5"),
        ({"warm_start": np.array([np.nan, 1.0])}, "warm_start must be 2 finite values"),
        ({"polish_start": np.r_[np.inf, np.ones(39)]}, "polish_start must be 40 non-negative weights"),
        ({"seed": -1}, "seed must be a non-negative integer, got -1"),
        ({"seed": 1.5}, "seed must be a non-negative integer, got 1.5"),
        ({"seed": None}, "seed must be a non-negative integer, got None"),  # not a different tree per call
        ({"seed": True}, "seed must be a non-negative integer, got True"),
    ],
)
def test_solve_names_a_bad_argument(kwargs, match):
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(2, 1, (20, 2)), rng.normal(-2, 1, (20, 2))]
    y = np.r_[np.ones(20), -np.ones(20)]
    with pytest.raises(ValueError, match=match):
        solve(X, y, **kwargs)
    with pytest.raises(ValueError, match=r"y must be 1-d with one label per row of X \(40\), got shape \(39,\)"):
        solve(X, y[:-1])


def test_a_numpy_integer_seed_is_the_same_seed():
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(1, 1, (30, 3)), rng.normal(-1, 1, (30, 3))]
    y = np.r_[np.ones(30), -np.ones(30)]
    a, b = solve(X, y, outlier_fraction=(0.1, 0.1), seed=3), solve(X, y, outlier_fraction=(0.1, 0.1), seed=np.int64(3))
    assert np.array_equal(a.coef, b.coef) and a.intercept == b.intercept


@pytest.mark.parametrize("shape", [(4,), (4, 2, 1)])
def test_solve_and_gram_matrix_need_2d_rows(shape):
    X = np.arange(float(np.prod(shape))).reshape(shape)
    match = rf"X must be 2-D \(rows x features\), got shape {re.escape(str(shape))}"
    with pytest.raises(ValueError, match=match):
        solve(X, np.array([1.0, 1.0, -1.0, -1.0]), outlier_fraction=(0.0, 0.0))
    with pytest.raises(ValueError, match=match):
        gram_matrix(X)


@pytest.mark.parametrize("scale", [1e-160, 1e150])
def test_values_too_small_or_too_large_for_float64_products_are_an_error_not_a_zero_model(scale):
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(2, 1, (20, 2)), rng.normal(-2, 1, (20, 2))] * scale
    y = np.r_[np.ones(20), -np.ones(20)]
    with pytest.raises(ValueError, match="rescale the features"):
        solve(X, y)
    inside = X / scale * 1e-130  # inside the range: a real model
    sol = solve(inside, y)
    assert np.mean(np.sign(inside @ sol.coef + sol.intercept) == y) > 0.9


def test_a_sparse_matrix_too_wide_for_a_dense_tree_asks_for_a_sketch():
    n, d = 400, 1_000_000  # 3 GB dense
    X = sp.random(n, d, density=1e-5, format="csr", random_state=0) + sp.eye(n, d, format="csr")
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    with pytest.raises(ValueError, match=r"400 x 1000000 sparse rows would take 3.0 GiB; run the tree on a JL sketch"):
        solve(X, y)
    sol = solve(X, y, sketch=JLSketch(32, "hashed", seed=0))  # with a sketch the rows stay sparse
    assert sol.coef.shape == (d,)


@pytest.mark.parametrize("offset", [1e6, 1e7])
@pytest.mark.parametrize("polish", ["hard", "soft"])
def test_a_constant_offset_on_every_row_moves_only_the_intercept(offset, polish):
    # un-centred features (a timestamp, a price): the Minkowski difference of the classes is the same
    rng = np.random.default_rng(4)
    X = np.r_[rng.normal(1.5, 1.0, (80, 3)), rng.normal(-1.5, 1.0, (80, 3))]
    y = np.r_[np.ones(80), -np.ones(80)]
    y[:6] = -1.0
    base = solve(X, y, outlier_fraction=(0.1, 0.1), polish=polish, seed=0)
    moved = solve(X + offset, y, outlier_fraction=(0.1, 0.1), polish=polish, seed=0)
    assert moved.polish == base.polish == polish and moved.converged
    np.testing.assert_array_equal(moved.outlier_mask, base.outlier_mask)
    np.testing.assert_allclose(moved.coef, base.coef, rtol=1e-6)
    np.testing.assert_allclose(moved.margin_width, base.margin_width, rtol=1e-6)
    np.testing.assert_allclose((X + offset) @ moved.coef + moved.intercept, X @ base.coef + base.intercept,
                               atol=1e-5)  # decision values of a few units; the offset's rounding is about 1e-8
    # a shared Gram matrix is that of the rows as solve works on them
    shared = solve(X + offset, y, outlier_fraction=(0.1, 0.1), polish=polish, seed=0, gram=gram_matrix(X + offset))
    np.testing.assert_array_equal(shared.coef, moved.coef)


def test_nearest_point_without_a_start_keeps_rows_with_cap_zero_at_zero():
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(1, 1, (50, 3)), rng.normal(-1, 1, (50, 3))]
    y = np.r_[np.ones(50), -np.ones(50)]
    X[:5] = rng.normal(-3, 0.3, (5, 3))  # 5 positives deep on the negative side, excluded by cap 0
    cap = np.ones(100)
    cap[:5] = 0.0
    coef, _, ok = nearest_point(X, y, cap)
    assert ok and not coef[:5].any() and np.all(coef <= cap)
    ref, _, _ = nearest_point(X[5:], y[5:], np.ones(95))
    np.testing.assert_allclose(np.linalg.norm(X.T @ (y * coef)), np.linalg.norm(X[5:].T @ (y[5:] * ref)), rtol=1e-3)


def _separable_with_a_wide_feature(std, n=200, seed=0):
    """Classes a slab of width 2 apart along feature 0, plus an uninformative feature of standard
    deviation ``std``: separable, with ``w.w`` near 1 against support rows of squared norm ``std**2``."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    return np.c_[y * (1.0 + rng.random(n)), rng.normal(0.0, std, n)], y


@pytest.mark.parametrize("polish", ["hard", "auto"])
def test_a_separating_hard_solution_is_kept_beside_a_feature_of_a_far_larger_scale(polish):
    # the hard polish converged and separated, but its w.w (9.3) sat below a cut of 1e-10 times the
    # largest support row's squared norm (1.5e3): it went soft, and "auto" ended at 58.5% training accuracy
    X, y = _separable_with_a_wide_feature(1e6)
    sol = solve(X, y, outlier_fraction=(0.0, 0.0), polish=polish, seed=0)
    assert sol.polish == "hard" and sol.converged and sol.info["direction_found"]
    assert np.mean(np.sign(X @ sol.coef + sol.intercept) == y) == 1.0
    assert sol.margin_width > 1.9  # the slab is 2 wide along feature 0


def test_classes_of_the_same_points_give_no_direction_and_do_not_claim_convergence():
    points = np.random.default_rng(5).normal(size=(6, 2))
    X, y = np.r_[points, points], np.r_[np.ones(6), -np.ones(6)]
    for polish in ("hard", "soft", "auto"):
        sol = solve(X, y, outlier_fraction=(0.0, 0.0), polish=polish, seed=0)
        assert not sol.converged and not sol.info["direction_found"]
        assert float(sol.coef @ sol.coef) < 1e-20  # rounding residue: what a converged flag used to certify
    overlap, noisy, _ = _overlapping_labels()  # hulls that intersect at nu = 0.3 but not at a larger nu
    sol = solve(overlap, noisy, outlier_fraction=(0.0, 0.0), polish="soft", nu=0.3, seed=0)
    assert sol.converged and sol.info["direction_found"] and sol.info["nu"] > 0.3
