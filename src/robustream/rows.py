"""The row matrices every solver reads: one conversion, so matrices shared between solves agree."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike


def as_rows(X: ArrayLike | sp.spmatrix) -> np.ndarray | sp.csr_matrix:
    """``X`` as the solvers read it: C-contiguous float64, or float64 CSR with sorted indices and
    no duplicate entries. The order a sparse product adds its terms in depends on the index order,
    so a Gram matrix shared by several solves is the one each of them would compute only on
    canonical rows. No copy when ``X`` already is so; the caller's matrix is never changed.
    A ValueError for dense ``X`` that is not 2-D.

    >>> import scipy.sparse as sp
    >>> X = sp.csr_matrix(([1.0, 2.0, 3.0], [2, 0, 2], [0, 3]), shape=(1, 3))  # unsorted, duplicate
    >>> as_rows(X).toarray(), X.nnz
    (array([[2., 0., 4.]]), 3)
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        return X
    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (rows x features), got shape {X.shape}")
    return X
