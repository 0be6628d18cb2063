"""Tests for robustream.datasets (readers, registry, noise protocol, generator)."""

from __future__ import annotations

import bz2
import gzip
import re
import lzma
import struct
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import robustream.datasets as rd
from robustream.datasets import (
    DATASETS,
    Dataset,
    fit_reference_boundary,
    load,
    make_gaussian_classes,
    noisy_split,
    read_csv,
    read_dense,
    read_idx,
    read_svmlight,
    shared_datasets_dir,
)
from shared_data import require_shared

# Shapes and label counts as stated in /work/shared/datasets/MANIFEST.md, written
# here independently of the registry: name -> (rows, features, {mapped label: count}, classes).
MNIST_COUNTS = {0: 980, 1: 1135, 2: 1032, 3: 1010, 4: 982, 5: 892, 6: 958, 7: 1028, 8: 974, 9: 1009}
EXPECTED = {
    "australian": (690, 14, {1.0: 307, -1.0: 383}, (-1.0, 1.0)),
    "german.numer": (1000, 24, {1.0: 300, -1.0: 700}, (-1.0, 1.0)),
    "german.numer_scale": (1000, 24, {1.0: 300, -1.0: 700}, (-1.0, 1.0)),
    "svmguide1": (3089, 4, {1.0: 2000, -1.0: 1089}, (0.0, 1.0)),
    "svmguide1.t": (4000, 4, {1.0: 2000, -1.0: 2000}, (0.0, 1.0)),
    "breast-cancer": (683, 10, {1.0: 239, -1.0: 444}, (-1.0, 1.0)),
    "wdbc": (569, 30, {1.0: 212, -1.0: 357}, ("B", "M")),
    "mushrooms": (8124, 112, {1.0: 3916, -1.0: 4208}, (2.0, 1.0)),
    "w8a": (49749, 300, {1.0: 1479, -1.0: 48270}, (-1.0, 1.0)),
    "splice": (1000, 60, {1.0: 517, -1.0: 483}, (-1.0, 1.0)),
    "diabetes": (768, 8, {1.0: 500, -1.0: 268}, (-1.0, 1.0)),
    "heart": (270, 13, {1.0: 120, -1.0: 150}, (-1.0, 1.0)),
    "ionosphere": (351, 34, {1.0: 225, -1.0: 126}, (-1.0, 1.0)),
    "mnist": (10000, 784, MNIST_COUNTS, tuple(range(10))),
    "mnist-0-vs-1": (2115, 784, {1.0: 1135, -1.0: 980}, (0, 1)),
}


@pytest.fixture(scope="module")
def shared_dir() -> Path:
    return require_shared()


_CACHE: dict[str, Dataset] = {}


def _load_cached(name: str) -> Dataset:
    if name not in _CACHE:
        _CACHE[name] = load(name)
    return _CACHE[name]


# ---------------------------------------------------------------------------
# shared data sets
# ---------------------------------------------------------------------------
def test_registry_is_covered_by_expected_table():
    assert set(DATASETS) == set(EXPECTED)
    for name, spec in DATASETS.items():
        rows, feats, _, _ = EXPECTED[name]
        assert (spec.n_samples, spec.n_features) == (rows, feats), name
        assert sum(c for _, c in spec.label_counts) == rows, name


@pytest.mark.dataset
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_shared_dataset_loads_with_manifest_counts(shared_dir, name):
    rows, feats, counts, classes = EXPECTED[name]
    ds = _load_cached(name)
    assert ds.name == name
    assert (ds.n_samples, ds.n_features) == (rows, feats)
    assert ds.X.shape == (rows, feats)
    assert ds.X.dtype == np.float64
    assert isinstance(ds.X, np.ndarray)  # all registered sets are small enough to be dense
    assert np.all(np.isfinite(ds.X))
    values, n = np.unique(ds.y, return_counts=True)
    assert dict(zip(values.tolist(), n.tolist())) == counts
    assert ds.classes == classes
    if name == "mnist":
        assert ds.y.dtype == np.int64
    else:
        assert ds.y.dtype == np.float64
    spec_counts = dict(DATASETS[name].label_counts)
    # the spec's original-label counts map onto the loaded counts
    if DATASETS[name].positive_label is not None:
        assert counts[1.0] == spec_counts[DATASETS[name].positive_label]


@pytest.mark.dataset
@pytest.mark.parametrize(
    "name, file",
    [("australian", "australian.xz"), ("mushrooms", "mushrooms.xz"), ("heart", "heart_scale.xz"),
     ("w8a", "w8a.xz"), ("german.numer_scale", "german.numer_scale.xz")],
)
def test_svmlight_sets_match_sklearn_reader(shared_dir, name, file):
    from sklearn.datasets import load_svmlight_file

    with lzma.open(shared_dir / file) as fh:
        X_ref, y_ref = load_svmlight_file(fh, n_features=EXPECTED[name][1])
    X, y = read_svmlight(shared_dir / file)
    assert X.shape == X_ref.shape
    assert abs(X - X_ref).max() == 0
    np.testing.assert_array_equal(y, y_ref)


@pytest.mark.dataset
def test_wdbc_matches_sklearn_breast_cancer(shared_dir):
    from sklearn.datasets import load_breast_cancer

    ref = load_breast_cancer()
    ds = _load_cached("wdbc")
    np.testing.assert_allclose(ds.X, ref.data, rtol=0, atol=1e-12)
    # sklearn codes malignant as 0; we map M (malignant) to +1
    np.testing.assert_array_equal(ds.y == 1.0, ref.target == 0)


@pytest.mark.dataset
def test_mnist_pixels_and_binary_subset(shared_dir):
    full = _load_cached("mnist")
    assert full.X.min() == 0.0 and full.X.max() == 1.0
    raw = read_idx(shared_dir / "mnist-t10k-images-idx3-ubyte.gz")
    assert raw.shape == (10000, 28, 28) and raw.dtype == np.uint8
    np.testing.assert_array_equal(full.X, raw.reshape(10000, -1) / 255.0)
    sub = _load_cached("mnist-0-vs-1")
    keep = full.y <= 1
    np.testing.assert_array_equal(sub.X, full.X[keep])
    np.testing.assert_array_equal(sub.y, np.where(full.y[keep] == 1, 1.0, -1.0))


@pytest.mark.dataset
def test_load_dense_and_binary_options(shared_dir):
    ds = load("heart", dense=False, binary=False)
    assert sp.isspmatrix_csr(ds.X) and ds.X.dtype == np.float64
    assert ds.y.dtype == np.int64 and set(ds.y.tolist()) == {0, 1}
    assert ds.classes == (-1.0, 1.0)
    np.testing.assert_array_equal(np.where(ds.y == 1, 1.0, -1.0), _load_cached("heart").y)
    np.testing.assert_array_equal(ds.X.toarray(), _load_cached("heart").X)
    mush = load("mushrooms", binary=False)
    assert mush.classes == (2.0, 1.0)  # id 1 = original label 1 = +1
    assert int((mush.y == 1).sum()) == 3916
    assert load("breast-cancer_scale").n_samples == 683  # alias


@pytest.mark.dataset
def test_w8a_subsample_like_w5a(shared_dir):
    ds = _load_cached("w8a")
    s = noisy_split(ds.X, ds.y, flip=0.1, seed=1, max_samples=9888)
    sizes = (len(s.y_train), len(s.y_val), len(s.y_test))
    assert sizes == (round(0.4 * 9888), round(0.3 * 9888), 9888 - round(0.4 * 9888) - round(0.3 * 9888))
    assert int(s.flipped_train.sum()) == round(0.1 * sizes[0])
    assert len(np.unique(np.concatenate([s.index_train, s.index_val, s.index_test]))) == 9888


def test_shared_datasets_dir_env(monkeypatch, tmp_path):
    monkeypatch.setenv("ROBUSTREAM_DATASETS", str(tmp_path))
    assert shared_datasets_dir() == tmp_path.resolve()
    monkeypatch.setenv("ROBUSTREAM_DATASETS", str(tmp_path / "missing"))
    assert shared_datasets_dir() == (tmp_path / "missing").resolve()
    monkeypatch.delenv("ROBUSTREAM_DATASETS")
    expected_repo = (Path(rd.__file__).resolve().parents[2] / ".." / "shared" / "datasets").resolve()
    if expected_repo.is_dir():
        assert shared_datasets_dir() == expected_repo


def test_load_errors(monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="known names: .*australian.*w8a"):
        load("no-such-set")
    with pytest.raises(FileNotFoundError, match="ROBUSTREAM_DATASETS") as info:
        load(tmp_path / "nope.svm.xz")
    assert "nope.svm.xz" in str(info.value)
    monkeypatch.setenv("ROBUSTREAM_DATASETS", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="ROBUSTREAM_DATASETS") as info:
        load("australian")
    assert str(tmp_path / "australian.xz") in str(info.value)


# ---------------------------------------------------------------------------
# readers
# ---------------------------------------------------------------------------
_OPENERS = {"": open, ".xz": lzma.open, ".gz": gzip.open, ".bz2": bz2.open}


def _write(path: Path, text: str) -> Path:
    opener = _OPENERS[path.suffix if path.suffix in _OPENERS else ""]
    with opener(path, "wt") as fh:
        fh.write(text)
    return path


def _random_svmlight(rng: np.random.Generator, n: int = 40, d: int = 12):
    X = sp.random(n, d, density=0.3, format="csr", random_state=np.random.RandomState(int(rng.integers(1 << 30))))
    X.data = rng.standard_normal(X.nnz) * 10.0 ** rng.integers(-5, 5, X.nnz)
    y = rng.choice([-1.0, 1.0, 3.0], size=n)
    lines = ["# a comment line", ""]
    for i in range(n):
        row = X.getrow(i)
        pairs = [f"{j + 1}:{float(v)!r}" for j, v in zip(row.indices, row.data)]
        rng.shuffle(pairs)  # indices need not be sorted
        label = f"+{y[i]:g}" if y[i] > 0 else f"{y[i]:g}"
        qid = f" qid:{i % 3}" if i % 4 == 0 else ""
        comment = "  # trailing comment 1:5" if i % 5 == 0 else ""
        lines.append(f"{label}{qid} {' '.join(pairs)}{comment}")
    return X, y, "\n".join(lines) + "\n"


@pytest.mark.parametrize("suffix", ["", ".xz", ".gz", ".bz2"])
def test_svmlight_round_trip(tmp_path, suffix):
    X, y, text = _random_svmlight(np.random.default_rng(7))
    path = _write(tmp_path / f"data.svm{suffix}", text)
    X2, y2 = read_svmlight(path, n_features=X.shape[1])
    assert sp.isspmatrix_csr(X2) and X2.dtype == np.float64 and y2.dtype == np.float64
    assert X2.shape == X.shape
    np.testing.assert_array_equal(X2.toarray(), X.toarray())
    np.testing.assert_array_equal(y2, y)
    # n_features inferred from the largest index
    X3, _ = read_svmlight(path)
    assert X3.shape[1] == X.indices.max() + 1
    ds = load(path)
    assert ds.classes == (-1.0, 1.0, 3.0)  # three labels: class ids, not +-1
    assert ds.y.dtype == np.int64 and isinstance(ds.X, np.ndarray)
    np.testing.assert_array_equal(ds.y, np.searchsorted([-1.0, 1.0, 3.0], y))


@pytest.mark.parametrize(
    "bad, problem",
    [
        ("1 2:abc", "abc"),
        ("1 x:1", "x"),
        ("abc 1:2", "abc"),
        ("1 0:1", "< 1 (zero_based=False)"),
        ("1 3", "index:value"),
        ("1 3:", "index:value"),
        ("1 :3", "index:value"),
        ("1 1:2:3 4", "index:value"),
        ("1 2:1 2:3", "twice"),
        ("1 1:1 99:1", "n_features"),
        ("1 1.5:2", "1.5"),
        ("nan 1:2", "the label is not a finite number"),
        ("1 1:inf", "a feature value is not a finite number"),
        ("1 2:1e999", "a feature value is not a finite number"),
        ("1 99999999999999999999:1", "feature index 99999999999999999999 is too large"),
    ],
)
def test_svmlight_malformed_line_names_line(tmp_path, bad, problem):
    path = _write(tmp_path / "bad.svm", f"1 1:1\n# comment\n{bad}\n-1 2:1\n")
    with pytest.raises(ValueError) as info:
        read_svmlight(path, n_features=10, zero_based=False)
    msg = str(info.value)
    assert "line 3" in msg and "bad.svm" in msg and problem in msg


def test_svmlight_zero_based_files(tmp_path):
    # scikit-learn writes 0-based indices by default; "auto" reads them as scikit-learn does
    p = _write(tmp_path / "z.svm", "1 0:1 2:2\n-1 1:3\n")
    X, y = read_svmlight(p)
    np.testing.assert_array_equal(X.toarray(), [[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]])
    np.testing.assert_array_equal(read_svmlight(p, zero_based=True)[0].toarray(), X.toarray())
    with pytest.raises(ValueError, match=r"z\.svm, line 1: feature index 0 < 1 \(zero_based=False\)"):
        read_svmlight(p, zero_based=False)
    # a 0-based file without index 0 needs zero_based=True
    p = _write(tmp_path / "z2.svm", "1 1:1 2:2\n-1 1:3\n")
    assert read_svmlight(p)[0].shape == (2, 2) and read_svmlight(p, zero_based=True)[0].shape == (2, 3)
    with pytest.raises(ValueError, match="beyond n_features=2"):
        read_svmlight(p, n_features=2, zero_based=True)
    with pytest.raises(ValueError, match="zero_based must be"):
        read_svmlight(p, zero_based="yes")


@pytest.mark.parametrize(
    "text, kwargs, index",
    [("1 0:1 2:5\n-1 0:1 0:2\n", {}, 0), ("1 3:1 3:2\n", {"zero_based": True}, 3), ("1 3:1 3:2\n", {}, 3)],
)
def test_svmlight_names_a_repeated_index_as_the_file_writes_it(tmp_path, text, kwargs, index):
    path = _write(tmp_path / "dup.svm", text)
    with pytest.raises(ValueError, match=rf"dup\.svm, line {text.count(chr(10))}: feature index {index} appears twice"):
        read_svmlight(path, **kwargs)


def test_text_lines_split_at_newlines_only(tmp_path):
    # cp1252 "..." is byte 0x85, NEL once read as latin-1: a comment must not become a row
    p = tmp_path / "nel.svm"
    p.write_bytes("1 1:0.5 # see\u2026 -1 2:1\r\n-1 2:1\n".encode("cp1252"))
    X, y = read_svmlight(p)
    np.testing.assert_array_equal(y, [1.0, -1.0])
    np.testing.assert_array_equal(X.toarray(), [[0.5, 0.0], [0.0, 1.0]])


def test_read_csv_header_detection_keeps_numeric_rows(tmp_path):
    for first in ("0,1", "1,2"):  # a first row of small integers is data, not a column numbering
        X, y = read_csv(_write(tmp_path / "n.csv", f"{first}\n1,0.5\n0,1.5\n"))
        assert X.shape == (3, 1) and y[0] == float(first[0])
    X, y = read_csv(_write(tmp_path / "h.csv", "label,a\n1,0.5\n"))  # a text header is still detected
    assert X.shape == (1, 1)
    # an empty field on the first line is reported, not taken for a header
    with pytest.raises(ValueError, match=r"e\.csv, line 1, column 1: value '' is not a number"):
        read_csv(_write(tmp_path / "e.csv", "1,,3\n0,4,5\n"))
    # a byte-order mark (Excel's "CSV UTF-8") is not part of the first field
    p = tmp_path / "bom.csv"
    p.write_bytes("1,0.5\n-1,1.5\n1,2.5\n".encode("utf-8-sig"))
    X, y = read_csv(p)
    np.testing.assert_array_equal(y, [1.0, -1.0, 1.0])
    with pytest.raises(ValueError, match=r"line 2: a feature value is not a finite number"):
        read_csv(_write(tmp_path / "f.csv", "1,0.5\n0,inf\n"))
    with pytest.raises(ValueError, match=r"line 2, column 0: the label is missing \('nan'\)"):
        read_csv(_write(tmp_path / "g.csv", "1,0.5\nnan,1\n"))
    with pytest.raises(ValueError, match=r"line 2: the label is not a finite number"):
        read_csv(_write(tmp_path / "g.csv", "1,0.5\n-inf,1\n"))


def test_read_csv_checks_drop_columns_and_features(tmp_path):
    p = _write(tmp_path / "d.csv", "7,1,0.5\n8,0,1.5\n")
    with pytest.raises(ValueError, match=r"drop_columns=\(3,\): columns must be in range for 3 columns"):
        read_csv(p, label_column=1, drop_columns=(3,))
    with pytest.raises(ValueError, match="must not include label_column=1"):
        read_csv(p, label_column=1, drop_columns=(1,))
    with pytest.raises(ValueError, match="no feature column with delimiter"):
        read_csv(_write(tmp_path / "t.csv", "1\t0.5\n0\t1.5\n"))


def test_load_path_reads_tsv_and_comma_files_without_suffix(tmp_path):
    ds = load(_write(tmp_path / "a.tsv.gz", "1\t0.5\t2\n-1\t1.5\t-1\n"))
    np.testing.assert_array_equal(ds.X, [[0.5, 2.0], [1.5, -1.0]])
    np.testing.assert_array_equal(ds.y, [1.0, -1.0])
    ds = load(_write(tmp_path / "b.data", "1,0.5,2\n-1,1.5,-1\n"))  # commas -> CSV, whatever the suffix
    np.testing.assert_array_equal(ds.X, [[0.5, 2.0], [1.5, -1.0]])


def test_read_dense_rejects_non_finite_values(tmp_path):
    with pytest.raises(ValueError, match=r"line 2: the label is not a finite number"):
        read_dense(_write(tmp_path / "a.dense", "1 2\nnan 3\n"))
    with pytest.raises(ValueError, match=r"line 1: a feature value is not a finite number"):
        read_dense(_write(tmp_path / "b.dense", "1 -inf\n"))


def test_read_csv_variants(tmp_path):
    p = _write(tmp_path / "a.csv.gz", "0,1,2\n1,0.5,2\n0,1.5,-1\n")  # pandas-style numeric header
    X, y = read_csv(p, header=True)
    np.testing.assert_array_equal(X, [[0.5, 2.0], [1.5, -1.0]])
    np.testing.assert_array_equal(y, [1.0, 0.0])
    X, y = read_csv(p)  # guessed: a line of numbers is data
    assert X.shape == (3, 2)
    p = _write(tmp_path / "b.csv", "0.5,2,g\n1.5,-1,b\n")
    X, y = read_csv(p, label_column=-1)
    assert X.shape == (2, 2) and y.tolist() == ["g", "b"]
    p = _write(tmp_path / "c.csv", "id,diag,f\n7,M,0.5\n8,B,1.5\n")
    X, y = read_csv(p, label_column=1, drop_columns=(0,))
    np.testing.assert_array_equal(X, [[0.5], [1.5]])
    p = _write(tmp_path / "e.csv", "1,0.5\n0,oops\n")
    with pytest.raises(ValueError, match=r"e\.csv, line 2, column 1.*oops"):
        read_csv(p)
    p = _write(tmp_path / "f.csv", "1,0.5\n0,1,2\n")
    with pytest.raises(ValueError, match="line 2: 3 fields, but line 1 has 2"):
        read_csv(p)


def test_load_csv_path_maps_larger_label_to_plus_one(tmp_path):
    p = _write(tmp_path / "g.csv.bz2", "label,x1,x2\n5,1,2\n7,3,4\n5,5,6\n")
    ds = load(p)
    np.testing.assert_array_equal(ds.y, [-1.0, 1.0, -1.0])
    assert ds.classes == (5.0, 7.0)
    np.testing.assert_array_equal(ds.X, [[1, 2], [3, 4], [5, 6]])
    assert sp.isspmatrix_csr(load(p, dense=False).X)


def test_read_dense(tmp_path):
    p = _write(tmp_path / "s.dense.xz", "1  -0.333333  1\n-1  0.5  -1\n\n")
    X, y = read_dense(p)
    np.testing.assert_array_equal(X, [[-0.333333, 1.0], [0.5, -1.0]])
    np.testing.assert_array_equal(y, [1.0, -1.0])
    ds = load(p)
    np.testing.assert_array_equal(ds.y, [1.0, -1.0])
    p = _write(tmp_path / "bad.dense", "1 2 3\n1 2\n")
    with pytest.raises(ValueError, match="line 2"):
        read_dense(p)


def test_read_idx_round_trip(tmp_path):
    arr = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    p = tmp_path / "x-idx3-ubyte.gz"
    with gzip.open(p, "wb") as fh:
        fh.write(struct.pack(">BBBB", 0, 0, 0x08, 3) + struct.pack(">III", 2, 3, 4) + arr.tobytes())
    np.testing.assert_array_equal(read_idx(p), arr)
    ints = np.array([-5, 70000, 3], dtype=">i4")
    p = tmp_path / "y-idx1"
    p.write_bytes(struct.pack(">BBBBI", 0, 0, 0x0C, 1, 3) + ints.tobytes())
    out = read_idx(p)
    assert out.dtype == np.int32 and out.tolist() == [-5, 70000, 3]
    p.write_bytes(b"\x01\x02\x08\x01" + b"\x00" * 8)
    with pytest.raises(ValueError, match="magic"):
        read_idx(p)
    p.write_bytes(struct.pack(">BBBBI", 0, 0, 0x08, 1, 5) + b"\x00\x01")
    with pytest.raises(ValueError, match="size mismatch"):
        read_idx(p)


# ---------------------------------------------------------------------------
# noisy_split
# ---------------------------------------------------------------------------
def _toy(n=1000, d=6, seed=0):
    X, y = make_gaussian_classes(n // 2, d=d, seed=seed)
    return X, y


@pytest.mark.parametrize("n", [10, 101, 997, 1000])
@pytest.mark.parametrize("flip", [0.05, 0.15, 0.3, 0.49])
def test_noisy_split_sizes_and_flip_counts(n, flip):
    rng = np.random.default_rng(n)
    X = rng.standard_normal((n, 3))
    y = rng.choice([-1.0, 1.0], size=n)
    s = noisy_split(X, y, flip=flip, seed=3)
    n_tr, n_va = round(0.4 * n), round(0.3 * n)
    assert (len(s.y_train), len(s.y_val), len(s.y_test)) == (n_tr, n_va, n - n_tr - n_va)
    assert s.X_train.shape == (n_tr, 3) and s.X_val.shape == (n_va, 3) and s.X_test.shape[0] == n - n_tr - n_va
    assert int(s.flipped_train.sum()) == round(flip * n_tr)
    assert int(s.flipped_val.sum()) == round(flip * n_va)
    np.testing.assert_array_equal(s.flipped_train, s.y_train != s.y_train_clean)
    np.testing.assert_array_equal(s.flipped_val, s.y_val != s.y_val_clean)
    # clean labels and test labels are the original ones at the chosen rows
    np.testing.assert_array_equal(s.y_train_clean, y[s.index_train])
    np.testing.assert_array_equal(s.y_val_clean, y[s.index_val])
    np.testing.assert_array_equal(s.y_test, y[s.index_test])
    np.testing.assert_array_equal(s.X_test, X[s.index_test])
    np.testing.assert_array_equal(s.y_train[s.flipped_train], -s.y_train_clean[s.flipped_train])
    all_idx = np.concatenate([s.index_train, s.index_val, s.index_test])
    assert sorted(all_idx.tolist()) == list(range(n))


@settings(max_examples=40, deadline=None, database=None)
@given(
    n=st.integers(3, 300),
    flip=st.floats(0.0, 0.49),
    a=st.floats(0.05, 0.9),
    seed=st.integers(0, 2**31),
)
def test_noisy_split_property(n, flip, a, seed):
    split = (a, (1 - a) / 2, (1 - a) / 2)
    y = np.where(np.arange(n) % 3 == 0, 1.0, -1.0)
    X = np.arange(n, dtype=float)[:, None]
    s = noisy_split(X, y, flip=flip, split=split, seed=seed)
    n_tr = round(a * n)
    assert len(s.y_train) == n_tr
    assert len(s.y_train) + len(s.y_val) + len(s.y_test) == n
    assert int(s.flipped_train.sum()) == round(flip * len(s.y_train))
    assert int(s.flipped_val.sum()) == round(flip * len(s.y_val))
    np.testing.assert_array_equal(s.X_train[:, 0].astype(int), s.index_train)


def test_noisy_split_flip_zero_and_reproducibility():
    X, y = _toy()
    s0 = noisy_split(X, y, flip=0.0, seed=5)
    np.testing.assert_array_equal(s0.y_train, s0.y_train_clean)
    np.testing.assert_array_equal(s0.y_val, s0.y_val_clean)
    assert not s0.flipped_train.any() and not s0.flipped_val.any()
    for noise in ("uniform", "adversarial"):
        a = noisy_split(X, y, flip=0.2, seed=5, noise=noise)
        b = noisy_split(X, y, flip=0.2, seed=5, noise=noise)
        c = noisy_split(X, y, flip=0.2, seed=6, noise=noise)
        for f in ("X_train", "y_train", "y_train_clean", "flipped_train", "X_val", "y_val", "flipped_val",
                  "X_test", "y_test"):
            np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
        assert not np.array_equal(a.index_train, c.index_train)
        assert not np.array_equal(a.y_train, c.y_train)
    u = noisy_split(X, y, flip=0.2, seed=5)
    assert not np.array_equal(u.flipped_train, noisy_split(X, y, flip=0.2, seed=6).flipped_train)


def _ref_margins_sklearn(X, y):
    """Independent reference boundary: sklearn Ridge with the documented lambda."""
    from sklearn.linear_model import Ridge

    Xd = X.toarray() if sp.issparse(X) else X
    Xc = Xd - Xd.mean(axis=0)
    lam = 1e-3 * float((Xc**2).sum()) / Xd.shape[1]
    model = Ridge(alpha=lam, fit_intercept=True, solver="cholesky").fit(Xd, y)
    return model


def test_fit_reference_boundary_matches_ridge():
    X, y = _toy(400, d=8, seed=2)
    w, b = fit_reference_boundary(X, y)
    model = _ref_margins_sklearn(X, y)
    np.testing.assert_allclose(w, model.coef_, rtol=1e-8, atol=1e-10)
    assert b == pytest.approx(model.intercept_, abs=1e-9)
    ws, bs = fit_reference_boundary(sp.csr_matrix(X), y)
    np.testing.assert_allclose(ws, w, rtol=1e-8, atol=1e-10)
    assert bs == pytest.approx(b, abs=1e-9)


def test_fit_reference_boundary_iterative_path_large_d():
    rng = np.random.default_rng(0)
    X = sp.random(300, 5000, density=0.01, format="csr", random_state=np.random.RandomState(0))
    y = rng.choice([-1.0, 1.0], size=300)
    w, b = fit_reference_boundary(X, y)
    model = _ref_margins_sklearn(X, y)
    pred = np.asarray(X @ w).ravel() + b
    np.testing.assert_allclose(pred, model.predict(X.toarray()), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls", [1, -1])
@pytest.mark.parametrize("sparse_input", [False, True])
def test_adversarial_noise_flips_the_most_confident_points_of_one_class(cls, sparse_input):
    X, y = _toy(1200, d=6, seed=4)
    Xin = sp.csr_matrix(X) if sparse_input else X
    flip = 0.15
    s = noisy_split(Xin, y, flip=flip, noise="adversarial", seed=2, adversarial_class=cls)
    if sparse_input:
        assert sp.isspmatrix_csr(s.X_train) and sp.isspmatrix_csr(s.X_test)
    fit_idx = np.concatenate([s.index_train, s.index_val])
    model = _ref_margins_sklearn(X[fit_idx], y[fit_idx])
    for idx, y_clean, flipped in ((s.index_train, s.y_train_clean, s.flipped_train),
                                  (s.index_val, s.y_val_clean, s.flipped_val)):
        assert int(flipped.sum()) == round(flip * len(idx))
        assert np.all(y_clean[flipped] == cls)  # only the chosen class
        margins = y_clean * model.predict(X[idx])
        same_class_kept = (y_clean == cls) & ~flipped
        assert margins[flipped].min() >= margins[same_class_kept].max() - 1e-9
    np.testing.assert_array_equal(s.y_test, y[s.index_test])


def test_adversarial_too_few_points_warns_and_flips_all():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((200, 3))
    y = -np.ones(200)
    y[:10] = 1.0
    X[:10] += 2.0
    with pytest.warns(RuntimeWarning, match="flipping all of them"):
        s = noisy_split(X, y, flip=0.2, noise="adversarial", seed=0)
    assert np.all(s.y_train[s.y_train_clean == 1.0] == -1.0)
    assert np.all(s.y_val[s.y_val_clean == 1.0] == -1.0)
    assert int(s.flipped_train.sum()) == int((s.y_train_clean == 1).sum()) < round(0.2 * 80)


def test_uniform_noise_with_csr_matches_dense():
    X, y = _toy(500, d=5, seed=9)
    a = noisy_split(X, y, flip=0.1, seed=3)
    b = noisy_split(sp.csr_matrix(X), y, flip=0.1, seed=3)
    assert sp.isspmatrix_csr(b.X_train) and sp.isspmatrix_csr(b.X_val) and sp.isspmatrix_csr(b.X_test)
    np.testing.assert_array_equal(b.X_train.toarray(), a.X_train)
    np.testing.assert_array_equal(b.y_train, a.y_train)
    np.testing.assert_array_equal(b.y_val, a.y_val)


def test_multiclass_flips_go_to_another_class():
    rng = np.random.default_rng(0)
    n = 3000
    y = rng.integers(0, 5, size=n)
    X = rng.standard_normal((n, 2))
    s = noisy_split(X, y, flip=0.3, seed=1)
    assert s.y_train.dtype == y.dtype
    assert int(s.flipped_train.sum()) == round(0.3 * len(s.y_train))
    changed = s.flipped_train
    assert np.all(s.y_train[changed] != s.y_train_clean[changed])
    assert set(np.unique(s.y_train).tolist()) <= set(range(5))
    # every other class is reached, roughly uniformly
    targets = s.y_train[changed & (s.y_train_clean == 0)]
    counts = np.bincount(targets, minlength=5)
    assert counts[0] == 0 and counts[1:].min() > 0.5 * counts[1:].mean()
    # binary labels coded 0/1 also work (flip to the other class)
    yb = (y > 2).astype(np.int64)
    sb = noisy_split(X, yb, flip=0.1, seed=1)
    np.testing.assert_array_equal(sb.y_train[sb.flipped_train], 1 - sb.y_train_clean[sb.flipped_train])


@pytest.mark.parametrize(
    "kwargs, word",
    [
        ({"flip": 0.5}, "flip"),
        ({"flip": -0.01}, "flip"),
        ({"flip": float("nan")}, "flip"),
        ({"split": (0.5, 0.3, 0.3)}, "split"),
        ({"split": (0.5, 0.5)}, "split"),
        ({"split": (1.2, -0.1, -0.1)}, "split"),
        ({"noise": "gaussian"}, "noise"),
        ({"max_samples": 0}, "max_samples"),
        ({"max_samples": float("nan")}, "max_samples must be a positive integer or None, got nan"),
        ({"max_samples": float("inf")}, "max_samples must be a positive integer or None, got inf"),
        ({"adversarial_class": 0}, "adversarial_class"),
    ],
)
def test_noisy_split_validates_arguments(kwargs, word):
    X, y = _toy(100, d=3)
    with pytest.raises(ValueError, match=word):
        noisy_split(X, y, **kwargs)


def test_noisy_split_validates_shapes_and_labels():
    X, y = _toy(100, d=3)
    with pytest.raises(ValueError, match="X and y"):
        noisy_split(X, y[:-1])
    with pytest.raises(ValueError, match="y must be 1-D"):
        noisy_split(X, y[:, None])
    with pytest.raises(ValueError, match="X must be 2-D"):
        noisy_split(X[:, 0], y)
    with pytest.raises(ValueError, match="adversarial"):
        noisy_split(X, np.arange(100) % 3, noise="adversarial")


@pytest.mark.parametrize(
    "y", [np.zeros(100, int), np.full(100, "a"), np.ones(100), -np.ones(100, int), np.ones(100, bool),
          np.ones(100, np.uint8)], ids=["int 0", "str", "float +1", "int -1", "bool", "uint8"],
)
def test_noisy_split_refuses_to_flip_a_single_class_whatever_its_dtype(y):
    X = np.random.default_rng(0).normal(size=(100, 3))
    for noise in ("uniform", "adversarial"):
        with pytest.raises(ValueError, match="single class|adversarial"):
            noisy_split(X, y, flip=0.2, seed=0, noise=noise)
    with pytest.raises(ValueError, match="y has a single class, so labels cannot be flipped"):
        noisy_split(X, y, flip=0.2, seed=0)
    s = noisy_split(X, y, flip=0.0, seed=0)
    assert not s.flipped_train.any() and np.array_equal(np.unique(s.y_train), np.unique(y))


def test_max_samples_subsamples_without_replacement():
    X, y = _toy(1000, d=3)
    s = noisy_split(X, y, flip=0.1, seed=0, max_samples=300)
    idx = np.concatenate([s.index_train, s.index_val, s.index_test])
    assert len(idx) == 300 and len(np.unique(idx)) == 300
    assert (len(s.y_train), len(s.y_val), len(s.y_test)) == (120, 90, 90)
    s_all = noisy_split(X, y, flip=0.1, seed=0, max_samples=5000)
    assert len(s_all.y_train) + len(s_all.y_val) + len(s_all.y_test) == 1000


# ---------------------------------------------------------------------------
# make_gaussian_classes
# ---------------------------------------------------------------------------
def test_gaussian_classes_shapes_and_covariance():
    X, y, p = make_gaussian_classes(d=100, seed=0, return_params=True)
    assert X.dtype == np.float64 and y.dtype == np.float64
    assert X.shape == (p.n_pos + p.n_neg, 100) and y.shape == (X.shape[0],)
    assert 1000 <= p.n_pos <= 3000 and 1000 <= p.n_neg <= 3000
    assert int((y == 1).sum()) == p.n_pos and int((y == -1).sum()) == p.n_neg
    assert set(np.unique(y).tolist()) == {-1.0, 1.0}
    assert p.eigenvalues.max() / p.eigenvalues.min() == pytest.approx(10.0, abs=1e-12)
    ev = np.linalg.eigvalsh(p.cov)
    assert ev.max() / ev.min() == pytest.approx(10.0, rel=1e-8)
    np.testing.assert_allclose(p.rotation.T @ p.rotation, np.eye(100), atol=1e-10)
    # the covariance is genuinely rotated (not diagonal)
    off = p.cov - np.diag(np.diag(p.cov))
    assert np.abs(off).max() > 0.1
    # Mahalanobis distance between the means gives a 1% Bayes error
    delta = 2 * np.sqrt(p.mean @ np.linalg.solve(p.cov, p.mean))
    assert delta == pytest.approx(p.separation, rel=1e-10)
    assert p.bayes_error == pytest.approx(0.01, rel=1e-10)
    # empirical within-class moments agree with the parameters
    centred = X - y[:, None] * p.mean
    emp = centred.T @ centred / len(y)
    assert np.linalg.norm(emp - p.cov) / np.linalg.norm(p.cov) < 0.25
    np.testing.assert_allclose(X[y == 1].mean(axis=0), p.mean, atol=0.25)


def test_gaussian_classes_bayes_error_is_about_one_percent():
    X, y, p = make_gaussian_classes(25000, d=50, seed=11, return_params=True)
    pred = np.sign(X @ p.bayes_direction())
    err = float(np.mean(pred != y))
    assert 0.005 <= err <= 0.015, err


def test_gaussian_classes_flip_seed_and_validation():
    X1, y1 = make_gaussian_classes((100, 200), d=4, seed=3)
    X2, y2 = make_gaussian_classes((100, 200), d=4, seed=3)
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)
    X3, _ = make_gaussian_classes((100, 200), d=4, seed=4)
    assert X3.shape != X1.shape or not np.array_equal(X3, X1)
    Xf, yf = make_gaussian_classes((100, 200), d=4, seed=3, flip=0.1)
    np.testing.assert_array_equal(Xf, X1)
    assert int((yf != y1).sum()) == round(0.1 * len(y1))
    X, y = make_gaussian_classes(7, d=3)
    assert X.shape == (14, 3)
    for bad in ({"d": 1}, {"flip": 0.5}, {"n_per_class": (10, 5)}, {"separation": -1.0}, {"seed": -1}):
        (arg,) = bad
        with pytest.raises(ValueError, match=arg):
            make_gaussian_classes(**{"n_per_class": 10, **bad})


# ---------------------------------------------------------------------------
# files that must not load silently wrong
# ---------------------------------------------------------------------------
def test_a_corrupt_gzip_stream_is_a_value_error_naming_the_file(tmp_path):
    p = tmp_path / "bad.svm.gz"
    raw = bytearray(gzip.compress(b"1 1:1\n" * 1000))
    raw[20] ^= 0xFF  # damage the deflate stream, not the header: zlib.error, not an OSError
    raw[30] ^= 0xFF
    p.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"bad\.svm\.gz: cannot decompress"):
        load(p)


def test_csv_labels_empty_or_numbers_mixed_with_text_are_refused(tmp_path):
    p = _write(tmp_path / "empty.csv", "1,0.5\n,1.5\n-1,2\n")
    with pytest.raises(ValueError, match=r"empty\.csv, line 2, column 0: the label is empty"):
        read_csv(p)
    p = _write(tmp_path / "mixed.csv", "1,0.5\nx,1.5\n-1,2\n")
    with pytest.raises(ValueError, match=r"mixed\.csv, line 2, column 0: label 'x' is not a number, but line 1"):
        read_csv(p)
    for token in ("?", "NA", "nan"):  # a missing label, among numbers or text, is not one more class
        for first in ("1", "M"):
            p = _write(tmp_path / "missing.csv", f"{first},0.5\n{token},1.5\n{first},2\n")
            with pytest.raises(ValueError, match=rf"missing\.csv, line 2, column 0: the label is missing \('{re.escape(token)}'\)"):
                read_csv(p)
    X, y = read_csv(_write(tmp_path / "names.csv", "yes,0.5\nno,1.5\n"))  # text labels stay classes by name
    assert y.tolist() == ["yes", "no"]


def test_a_missing_value_token_on_the_first_line_is_data_not_a_header(tmp_path):
    p = _write(tmp_path / "q.csv", "1,?,2.5\n-1,0.5,1\n")
    with pytest.raises(ValueError, match=r"q\.csv, line 1, column 1: value '\?' is not a number"):
        read_csv(p)
    X, _ = read_csv(_write(tmp_path / "h.csv", "label,a,b\n1,0.5,2.5\n"))  # a real header still is one
    assert X.shape == (1, 2)


def test_a_field_count_mismatch_names_both_lines(tmp_path):
    p = _write(tmp_path / "d.dense", "1 0.5 2 3\n-1 0.5 1\n")
    with pytest.raises(ValueError, match=r"d\.dense, line 2: 3 fields, but line 1 has 4"):
        read_dense(p)


def test_an_idx_header_too_large_for_int64_names_the_file(tmp_path):
    p = tmp_path / "huge-idx3-ubyte"
    p.write_bytes(struct.pack(">BBBB", 0, 0, 0x08, 3) + struct.pack(">III", 2**31, 2**31, 2**31))  # 2**93 wraps to 0 in int64
    with pytest.raises(ValueError, match=r"huge-idx3-ubyte: IDX size mismatch"):
        read_idx(p)


def test_load_with_label_column_and_header_for_a_csv_file(tmp_path):
    p = _write(tmp_path / "last.csv", "0,1,2\n0.5,2,1\n1.5,-1,0\n")
    ds = load(p, label_column=-1, header=True)
    np.testing.assert_array_equal(ds.X, [[0.5, 2.0], [1.5, -1.0]])
    assert ds.classes == (0.0, 1.0) and ds.y.tolist() == [1.0, -1.0]


@pytest.mark.parametrize("name", ["ionosphere", "svmguide1.t", "heart"])
def test_the_path_of_a_registered_file_loads_that_data_set(shared_dir, name):
    by_name = load(name)
    by_path = load(shared_dir / DATASETS[name].files[0])
    assert by_path.name == name and by_path.classes == by_name.classes
    np.testing.assert_array_equal(by_path.y, by_name.y)
    np.testing.assert_array_equal(np.asarray(by_path.X.todense() if sp.issparse(by_path.X) else by_path.X),
                                  np.asarray(by_name.X.todense() if sp.issparse(by_name.X) else by_name.X))


def test_a_registered_file_of_the_wrong_size_names_the_file(monkeypatch, tmp_path):
    _write(tmp_path / "heart_scale.xz", "+1 1:0.5 2:1\n-1 1:0.25 2:-1\n")
    monkeypatch.setenv("ROBUSTREAM_DATASETS", str(tmp_path))
    with pytest.raises(ValueError, match=r"'heart': .*heart_scale\.xz gives 2 rows of 13 features, the registry "
                                         r"\(MANIFEST\.md\) says 270 of 13"):
        load("heart")


def test_mnist_images_and_labels_of_different_counts_name_both_files(monkeypatch, tmp_path):
    spec = DATASETS["mnist"]
    with gzip.open(tmp_path / spec.files[0], "wb") as fh:
        fh.write(struct.pack(">BBBB", 0, 0, 0x08, 3) + struct.pack(">III", 3, 2, 2) + bytes(12))
    with gzip.open(tmp_path / spec.files[1], "wb") as fh:
        fh.write(struct.pack(">BBBBI", 0, 0, 0x08, 1, 2) + bytes([1, 0]))
    monkeypatch.setenv("ROBUSTREAM_DATASETS", str(tmp_path))
    with pytest.raises(ValueError, match=r"images of shape \(3, 2, 2\) and .*labels of shape \(2,\)"):
        load("mnist")


def test_quoted_fields_may_hold_the_separator_and_the_header_must_fit(tmp_path):
    # a quoted "1,250.5" was split into two features, silently (every row alike, so no count error)
    with pytest.raises(ValueError, match=r"q\.csv, line 2, column 1: value '1,250\.5' is not a number"):
        read_csv(_write(tmp_path / "q.csv", 'label,price,qty\n1,"1,250.5",3\n0,"2,100.0",4\n'))
    X, y = read_csv(_write(tmp_path / "n.csv", 'label,name,x\n1,"Smith, J",3\n0,"Doe, A",4\n'), drop_columns=(1,))
    np.testing.assert_array_equal(X, [[3.0], [4.0]])
    np.testing.assert_array_equal(y, [1.0, 0.0])
    # R's write.table names no row-name column: the header is one field short
    with pytest.raises(ValueError, match=r"r\.csv, line 1: the header has 2 fields, but line 2 has 3"):
        read_csv(_write(tmp_path / "r.csv", '"x","label"\n"1",0.5,1\n"2",0.7,0\n'), label_column=-1)


def test_a_semicolon_file_is_read_as_such(tmp_path):
    p = _write(tmp_path / "eu.csv", "label;age;score\n1;34;0,5\n0;51;1,5\n1;29;2,5\n")
    # decimal commas are named, not read as a comma file (three one-row classes, garbage features)
    with pytest.raises(ValueError, match=r"eu\.csv, line 2, column 2: value '0,5' is not a number"):
        load(p)
    ds = load(_write(tmp_path / "plain.txt", "label;a;b\n1;34;0.5\n0;51;1.5\n1;29;2.5\n"))
    np.testing.assert_array_equal(ds.X, [[34.0, 0.5], [51.0, 1.5], [29.0, 2.5]])
    np.testing.assert_array_equal(ds.y, [1.0, -1.0, 1.0])
    ds = load(_write(tmp_path / "commas.csv", "label,a;b\n1,0.5\n0,1.5\n"))  # ";" on one line only: commas
    assert ds.X.shape == (2, 1)


def test_a_header_of_column_numbers_under_a_named_label_is_not_a_row(tmp_path):
    p = _write(tmp_path / "pd.csv", "diagnosis,0,1\nM,0.5,1\nB,1.5,2\nM,2.5,3\n")
    with pytest.raises(ValueError, match=r"pd\.csv, line 1: 'diagnosis,0,1' looks like a header of column numbers"):
        read_csv(p)
    X, y = read_csv(p, header=True)
    assert X.shape == (3, 2) and y.tolist() == ["M", "B", "M"]
    X, y = read_csv(p, header=False)  # the user's word
    assert X.shape == (4, 2)
    X, y = read_csv(_write(tmp_path / "d.csv", "M,0,1\nB,1.5,2\nM,2.5,3\n"))  # its label recurs: data
    assert X.shape == (3, 2)


def test_column_numbers_must_be_ints(tmp_path):
    p = _write(tmp_path / "c.csv", "1,0.5,2\n0,1.5,3\n")
    with pytest.raises(TypeError, match=r"label_column: a column number is an int, got float 1\.0"):
        read_csv(p, label_column=1.0)
    with pytest.raises(TypeError, match=r"drop_columns: a column number is an int, got True"):
        read_csv(p, drop_columns=(True,))
    with pytest.raises(TypeError, match=r"label_column: a column number is an int"):
        load(p, label_column=1.0)
    X, y = read_csv(p, label_column=np.int64(-1))
    np.testing.assert_array_equal(y, [2.0, 3.0])


def test_an_empty_or_comment_only_file_is_named(tmp_path):
    import gzip as gz

    (tmp_path / "e.svm.gz").write_bytes(b"")
    with pytest.raises(ValueError, match=r"e\.svm\.gz: cannot decompress \(\.gz file\): the file is empty"):
        load(tmp_path / "e.svm.gz")
    (tmp_path / "z.svm.gz").write_bytes(gz.compress(b"# nothing here\n\n"))
    with pytest.raises(ValueError, match=r"z\.svm\.gz: no data rows"):
        load(tmp_path / "z.svm.gz")
    with pytest.raises(ValueError, match=r"h\.csv: no data rows"):
        load(_write(tmp_path / "h.csv", "label,a\n"))


def test_a_query_id_that_is_not_an_integer_is_named(tmp_path):
    X, y = read_svmlight(_write(tmp_path / "ok.svm", "1 qid:3 1:0.5\n-1 qid:4 2:1\n"))
    assert X.shape == (2, 2)
    for bad in ("qid:abc", "qid:"):
        with pytest.raises(ValueError, match=rf"q\.svm, line 2: expected 'qid:<integer>', got '{bad}'"):
            read_svmlight(_write(tmp_path / "q.svm", f"1 qid:3 1:0.5\n-1 {bad} 2:1\n"))


def test_noisy_split_refuses_labels_it_cannot_flip_and_names_its_arguments():
    X = np.arange(40.0).reshape(20, 2)
    y = np.where(np.arange(20) % 2 == 0, 1.0, -1.0)
    y_nan = y.copy()
    y_nan[7] = np.nan  # NaN was a third class: +-1 labels flipped to NaN, and counted as flipped at flip=0
    with pytest.raises(ValueError, match=r"y\[7\] is nan: labels must be finite"):
        noisy_split(X, y_nan, flip=0.0)
    with pytest.raises(ValueError, match=r"^X and y have no rows$"):
        noisy_split(np.zeros((0, 2)), np.zeros(0))
    for reg in (np.nan, -1e6, "1", True):
        with pytest.raises(ValueError, match=r"reference_reg must be a finite number >= 0"):
            noisy_split(X, y, noise="adversarial", reference_reg=reg)
    with pytest.raises(ValueError, match=r"adversarial_class must be 1 or -1, got True"):
        noisy_split(X, y, noise="adversarial", adversarial_class=True)
    few = np.where(np.arange(20) < 2, 1.0, -1.0)  # too few points of class +1: a warning, not a format crash
    with pytest.warns(RuntimeWarning, match=r"points of class \+1 but"):
        s = noisy_split(X, few, flip=0.4, noise="adversarial", adversarial_class=1.0)
    assert not np.any(s.y_train_clean[s.flipped_train] == -1.0)


def test_gaussian_class_sizes_are_whole_numbers_and_separation_finite():
    for sizes in ((1.9, 3.7), True, (True, 3), 5.0, (1, 2, 3), "10"):
        with pytest.raises(ValueError, match=r"n_per_class must be an int or a \(low, high\) pair of ints"):
            make_gaussian_classes(sizes, d=3)
    with pytest.raises(ValueError, match=r"separation must be a finite number > 0, got inf"):
        make_gaussian_classes(10, d=3, separation=np.inf)
    X, y = make_gaussian_classes((np.int64(5), 8), d=3, seed=0)
    assert 10 <= len(y) <= 16


@pytest.mark.parametrize("kind", ["uint8", "sparse uint8", "sparse bool"])
def test_adversarial_flips_do_not_depend_on_the_dtype_of_x(kind):
    # X.T @ X in the input's dtype: uint8 pixels (read_idx's MNIST) overflowed and bools saturated, so
    # the reference boundary, and the points flipped, were wrong without a word
    rng = np.random.default_rng(0)
    raw = rng.integers(0, 256, (400, 20)).astype(np.uint8) if "uint8" in kind else rng.random((600, 20)) < 0.3
    y = np.where(raw[:, 0].astype(float) + raw[:, 1] >= (255 if "uint8" in kind else 1), 1.0, -1.0)
    X = sp.csr_matrix(raw) if "sparse" in kind else raw
    as_float = noisy_split(raw.astype(np.float64), y, flip=0.15, noise="adversarial", seed=0)
    split = noisy_split(X, y, flip=0.15, noise="adversarial", seed=0)
    np.testing.assert_array_equal(split.flipped_train, as_float.flipped_train)
    np.testing.assert_array_equal(split.flipped_val, as_float.flipped_val)
    np.testing.assert_allclose(fit_reference_boundary(X, y)[0], fit_reference_boundary(raw.astype(float), y)[0],
                               rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("sparse_input", [False, True])
def test_a_reference_boundary_names_a_value_that_is_not_finite(sparse_input):
    X = np.ones((5, 3))
    X[3, 2] = np.nan
    with pytest.raises(ValueError, match=r"X\[3, 2\] is nan: the features must be finite numbers"):
        fit_reference_boundary(sp.csr_matrix(X) if sparse_input else X, np.array([1.0, -1, 1, -1, 1]))


def _idx_pair(folder: Path, prefix: str, n: int = 3) -> tuple[Path, Path]:
    images, labels = folder / f"{prefix}-images-idx3-ubyte.gz", folder / f"{prefix}-labels-idx1-ubyte.gz"
    with gzip.open(images, "wb") as fh:
        fh.write(struct.pack(">BBBB", 0, 0, 0x08, 3) + struct.pack(">III", n, 2, 2) + bytes(range(4 * n)))
    with gzip.open(labels, "wb") as fh:
        fh.write(struct.pack(">BBBBI", 0, 0, 0x08, 1, n) + bytes([i % 2 for i in range(n)]))
    return images, labels


def test_an_idx_pair_loads_by_the_path_of_either_file(tmp_path):
    # IDX files were sniffed as text: "line 1: expected 'index:value', got '\x00\x00\x00'"
    images, labels = _idx_pair(tmp_path, "digits")
    for path in (images, labels):
        ds = load(path, binary=False)
        np.testing.assert_array_equal(ds.X, np.arange(12.0).reshape(3, 4))
        assert ds.y.tolist() == [0, 1, 0]
    labels.unlink()
    with pytest.raises(FileNotFoundError, match=r"an IDX file of images; its pair digits-labels-idx1-ubyte\.gz is "
                                                r"not beside it"):
        load(images)
    alone = tmp_path / "pixels.idx.gz"
    images.rename(alone)
    with pytest.raises(ValueError, match=r"pixels\.idx\.gz: an IDX file holds images or labels alone"):
        load(alone)


def test_the_path_of_a_shared_mnist_file_loads_mnist(shared_dir):
    for name in DATASETS["mnist"].files:
        ds = load(shared_dir / name)
        assert ds.name == "mnist" and ds.X.shape == (10000, 784) and ds.X.max() == 1.0


def test_a_copy_of_a_registered_file_loads_as_that_data_set_wherever_it_is(shared_dir, monkeypatch, tmp_path):
    # the file was recognised only inside the folder ROBUSTREAM_DATASETS names; elsewhere svmguide1.t's
    # header of column numbers became a row of class 0
    (tmp_path / "svmguide1.t.csv.xz").write_bytes((shared_dir / "svmguide1.t.csv.xz").read_bytes())
    monkeypatch.setenv("ROBUSTREAM_DATASETS", str(tmp_path / "elsewhere"))
    ds = load(tmp_path / "svmguide1.t.csv.xz")
    assert ds.name == "svmguide1.t" and ds.X.shape == (4000, 4)


def test_a_relabelled_registered_file_is_refused(monkeypatch, tmp_path):
    # the registry's label counts were never checked: classes swapped in a copy loaded without a word
    rows = [f"{'+1' if i < 150 else '-1'} 1:{i / 270:.4f} 13:0.5" for i in range(270)]  # heart: 120 +1, 150 -1
    _write(tmp_path / "heart_scale.xz", "\n".join(rows) + "\n")
    monkeypatch.setenv("ROBUSTREAM_DATASETS", str(tmp_path))
    with pytest.raises(ValueError, match=r"'heart': .*heart_scale\.xz gives the label counts \{-1\.0: 120, 1\.0: 150\}, "
                                         r"the registry \(MANIFEST\.md\) says \{-1\.0: 150, 1\.0: 120\}$"):
        load("heart")
    monkeypatch.setenv("ROBUSTREAM_DATASETS", str(tmp_path / "elsewhere"))
    with pytest.raises(ValueError, match=r"a file named heart_scale\.xz is read as the shared data set 'heart'; "
                                         r"rename it to load it as a plain file"):
        load(tmp_path / "heart_scale.xz")


def test_csv_reader_errors_name_the_file_and_line_and_old_mac_line_breaks_are_lines(tmp_path):
    # csv.Error escaped (and `robustream replay` printed a traceback); a file with \r line breaks was one line
    with pytest.raises(ValueError, match=r"big\.csv, line 2: field larger than field limit"):
        read_csv(_write(tmp_path / "big.csv", "label,a\n1," + "9" * 140_000 + "\n"))
    X, y = read_csv(_write(tmp_path / "mac.csv", "1,2,3\r0,4,5\r"))
    np.testing.assert_array_equal(X, [[2.0, 3.0], [4.0, 5.0]])
    np.testing.assert_array_equal(y, [1.0, 0.0])


@pytest.mark.parametrize("field", ["#N/A", "#VALUE!", "1.2.3", "missing"])
def test_a_missing_marker_or_a_mistyped_number_on_the_first_line_is_data(tmp_path, field):
    # such a field on line 1 made it a header: the row was dropped without a word (on line 2 it is an error)
    with pytest.raises(ValueError, match=rf"f\.csv, line 1, column 1: value '{re.escape(field)}' is not a number"):
        read_csv(_write(tmp_path / "f.csv", f"1,{field},3\n-1,0.5,1\n1,0.7,2\n"))


@pytest.mark.parametrize("seed", [-1, 1.5, "a", True])
def test_noisy_split_names_a_bad_seed(seed):
    # NumPy said "expected non-negative integer" or "SeedSequence expects int ...", naming no argument
    X, y = np.zeros((20, 2)), np.r_[np.ones(10), -np.ones(10)]
    with pytest.raises(ValueError, match=r"seed must be an integer in \[0, 2\*\*63\) or None; got "):
        noisy_split(X, y, seed=seed)
    assert noisy_split(X, y, seed=np.int64(3)).y_test.size == noisy_split(X, y, seed=None).y_test.size == 6
