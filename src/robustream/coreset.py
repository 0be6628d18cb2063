"""The bounded memory of a streaming learner: a window of recent rows plus a maintained coreset.

Rows are dicts of features (sparse rows stay sparse) with a label in {-1, +1}. Between rebuilds,
``learn_one`` only appends to the window; a rebuild solves on coreset + window and keeps, as the new
coreset, the rows that carry the solution's convex coefficients plus the lowest-margin inliers (the
max-margin coreset rule: points whose margin is below (1 - eps) rho are the ones that can change the
solution). A row may sit in both (it is stored once and used once). Memory is bounded by
``coreset_size + window_size`` rows.
"""

from __future__ import annotations

from collections import deque
from itertools import chain
from typing import Hashable, Iterable

import numpy as np
import scipy.sparse as sp

Row = dict  # feature key -> float


class RowBuffer:
    """Window (FIFO, ``window_size`` rows) plus coreset (at most ``coreset_size`` rows)."""

    def __init__(self, window_size: int, coreset_size: int):
        self.window: deque[tuple[Row, float]] = deque(maxlen=window_size)
        self.coreset: list[tuple[Row, float]] = []
        self.coreset_size = coreset_size
        # column cache of matrix(): id(row) -> (row, column indices, values) over self._features
        self._columns: dict[int, tuple] = {}
        self._features: list[Hashable] = []
        self._index: dict[Hashable, int] = {}

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        for name in ("_columns", "_features", "_index"):  # a cache keyed by object ids: not for a copy
            del state[name]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._columns, self._features, self._index = {}, [], {}

    def matrix(self, rows: list[tuple[Row, float]]) -> tuple[list[Hashable], sp.csr_matrix]:
        """``(features, X)``: the canonical feature order of ``rows`` and their CSR matrix over it.

        The columns are ``feature_order(rows)``; while the rows' feature set is unchanged a row's
        column indices are kept from the previous call, so a rebuild converts only the rows that
        arrived since the last one.
        """
        cache, index = self._columns, self._index
        entries = [cache.get(id(item)) for item in rows]
        missing = [i for i, (e, item) in enumerate(zip(entries, rows)) if e is None or e[0] is not item]
        features = self._features
        # same feature set: no new key in the new rows, and (checked below) no feature left with old rows
        same = bool(rows) and all(index.keys() >= rows[i][0].keys() for i in missing)
        if same:
            for i, e in zip(missing, _columns_of([rows[i] for i in missing], index)):
                entries[i] = e
            cols = np.concatenate([e[1] for e in entries])
            same = bool(np.bincount(cols, minlength=len(features)).all())
        if not same:
            features = feature_order(x for x, _ in rows)
            index = {f: j for j, f in enumerate(features)}
            entries = _columns_of(rows, index)
            cols = np.concatenate([e[1] for e in entries]) if entries else np.zeros(0, np.int64)
        self._columns = {id(e[0]): e for e in entries}
        self._features, self._index = features, index
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
        chosen = set(support.tolist())
        free = self.coreset_size - len(chosen)
        n_low = int(round(low_margin_share * free))
        candidates = np.flatnonzero(inlier)
        for i in candidates[np.argsort(margins[candidates], kind="stable")]:
            if len(chosen) >= len(support) + n_low:
                break
            chosen.add(int(i))
        rest = np.setdiff1d(candidates, np.fromiter(chosen, dtype=np.int64, count=len(chosen)))
        take = min(self.coreset_size - len(chosen), rest.size)
        if take > 0:
            chosen.update(np.random.default_rng(seed).choice(rest, take, replace=False).tolist())
        self.coreset = [rows[i] for i in sorted(chosen)]


def _columns_of(items: list[tuple[Row, float]], index: dict) -> list[tuple]:
    """``(item, column indices, values)`` of each row's non-zero features (one pass over all rows)."""
    sizes = np.fromiter(map(len, (x for x, _ in items)), np.int64, len(items))
    total = int(sizes.sum())
    cols = np.fromiter(map(index.__getitem__, chain.from_iterable(x.keys() for x, _ in items)), np.int64, total)
    vals = np.fromiter(chain.from_iterable(x.values() for x, _ in items), np.float64, total)
    ends = np.cumsum(sizes).tolist()
    out = []
    start = 0
    for item, end in zip(items, ends):
        c, v = cols[start:end], vals[start:end]
        nz = v != 0.0
        # copies: a cached row must not keep its whole batch's arrays alive
        out.append((item, c.copy(), v.copy()) if nz.all() else (item, c[nz], v[nz]))
        start = end
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
