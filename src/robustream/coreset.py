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


def rows_to_matrix(rows: Iterable[Row], features: list[Hashable]) -> sp.csr_matrix:
    """CSR matrix of dict rows over the given feature order (unknown keys are ignored)."""
    index = {f: j for j, f in enumerate(features)}
    data, cols, indptr = [], [], [0]
    for x in rows:
        for key, value in x.items():
            j = index.get(key)
            if j is not None and value != 0:
                cols.append(j)
                data.append(float(value))
        indptr.append(len(cols))
    return sp.csr_matrix((np.asarray(data, float), np.asarray(cols, np.int64), np.asarray(indptr, np.int64)),
                         shape=(len(indptr) - 1, len(features)))  # fmt: skip


def feature_order(rows: Iterable[Row]) -> list[Hashable]:
    """All keys of the rows in a canonical order (by type name, then text), independent of arrival."""
    keys = set()
    for x in rows:
        keys.update(x.keys())
    return sorted(keys, key=key_order)


def key_order(key: Hashable) -> tuple[str, str]:
    """Canonical sort key of a feature key (by type name, then text)."""
    return (type(key).__name__, str(key))
