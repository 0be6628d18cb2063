"""Johnson-Lindenstrauss sketches of rows: gaussian, achlioptas, srht and hashed.

Every sketch is linear, ``f(sum c_i x_i) = sum c_i f(x_i)``, which is what lets a solution found
on the sketch (a convex combination of sketched rows) be mapped back to full dimension with the
same coefficients over the original rows.
"""

from __future__ import annotations

import hashlib
from typing import Any, Hashable, Iterable, Mapping

import numpy as np
import scipy.sparse as sp

from .kernels import jl
from .rows import as_rows
from .validation import is_integer, numeric_row

SKETCH_KINDS = ("gaussian", "achlioptas", "srht", "hashed")
# Up to this many rows a solve works on the Gram matrix of the rows (<= 128 MB; it beats working sets):
# the polish's, which the RGD-tree reads its children's projections off too.
FULL_GRAM_ROWS = 4000
# sketch_dim="auto": k = 128 for more than 512 features on sparse rows (the tree would densify them) or
# on more than FULL_GRAM_ROWS rows. Fewer dense rows are not sketched: there the tree costs no more in full
# dimension, and the sketch only cost accuracy (streams at d = 1,000 / 2,000: 9.0 / 18.7% test error with
# it, 6.8 / 13.0% without, in the same CPU time; benchmarks/sketch_speed.py --stream)
AUTO_SKETCH_ABOVE, AUTO_SKETCH_DIM = 512, 128
_INDEX_TABLE_ROWS = 1 << 18  # column indices kept per (seed, hash_nnz, sketch_dim): 16 MB at hash_nnz 4
_INDEX_TABLES: dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray]] = {}


def resolve_sketch_dim(
    sketch_dim: int | str | None, n_features: int, n_rows: int | None = None, sparse: bool = False
) -> int | None:
    """The sketch dimension for ``n_rows`` rows (None: any number) of ``n_features`` columns:
    ``"auto"`` is 128 above 512 features when the rows are sparse or more than ``FULL_GRAM_ROWS``,
    and no sketch (None) otherwise; an int below ``n_features`` is returned as given, and None for
    one at least ``n_features``: a sketch as wide as the rows saves nothing and only distorts them.

    >>> resolve_sketch_dim("auto", 784), resolve_sketch_dim("auto", 784, n_rows=1500), resolve_sketch_dim(64, 100)
    (128, None, 64)
    >>> resolve_sketch_dim("auto", 784, n_rows=1500, sparse=True), resolve_sketch_dim("auto", 100, sparse=True)
    (128, None)
    >>> resolve_sketch_dim(64, 10) is None  # no sketch: 64 coordinates for rows of 10
    True
    """
    if sketch_dim == "auto":
        many_rows = n_rows is None or n_rows > FULL_GRAM_ROWS
        return AUTO_SKETCH_DIM if n_features > AUTO_SKETCH_ABOVE and (sparse or many_rows) else None
    return None if sketch_dim is None or sketch_dim >= n_features else sketch_dim


def _hashed_columns(names: Iterable[str], seed: int, hash_nnz: int, sketch_dim: int) -> tuple[np.ndarray, np.ndarray]:
    """``(positions, signs)``, one row of ``hash_nnz`` distinct positions per name: a BLAKE2b hash of
    the name keyed by the seed, so the same on every platform and run.

    Position j is word j modulo ``sketch_dim``; where it repeats an earlier position of the row, it
    is drawn among the free positions instead (word j modulo ``sketch_dim - j``, counted over the
    free ones), so every column has norm 1, as sparse JL transforms need.
    """
    key = seed.to_bytes(8, "little", signed=True)
    digests = b"".join(hashlib.blake2b(n.encode("utf-8"), digest_size=8 * hash_nnz, key=key).digest() for n in names)
    words = np.frombuffer(digests, dtype="<u8").reshape(-1, hash_nnz)
    positions = (words % np.uint64(sketch_dim)).astype(np.int64)
    for j in range(1, hash_nnz):
        clash = (positions[:, :j] == positions[:, j : j + 1]).any(axis=1)
        if clash.any():
            slot = (words[clash, j] % np.uint64(sketch_dim - j)).astype(np.int64)
            for taken in np.sort(positions[clash, :j], axis=1).T:  # ascending: the slot-th free position
                slot += slot >= taken
            positions[clash, j] = slot
    signs = np.where((words >> np.uint64(63)) == 1, -1.0, 1.0)
    return positions, signs


class JLSketch:
    """A seeded JL transform from d (or an open set of feature keys) to ``sketch_dim`` dimensions.

    Parameters
    ----------
    sketch_dim
        Target dimension k.
    kind
        ``"gaussian"`` (N(0, 1/k) entries), ``"achlioptas"`` (sqrt(3/k) * {+1, 0, -1} with
        probabilities 1/6, 2/3, 1/6; the JL paper's "binary" transform), ``"srht"`` (subsampled
        randomized Hadamard transform, O(d log d) per dense row) or ``"hashed"`` (each feature key
        adds +-1/sqrt(hash_nnz) to ``hash_nnz`` coordinates chosen by a keyed BLAKE2b hash of the
        key, so no fixed d is needed and the sketch is identical on every platform and run).
    seed
        Seed of the random projection (not used by the hash beyond keying it).
    hash_nnz
        Non-zeros per feature for the hashed sketch.

    Examples
    --------
    >>> import numpy as np
    >>> from robustream import JLSketch
    >>> sk = JLSketch(sketch_dim=8, kind="hashed", seed=1)
    >>> X = np.eye(3)
    >>> Z = sk.transform(X)
    >>> Z.shape
    (3, 8)
    >>> bool(np.allclose(sk.transform_one({0: 1.0}), Z[0]))
    True
    """

    def __init__(self, sketch_dim: int = 64, kind: str = "achlioptas", seed: int = 0, hash_nnz: int = 4):
        self.sketch_dim = sketch_dim
        self.kind = kind
        self.seed = seed
        self.hash_nnz = hash_nnz
        self._validate()
        self.n_features_: int | None = None
        self._projection: np.ndarray | None = None
        self._srht_signs: np.ndarray | None = None
        self._srht_sample: np.ndarray | None = None
        self._hash_cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def _validate(self) -> None:
        if self.kind not in SKETCH_KINDS:
            raise ValueError(f"sketch kind must be one of {SKETCH_KINDS}, got {self.kind!r}")
        if not is_integer(self.sketch_dim) or self.sketch_dim < 1:
            raise ValueError(f"sketch_dim must be a positive integer, got {self.sketch_dim!r}")
        if not is_integer(self.hash_nnz) or self.hash_nnz < 1:
            raise ValueError(f"hash_nnz must be a positive integer, got {self.hash_nnz!r}")
        if self.kind == "hashed" and self.hash_nnz > self.sketch_dim:  # the other kinds do not read it
            raise ValueError(f"hash_nnz must be at most sketch_dim ({self.sketch_dim}) for the hashed sketch, "
                             f"got {self.hash_nnz!r}")
        if not is_integer(self.seed) or not 0 <= self.seed < 2**63:
            raise ValueError(f"seed must be an integer in [0, 2**63), got {self.seed!r}")

    # -- construction -------------------------------------------------------------------------
    def fit(self, n_features: int) -> "JLSketch":
        """Draw the projection for ``n_features`` input columns (the hashed kind needs none)."""
        if not (is_integer(n_features) and n_features >= 0):  # int() took -3 (for srht and hashed), 2.7 and "5"
            raise ValueError(f"n_features must be a non-negative integer, got {n_features!r}")
        k, d = int(self.sketch_dim), int(n_features)
        if self.kind == "srht":  # before any fitted state is set: a refused fit leaves the sketch as it was
            D = 1 << max(0, int(np.ceil(np.log2(max(d, 1)))))
            if k > D:
                raise ValueError(f"srht needs sketch_dim <= {D} (the padded dimension), got {k}")
        self.n_features_ = d
        if self.kind == "hashed":
            return self
        rng = np.random.default_rng(self.seed)
        if self.kind == "gaussian":
            self._projection = rng.standard_normal((d, k)) / np.sqrt(k)
        elif self.kind == "achlioptas":
            u = rng.random((d, k))
            self._projection = np.sqrt(3.0 / k) * ((u < 1.0 / 6.0).astype(np.float64) - (u > 5.0 / 6.0))
        else:  # srht
            self._srht_signs = np.where(rng.random(D) < 0.5, -1.0, 1.0)
            self._srht_sample = np.sort(rng.choice(D, size=k, replace=False)).astype(np.int64)
        return self

    def feature_hash(self, key: Hashable) -> tuple[np.ndarray, np.ndarray]:
        """Positions and signs of one feature key in the hashed sketch (keys are compared as str)."""
        name = str(key)
        hit = self._hash_cache.get(name)
        if hit is not None:
            return hit
        positions, signs = _hashed_columns([name], int(self.seed), int(self.hash_nnz), int(self.sketch_dim))
        if len(self._hash_cache) >= 1 << 16:  # bounded: an open key set must not grow memory
            self._hash_cache.clear()
        self._hash_cache[name] = (positions[0], signs[0])
        return positions[0], signs[0]

    def _hash_table(self, n_features: int) -> tuple[np.ndarray, np.ndarray]:
        """Positions and signs of the columns 0 .. n_features - 1 (each hashed as ``str(j)``).

        The first ``_INDEX_TABLE_ROWS`` columns come from a table shared by every sketch with the
        same seed, ``hash_nnz`` and ``sketch_dim``: a streaming learner builds a new sketch at every
        rebuild, and hashing all its columns again cost ~10 us each (0.3 s per rebuild of 30,000
        sparse features).
        """
        key = (int(self.seed), int(self.hash_nnz), int(self.sketch_dim))
        pos, sgn = _INDEX_TABLES.get(key, (np.empty((0, key[1]), np.int64), np.empty((0, key[1]))))
        have = pos.shape[0]
        if have < min(n_features, _INDEX_TABLE_ROWS):
            more = _hashed_columns(map(str, range(have, min(max(n_features, 2 * have), _INDEX_TABLE_ROWS))), *key)
            pos, sgn = np.concatenate([pos, more[0]]), np.concatenate([sgn, more[1]])
            if len(_INDEX_TABLES) >= 8:  # a few (seed, nnz, k) in use at a time
                _INDEX_TABLES.clear()
            _INDEX_TABLES[key] = (pos, sgn)
        if n_features > pos.shape[0]:
            rest = _hashed_columns(map(str, range(pos.shape[0], n_features)), *key)
            return np.concatenate([pos, rest[0]]), np.concatenate([sgn, rest[1]])
        return pos[:n_features], sgn[:n_features]

    # -- application --------------------------------------------------------------------------
    def transform(self, X: Any) -> np.ndarray:
        """Sketch the rows of a dense array or scipy.sparse matrix; returns a dense (n, k) array."""
        sparse = sp.issparse(X)
        X = as_rows(X)
        d = X.shape[1]
        if self.kind != "hashed":
            if self.n_features_ is None:
                self.fit(d)
            elif d != self.n_features_:
                raise ValueError(f"X has {d} features, the sketch was drawn for {self.n_features_}")
        k = int(self.sketch_dim)
        if self.kind == "hashed":
            pos, sgn = self._hash_table(d)
            scale = 1.0 / np.sqrt(self.hash_nnz)
            if sparse:
                return jl.hashed_csr_rows(X.data, X.indices.astype(np.int64), X.indptr.astype(np.int64), pos, sgn, k, scale)
            csr = sp.csr_matrix(X)
            return jl.hashed_csr_rows(csr.data, csr.indices.astype(np.int64), csr.indptr.astype(np.int64), pos, sgn, k, scale)
        if self.kind == "srht":
            if sparse:
                return jl.srht_csr_rows(
                    X.data, X.indices.astype(np.int64), X.indptr.astype(np.int64), self._srht_signs, self._srht_sample
                )
            return jl.srht_rows(X, self._srht_signs, self._srht_sample)
        if sparse:
            return jl.csr_times_dense(X.data, X.indices.astype(np.int64), X.indptr.astype(np.int64), self._projection)
        return X @ self._projection

    def transform_one(self, x: Mapping[Hashable, float]) -> np.ndarray:
        """Sketch one dict row. Hashed: any keys; other kinds: integer keys below ``n_features_``."""
        x = numeric_row(x, x)  # the learners' check: None was read as 0, NaN passed through
        k = int(self.sketch_dim)
        out = np.zeros(k)
        if self.kind == "hashed":
            scale = 1.0 / np.sqrt(self.hash_nnz)
            for key, value in x.items():
                pos, sgn = self.feature_hash(key)
                np.add.at(out, pos, value * scale * sgn)
            return out
        if self.n_features_ is None:
            raise ValueError(f"a {self.kind!r} sketch needs fit(n_features) before transform_one")
        if not all(isinstance(key, (int, np.integer)) and 0 <= key < self.n_features_ for key in x):
            raise ValueError(
                f"feature keys must be integers in [0, {self.n_features_}) for a {self.kind!r} sketch; "
                "use kind='hashed' for named or open-ended features"
            )
        cols = np.fromiter(x.keys(), dtype=np.int64, count=len(x))
        vals = np.fromiter(x.values(), dtype=np.float64, count=len(x))
        row = sp.csr_matrix((vals, cols, [0, cols.size]), shape=(1, self.n_features_))
        return self.transform(row)[0]

    # -- state ----------------------------------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        """Plain parameters that rebuild the identical sketch (the projection is re-drawn from the seed)."""
        return {
            "sketch_dim": int(self.sketch_dim),
            "kind": self.kind,
            "seed": int(self.seed),
            "hash_nnz": int(self.hash_nnz),
            "n_features": self.n_features_,
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> "JLSketch":
        """Inverse of :meth:`get_state`."""
        sk = cls(state["sketch_dim"], state["kind"], state["seed"], state["hash_nnz"])
        if state.get("n_features") is not None:
            sk.fit(state["n_features"])
        return sk


def make_sketch(kind: str, sketch_dim: int | str | None, n_features: int, seed: int, n_rows: int | None = None,
                sparse: bool = False) -> JLSketch | None:
    """The :class:`JLSketch` an estimator uses for ``n_rows`` rows of ``n_features`` columns (None: no
    sketch).

    ``sketch_dim`` as :func:`resolve_sketch_dim` reads it (no sketch when it is at least ``n_features``).

    >>> make_sketch("srht", 64, 100, seed=0).sketch_dim, make_sketch("srht", 64, 10, seed=0)
    (64, None)
    """
    k = resolve_sketch_dim(sketch_dim, n_features, n_rows, sparse)
    return None if k is None else JLSketch(int(k), kind, seed, hash_nnz=min(4, int(k)))
