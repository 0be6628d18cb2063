"""JLSketch: linearity (what the map-back relies on), norm preservation, stable hashing, state."""

import math
import re

import numpy as np
import pytest
import scipy.sparse as sp

from robustream.sketch import SKETCH_KINDS, JLSketch


@pytest.mark.parametrize("kind", SKETCH_KINDS)
def test_sketch_is_linear_and_same_for_dense_and_sparse(kind):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 50)) * (rng.random((30, 50)) < 0.3)
    sk = JLSketch(16, kind, seed=3)
    Z = sk.transform(X)
    np.testing.assert_allclose(Z, sk.transform(sp.csr_matrix(X)), atol=1e-12)
    c = rng.random(30)
    np.testing.assert_allclose(sk.transform((c @ X)[None])[0], c @ Z, atol=1e-10)


@pytest.mark.parametrize("kind", SKETCH_KINDS)
def test_sketch_preserves_norms_on_average(kind):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 256))
    Z = JLSketch(128, kind, seed=5).transform(X)
    ratio = np.linalg.norm(Z, axis=1) / np.linalg.norm(X, axis=1)
    assert abs(ratio.mean() - 1.0) < 0.05 and ratio.std() < 0.15


@pytest.mark.parametrize("kind", SKETCH_KINDS)
def test_transform_one_matches_rows(kind):
    X = np.random.default_rng(2).normal(size=(4, 10))
    sk = JLSketch(8, kind, seed=1)
    Z = sk.transform(X)
    np.testing.assert_allclose(sk.transform_one(dict(enumerate(X[2]))), Z[2], atol=1e-12)


def test_hashed_sketch_is_stable_across_runs_and_platforms():
    # pinned values: a keyed BLAKE2b of the key's UTF-8 text, so these never change
    sk = JLSketch(16, "hashed", seed=42, hash_nnz=2)
    z = sk.transform_one({"clicks": 1.0, "dwell_ms": 2.0, "über": -1.0})
    pos, sgn = sk.feature_hash("clicks")
    assert pos.tolist() == PINNED_POSITIONS and sgn.tolist() == PINNED_SIGNS
    np.testing.assert_allclose(z, PINNED_SKETCH, atol=1e-12)


def test_hashed_sketch_handles_keys_appearing_mid_stream():
    sk = JLSketch(32, "hashed", seed=0)
    a = sk.transform_one({"a": 1.0})
    b = sk.transform_one({"a": 1.0, "new_feature": 3.0})
    np.testing.assert_allclose(b - a, sk.transform_one({"new_feature": 3.0}), atol=1e-12)


def test_state_round_trip_gives_identical_sketch():
    X = np.random.default_rng(3).normal(size=(5, 20))
    for kind in SKETCH_KINDS:
        sk = JLSketch(8, kind, seed=9)
        Z = sk.transform(X)
        np.testing.assert_array_equal(JLSketch.from_state(sk.get_state()).transform(X), Z)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="sketch kind"):
        JLSketch(8, "fourier")
    with pytest.raises(ValueError, match="sketch_dim"):
        JLSketch(0)
    sk = JLSketch(8, "gaussian").fit(5)
    with pytest.raises(ValueError, match="features"):
        sk.transform(np.ones((2, 6)))
    with pytest.raises(ValueError, match="feature keys"):
        sk.transform_one({"a": 1.0})
    with pytest.raises(ValueError, match="sketch_dim must be a positive integer, got True"):
        JLSketch(True)
    with pytest.raises(ValueError, match=r"hash_nnz must be at most sketch_dim \(2\) for the hashed sketch"):
        JLSketch(2, "hashed")
    with pytest.raises(ValueError, match="hash_nnz must be a positive integer"):
        JLSketch(8, "hashed", hash_nnz=0)


@pytest.mark.parametrize("kind", [k for k in SKETCH_KINDS if k != "hashed"])
def test_a_sketch_smaller_than_hash_nnz_is_fine_for_the_kinds_that_do_not_hash(kind):
    assert JLSketch(2, kind, seed=0).transform(np.eye(5)).shape == (5, 2)


PINNED_POSITIONS = [12, 7]
PINNED_SIGNS = [1.0, -1.0]
_H = 0.7071067811865475
PINNED_SKETCH = [-_H, 0, 2 * _H, 0, 0, _H, 0, -3 * _H, 0, 0, 0, 0, _H, 0, 0, 0]


def test_hashed_column_table_is_the_hash_of_each_index_whatever_was_cached_before(monkeypatch):
    import robustream.sketch as S

    monkeypatch.setattr(S, "_INDEX_TABLES", {})
    monkeypatch.setattr(S, "_INDEX_TABLE_ROWS", 50)  # so that a table also runs past the shared part
    for n in (7, 30, 20, 120, 3):
        sk = JLSketch(16, "hashed", seed=5, hash_nnz=3)  # a new sketch per call, as a stream's rebuilds
        pos, sgn = sk._hash_table(n)
        expected = [sk.feature_hash(j) for j in range(n)]
        assert pos.shape == (n, 3) and sgn.shape == (n, 3)
        assert pos.tolist() == [p.tolist() for p, _ in expected] and sgn.tolist() == [s.tolist() for _, s in expected]
    assert S._INDEX_TABLES[(5, 3, 16)][0].shape == (50, 3)
    X = sp.random(4, 120, density=0.3, random_state=0, format="csr")
    dense = np.zeros((120, 16))
    for j in range(120):
        p, s = sk.feature_hash(j)
        np.add.at(dense[j], p, s / np.sqrt(3))
    np.testing.assert_allclose(JLSketch(16, "hashed", seed=5, hash_nnz=3).transform(X), X @ dense, atol=1e-12)


@pytest.mark.parametrize("sketch_dim", [4, 8, 128])
def test_hashed_columns_have_distinct_positions_and_unit_norm(sketch_dim):
    sk = JLSketch(sketch_dim, "hashed", seed=3, hash_nnz=4)
    Z = sk.transform(np.eye(5000))  # column j of the sketch = the sketch of feature j
    np.testing.assert_allclose(np.einsum("ij,ij->i", Z, Z), 1.0, rtol=1e-12)  # no position used twice
    for j in (0, 17, 4999):
        positions, _ = sk.feature_hash(str(j))
        assert len(set(positions.tolist())) == 4


def test_sketch_seed_must_be_a_non_negative_integer():
    for seed in (None, -1, 2**63, 1.5, "7", True):
        with pytest.raises(ValueError, match=r"seed must be an integer in \[0, 2\*\*63\)"):
            JLSketch(8, "hashed", seed=seed)


@pytest.mark.parametrize("kind", SKETCH_KINDS)
def test_sketch_preserves_the_norm_of_structured_rows(kind):
    # isotropic rows keep their norm under almost any map; constant, alternating, unit and sparse 0/1
    # rows need the random signs and spread (measured over 20 seeds: ratios in [0.76, 1.29])
    d = 256
    rows = np.array([np.ones(d), (-1.0) ** np.arange(d), np.eye(d)[3], (np.arange(d) % 7 == 0).astype(float)])
    for seed in range(5):
        sk = JLSketch(64, kind, seed=seed)
        Z = (sk if kind == "hashed" else sk.fit(d)).transform(rows)
        ratios = np.linalg.norm(Z, axis=1) / np.linalg.norm(rows, axis=1)
        assert np.all((ratios > 0.6) & (ratios < 1.4)), (seed, ratios)


def test_a_refused_srht_fit_leaves_the_sketch_unfitted():
    sk = JLSketch(32, "srht", seed=0)
    for _ in range(2):  # the retry is refused the same way
        with pytest.raises(ValueError, match=r"srht needs sketch_dim <= 16 \(the padded dimension\), got 32"):
            sk.transform(np.ones((3, 10)))
    assert sk.n_features_ is None and sk.get_state()["n_features"] is None
    X = np.random.default_rng(0).normal(size=(3, 100))  # padded to 128: a valid input
    np.testing.assert_array_equal(sk.transform(X), JLSketch(32, "srht", seed=0).transform(X))


@pytest.mark.parametrize("kind", ["hashed", "srht", "gaussian", "achlioptas"])
@pytest.mark.parametrize("n_features", [-3, 2.7, "5", True, None])
def test_fit_refuses_a_feature_count_that_is_not_a_count(kind, n_features):
    # int() took them: fit(-3) passed for srht and hashed, fit(2.7) drew 2 columns, fit("5") five
    sketch = JLSketch(4, kind=kind)
    with pytest.raises(ValueError, match=f"n_features must be a non-negative integer, got {re.escape(repr(n_features))}"):
        sketch.fit(n_features)
    assert sketch.n_features_ is None


@pytest.mark.parametrize("kind", ["hashed", "gaussian"])
@pytest.mark.parametrize("value, problem", [(None, "None is not a number"), ("x", "'x' is not a number"),
                                            (math.nan, "is not a finite number: nan"), (-math.inf, "not a finite")])  # fmt: skip
def test_transform_one_names_a_value_that_is_not_a_finite_number(kind, value, problem):
    # hashed: None was read as 0 and NaN passed into the sketch; gaussian: NaN passed through
    sketch = JLSketch(8, kind=kind).fit(3)
    key = 1 if kind != "hashed" else "b"
    with pytest.raises(ValueError, match=f"feature {key!r}.*{re.escape(problem)}"):
        sketch.transform_one({0 if kind != "hashed" else "a": 1.0, key: value})
    np.testing.assert_array_equal(sketch.transform_one({key: np.float32(2.0)}), 2.0 * sketch.transform_one({key: 1.0}))
