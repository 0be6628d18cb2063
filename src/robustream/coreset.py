"""The bounded memory of a streaming learner: a window of recent rows plus a maintained coreset.

Rows are mappings of features with a label in {-1, +1}: dicts (sparse rows stay sparse), or
:class:`DenseRow` arrays for rows that hold every feature of a dense stream. Between rebuilds,
``learn_one`` only appends to the window; a rebuild solves on coreset + window and keeps, as the new
coreset, the rows that carry the solution's convex coefficients plus the lowest-margin inliers (the
max-margin coreset rule: points whose margin is below (1 - eps) rho are the ones that can change the
solution). A row may sit in both (it is stored once and used once). Memory is bounded by
``coreset_size + window_size`` rows.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from itertools import chain
from operator import itemgetter
from typing import Hashable, Iterable

import numpy as np
import scipy.sparse as sp

from .kernels.dot import all_finite_nonzero

Row = Mapping  # feature key -> float: a dict, or a DenseRow


class DenseRow(Mapping):
    """A buffered row holding every feature of its stream's key list, in that order, none of them
    zero: the rows of a dense stream share one key list (and its index), and the values are one
    float64 array. At 100 features that is about 0.9 KB against about 7 KB for a dict of Python
    floats, and a rebuild reads the array as it is. Read-only; equal to the dict of its items.

    >>> row = DenseRow(["a", "b"], {"a": 0, "b": 1}, np.array([1.5, -2.0]))
    >>> dict(row), row["b"], len(row), "c" in row, row == {"a": 1.5, "b": -2.0}
    ({'a': 1.5, 'b': -2.0}, -2.0, 2, False, True)
    """

    __slots__ = ("_keys", "_index", "_values")

    def __init__(self, keys: list, index: dict, values: np.ndarray):
        self._keys, self._index, self._values = keys, index, values

    def __getitem__(self, key: Hashable) -> float:
        return float(self._values[self._index[key]])

    def __iter__(self):
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def values(self) -> list[float]:  # one C call instead of a lookup per key
        return self._values.tolist()

    def items(self) -> list[tuple[Hashable, float]]:
        return list(zip(self._keys, self._values.tolist()))

    def __reduce__(self):
        return (DenseRow, (self._keys, self._index, self._values))

    def __repr__(self) -> str:
        return f"DenseRow({dict(self.items())!r})"


def pack_rows(items: list[tuple[Row, float]]) -> dict:
    """``items`` (``(row, sign)`` pairs) as a table that is fast to write: the values of the
    :class:`DenseRow` rows that share a key list as one 2-D array, every other row as it is, the
    signs as one array. :func:`unpack_rows` gives the pairs back (new pairs of equal rows).

    A model's state holds thousands of rows; a writer that walks objects (pickle, the daemon's
    checkpoints) then writes a few arrays instead of an object per row.

    >>> rows = [(DenseRow(["a", "b"], {"a": 0, "b": 1}, np.array([1.5, -2.0])), 1.0), ({"c": 3.0}, -1.0)]
    >>> [(dict(row), sign) for row, sign in unpack_rows(pack_rows(rows))]
    [({'a': 1.5, 'b': -2.0}, 1.0), ({'c': 3.0}, -1.0)]
    """
    groups: dict[int, tuple[list, dict, list[int], list[np.ndarray]]] = {}
    other = []
    for at, (row, _) in enumerate(items):
        if type(row) is DenseRow:
            group = groups.get(id(row._keys))
            if group is None:
                group = groups[id(row._keys)] = (row._keys, row._index, [], [])
            group[2].append(at)
            group[3].append(row._values)
        else:
            other.append([at, row])
    return {
        "signs": np.array([sign for _, sign in items], dtype=np.float64),
        "dense": [[keys, index, np.array(at, dtype=np.int64), np.vstack(values)]
                  for keys, index, at, values in groups.values()],  # fmt: skip
        "other": other,
    }


def unpack_rows(table: dict) -> list[tuple[Row, float]]:
    """The ``(row, sign)`` pairs of :func:`pack_rows`'s table, in their order."""
    rows: list = [None] * len(table["signs"])
    for keys, index, at, values in table["dense"]:
        for i, row_values in zip(at.tolist(), values):
            rows[i] = DenseRow(keys, index, row_values.copy())
    for i, row in table["other"]:
        rows[i] = row
    return list(zip(rows, table["signs"].tolist()))


class RowBuffer:
    """Window (FIFO, ``window_size`` rows) plus coreset (at most ``coreset_size`` rows)."""

    def __init__(self, window_size: int, coreset_size: int):
        self.window: deque[tuple[Row, float]] = deque(maxlen=int(window_size))  # deque refuses NumPy's ints
        self.coreset: list[tuple[Row, float]] = []
        self.coreset_size = int(coreset_size)
        # column cache of matrix(): id(row) -> (row, column indices, values) over self._features
        self._columns: dict[int, tuple] = {}
        self._features: list[Hashable] = []
        self._index: dict[Hashable, int] = {}
        self._full = np.arange(0)  # the column indices of a row holding every feature (shared)
        self._keys_checked: list | None = None  # the last key order append() compared with _features ...
        self._keys_same = False  # ... and whether it was theirs
        self._values_of = None  # dense_row's reader of _features' values from a row (a tuple of them)

    _CACHE = ("_columns", "_features", "_index", "_full", "_keys_checked", "_keys_same", "_values_of")

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        for name in self._CACHE:  # a cache keyed by object ids: not for a copy
            del state[name]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._columns, self._features, self._index, self._full = {}, [], {}, np.arange(0)
        self._keys_checked, self._keys_same, self._values_of = None, False, None

    def _check_keys(self, keys: list) -> bool:
        """Whether ``keys`` (a row's keys in canonical order) are the features of the last :meth:`matrix`."""
        if keys is not self._keys_checked:  # a stream mostly repeats one key order: compared once
            self._keys_checked, self._keys_same = keys, keys == self._features
            if not (self._keys_same and keys):
                self._values_of = None
            elif len(keys) == 1:  # itemgetter of one key returns the value, not a 1-tuple
                self._values_of = lambda x, key=keys[0]: (x[key],)
            else:
                self._values_of = itemgetter(*keys)
        return self._keys_same

    def dense_row(self, x: dict, keys: list) -> DenseRow | None:
        """The :class:`DenseRow` :meth:`append` would store for the row of the values of ``x`` (keys
        ``keys``, in canonical order), when it holds every feature of the last :meth:`matrix`, as
        finite non-zero real numbers; None otherwise (the caller then validates ``x`` value by value).
        The fast path of a dense stream: one C call reads the values in the features' order.

        >>> buffer = RowBuffer(window_size=4, coreset_size=2)
        >>> buffer.append({"a": 1.0, "b": 2.0}, 1.0, ["a", "b"])
        >>> _ = buffer.matrix(buffer.rows())  # the features are now ["a", "b"]
        >>> buffer.dense_row({"b": -1.0, "a": 0.5}, ["a", "b"]), buffer.dense_row({"a": 0.0, "b": 1.0}, ["a", "b"])
        (DenseRow({'a': 0.5, 'b': -1.0}), None)
        """
        if len(x) != len(self._features) or not self._check_keys(keys) or self._values_of is None:
            return None
        try:  # float64 when every value is a real number (not text, None, a sequence, an int beyond floats)
            values = np.array(self._values_of(x))
        except ValueError:  # sequences of different lengths
            return None
        if values.dtype != np.float64 or values.ndim != 1 or not all_finite_nonzero(values):
            return None
        return DenseRow(self._features, self._index, values)

    def append(self, row: Row, sign: float, keys: list) -> None:
        """Append ``(row, sign)`` to the window; ``keys``: the key order the row was built in.

        A row holding every feature of the last :meth:`matrix` as finite non-zero numbers (a
        :meth:`dense_row` already, or a dict it converts) is stored as a :class:`DenseRow` and enters
        the matrix cache now, while its values are still in the CPU cache: converting dict rows at
        the rebuild, scattered in memory by then, cost several times as much
        (``benchmarks/stream_throughput.py``).
        """
        window = self.window
        if len(window) == window.maxlen:  # the cache holds no more rows than the buffer (a coreset row
            self._columns.pop(id(window[0]), None)  # leaving the window is looked up again if needed)
        dense = row if type(row) is DenseRow and row._keys is self._features else self.dense_row(row, keys)
        item = (row if dense is None else dense, sign)
        if dense is not None:
            self._columns[id(item)] = (item, self._full, dense._values)
        window.append(item)

    def matrix(self, rows: list[tuple[Row, float]]) -> tuple[list[Hashable], np.ndarray | sp.csr_matrix]:
        """``(features, X)``: the canonical feature order of ``rows`` and their matrix over it.

        ``X`` is a dense array when every row holds every feature (a dense stream: no cell to fill
        in), a CSR matrix otherwise. The columns are ``feature_order(rows)``; while the rows'
        feature set is unchanged a row's column indices and values are kept from the previous call,
        so a rebuild converts only the rows that arrived since the last one.
        """
        cache, index = self._columns, self._index
        features, full = self._features, self._full
        entries = list(map(cache.get, map(id, rows)))
        for i, (e, item) in enumerate(zip(entries, rows)):
            if e is None or e[0] is not item:  # not cached (or another row's id): a dense row of these
                x = item[0]  # features (a coreset row that left the window) is read as it is
                entries[i] = (item, full, x._values) if type(x) is DenseRow and x._keys is features else None
        missing = [i for i, e in enumerate(entries) if e is None]
        # same feature set: no new key in the new rows, and (checked below) no feature left with old rows
        same = bool(rows) and all(index.keys() >= rows[i][0].keys() for i in missing)
        if same:
            for i, e in zip(missing, _columns_of([rows[i] for i in missing], features, index, full)):
                entries[i] = e
            # a row that holds every feature covers them all; otherwise count the rows of each
            if not any(e[1] is full for e in entries):
                same = bool(np.bincount(np.concatenate([e[1] for e in entries]), minlength=len(features)).all())
        if not same:
            features = feature_order(x for x, _ in rows)
            index = {f: j for j, f in enumerate(features)}
            full = np.arange(len(features))
            entries = _columns_of(rows, features, index, full)
        self._columns = {id(e[0]): e for e in entries}
        if features is not self._features:
            self._keys_checked = None
        self._features, self._index, self._full = features, index, full
        if features and entries and all(e[1] is full for e in entries):
            # concatenate + reshape: np.stack costs 8x as much on 1,500 rows of 100 (its per-array checks)
            return features, np.concatenate([e[2] for e in entries]).reshape(len(entries), len(features))
        cols = np.concatenate([e[1] for e in entries]) if entries else np.zeros(0, np.int64)
        indptr = np.zeros(len(rows) + 1, np.int64)
        np.cumsum([e[1].size for e in entries], out=indptr[1:])
        vals = np.concatenate([e[2] for e in entries]) if entries else np.zeros(0)
        return features, sp.csr_matrix((vals, cols, indptr), shape=(len(rows), len(features)))

    def __len__(self) -> int:
        return len(self.rows())

    def rows(self) -> list[tuple[Row, float]]:
        """Coreset rows not also in the window (by identity), then the window, oldest first."""
        in_window = {id(item) for item in self.window}
        return [item for item in self.coreset if id(item) not in in_window] + list(self.window)

    def refresh_coreset(
        self,
        rows: list[tuple[Row, float]],
        convex_coef: np.ndarray,
        margins: np.ndarray,
        inlier: np.ndarray,
        seed: int,
        low_margin_share: float = 0.5,
    ) -> None:
        """Keep the support rows (non-zero coefficients), then low-margin and random inliers.

        ``low_margin_share`` of the free places go to the lowest-margin inliers (the max-margin
        coreset rule), the rest to a uniform sample of the inliers, which keeps the class
        geometry of the past unbiased for the next trim.
        """
        support = np.flatnonzero(convex_coef > 0)
        support = support[np.argsort(-convex_coef[support], kind="stable")][: self.coreset_size]
        chosen = np.zeros(len(rows), dtype=bool)
        chosen[support] = True
        n_low = int(round(low_margin_share * (self.coreset_size - support.size)))
        candidates = np.flatnonzero(inlier)
        by_margin = candidates[np.argsort(margins[candidates], kind="stable")]
        chosen[by_margin[~chosen[by_margin]][:n_low]] = True
        rest = candidates[~chosen[candidates]]  # increasing, as the sample below expects
        take = min(self.coreset_size - int(chosen.sum()), rest.size)
        if take > 0:
            chosen[np.random.default_rng(seed).choice(rest, take, replace=False)] = True
        self.coreset = [rows[i] for i in np.flatnonzero(chosen).tolist()]


def _columns_of(items: list[tuple[Row, float]], features: list, index: dict, full: np.ndarray) -> list[tuple]:
    """``(item, column indices, values)`` of each row's non-zero features (one pass over all rows).

    A row that holds every feature of ``features``, in that order and none of them zero, gets
    ``full`` (the shared ``arange``) as its column indices: no key is looked up.
    """
    n_features = len(features)
    is_full = [len(x) == n_features and (x._keys == features if type(x) is DenseRow else list(x) == features)
               for x, _ in items]  # fmt: skip
    sparse = [item for item, f in zip(items, is_full) if not f]
    sizes = np.fromiter(map(len, (x for x, _ in sparse)), np.int64, len(sparse))
    total = int(sizes.sum())
    cols = np.fromiter(map(index.__getitem__, chain.from_iterable(x.keys() for x, _ in sparse)), np.int64, total)
    vals = np.fromiter(chain.from_iterable(x.values() for x, _ in items), np.float64)
    out = []
    start = sparse_start = 0
    ends = iter(np.cumsum(sizes).tolist())
    for item, f in zip(items, is_full):
        if f:
            v = vals[start:start + n_features]
            start += n_features
            if v.all():  # copies: a cached row must not keep its whole batch's arrays alive
                out.append((item, full, v.copy()))
                continue
            c = full
        else:
            end = next(ends)
            c = cols[sparse_start:end]
            v = vals[start:start + end - sparse_start]
            start += end - sparse_start
            sparse_start = end
        nz = v != 0.0
        out.append((item, c.copy(), v.copy()) if nz.all() else (item, c[nz], v[nz]))
    return out


def feature_order(rows: Iterable[Row]) -> list[Hashable]:
    """All keys of the rows in a canonical order (by type name, then text), independent of arrival."""
    keys = set()
    for x in rows:
        keys.update(x.keys())
    return sorted(keys, key=key_order)


def key_order(key: Hashable) -> tuple[str, str]:
    """Canonical sort key of a feature key (by type name, then text)."""
    return (type(key).__name__, str(key))
