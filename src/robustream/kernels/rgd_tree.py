"""Pruned two-class RGD-tree with boosting (Ding & Xu, "revisited Algorithm 2" and section 3).

A node is a point ``x`` of the Minkowski difference conv(P) - conv(Q). From a node, the candidate
sets are the ``ceil((1+delta) * n_discard_pos)`` rows of P with the smallest projections on x and
the ``ceil((1+delta) * n_discard_neg)`` rows of Q with the largest (at least one each); each child
comes from a random difference ``s = p - q`` of candidates: the point of the segment [x, s]
closest to the origin (clipped formula; children with t = 0 up to rounding, i.e. no progress, and
zero samples ``s = 0`` from duplicate rows with opposite labels, are dropped). Each level keeps the
``level_width`` children with the widest trimmed margin (the width after discarding
``n_discard_pos`` / ``n_discard_neg`` rows, allowed to be negative); boosting re-roots at the best
node until the best width stops improving. This is a heuristic search (the proven tree height is
astronomically large on real data), measured in ``benchmarks/``.

Cost per level: the children's projections on the n rows plus a linear-time selection per child.
The projections come from the parent's projections and a Gram matrix of the rows (O(n) per child;
:func:`child_projections`): the solve's, or one the tree computes once it has evaluated n / 2
children as matrix products ``children @ rows.T`` (O(n d) each; the Gram matrix costs about as
much as n / 2 of them).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .selection import smallest_k_indices, trimmed_widths

# A child's step t = (x.x - x.s) / |x - s|^2 is progress only if its numerator exceeds the rounding of
# x.x - x.s: a child re-sampling the pair it was made from has t = 0 exactly, and a rounding-level t of
# either sign made the kernel and its reference keep different children (103 of 200 trees of 22 rows).
# The floor is relative to x.x + |x.s|; the rounding of x.s scales with |x| |s|, which is larger when
# a sample lies far beyond the node (a feature of std 1e4 or more): there the two may still disagree.
# Steps this small move a node by nothing that counts.
STEP_FLOOR = 1e-12


@njit(cache=True, nogil=True)
def expand_node(x: np.ndarray, P: np.ndarray, Q: np.ndarray, pick_p: np.ndarray, pick_q: np.ndarray):
    """Children of node ``x`` for the sampled pairs ``(P[pick_p[r]], Q[pick_q[r]])``.

    Returns ``(children, keep, t)``: row r is the point ``(1 - t[r]) x + t[r] s_r`` of segment
    [x, s_r = P[pick_p[r]] - Q[pick_q[r]]] closest to the origin; ``keep[r]`` is False for zero
    samples and for t = 0 up to rounding (no progress: ``STEP_FLOOR``).
    """
    m = pick_p.shape[0]
    d = x.shape[0]
    children = np.empty((m, d))
    keep = np.zeros(m, dtype=np.bool_)
    steps = np.zeros(m)
    xx = 0.0
    for k in range(d):
        xx += x[k] * x[k]
    for r in range(m):
        ss = 0.0
        xs = 0.0
        for k in range(d):
            s = P[pick_p[r], k] - Q[pick_q[r], k]
            ss += s * s
            xs += x[k] * s
        dist2 = xx - 2.0 * xs + ss  # ||x - s||^2
        if ss <= 1e-300 or dist2 <= 1e-300:
            continue
        if xx - xs <= STEP_FLOOR * (xx + abs(xs)):  # t <= 0 up to rounding
            continue
        t = (xx - xs) / dist2
        if t > 1.0:
            t = 1.0
        for k in range(d):
            children[r, k] = (1.0 - t) * x[k] + t * (P[pick_p[r], k] - Q[pick_q[r], k])
        keep[r] = True
        steps[r] = t
    return children, keep, steps


def expand_node_reference(x, P, Q, pick_p, pick_q):
    """NumPy reference for :func:`expand_node`."""
    S = P[pick_p] - Q[pick_q]
    ss = np.einsum("ij,ij->i", S, S)
    xs = S @ x
    xx = float(x @ x)
    dist2 = xx - 2.0 * xs + ss
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (xx - xs) / dist2
    keep = (ss > 1e-300) & (dist2 > 1e-300) & (xx - xs > STEP_FLOOR * (xx + np.abs(xs)))
    t = np.clip(np.where(keep, t, 0.0), 0.0, 1.0)
    children = (1.0 - t)[:, None] * x[None, :] + t[:, None] * S
    return np.where(keep[:, None], children, 0.0), keep, t


@njit(cache=True, nogil=True)
def child_projections(
    parent_pos: np.ndarray,
    parent_neg: np.ndarray,
    gram: np.ndarray,
    rows_pos: np.ndarray,
    rows_neg: np.ndarray,
    shift_pos: np.ndarray,
    shift_neg: np.ndarray,
    pick_p: np.ndarray,
    pick_q: np.ndarray,
    t: np.ndarray,
):
    """Projections of the children ``(1 - t[r]) x + t[r] (P[pick_p[r]] - Q[pick_q[r]])`` on the rows
    of P and of Q, from the parent's (``parent_pos = P @ x``, ``parent_neg = Q @ x``): O(n) per
    child instead of O(n d). ``gram`` is the Gram matrix of the rows moved by some point c (rows
    ``rows_pos`` are P - c and ``rows_neg`` are Q - c), ``shift_pos = P @ c`` and ``shift_neg = Q @ c``
    (zeros when c = 0): ``(p - q) . r = (p - c) . (r - c) - (q - c) . (r - c) + p . c - q . c``.
    Ascending ``rows_pos`` / ``rows_neg`` read each Gram row front to back."""
    n_pos = parent_pos.shape[0]
    n_neg = parent_neg.shape[0]
    m = t.shape[0]
    out_pos = np.empty((m, n_pos))
    out_neg = np.empty((m, n_neg))
    for r in range(m):
        a = 1.0 - t[r]
        b = t[r]
        gp = gram[rows_pos[pick_p[r]]]
        gq = gram[rows_neg[pick_q[r]]]
        shift = shift_pos[pick_p[r]] - shift_neg[pick_q[r]]
        for i in range(n_pos):
            j = rows_pos[i]
            out_pos[r, i] = a * parent_pos[i] + b * ((gp[j] - gq[j]) + shift)
        for i in range(n_neg):
            j = rows_neg[i]
            out_neg[r, i] = a * parent_neg[i] + b * ((gp[j] - gq[j]) + shift)
    return out_pos, out_neg


def child_projections_reference(parent_pos, parent_neg, gram, rows_pos, rows_neg, shift_pos, shift_neg, pick_p, pick_q, t):
    """NumPy reference for :func:`child_projections`."""
    diff = gram[rows_pos[pick_p]] - gram[rows_neg[pick_q]]
    diff = diff[:, np.concatenate([rows_pos, rows_neg])] + (shift_pos[pick_p] - shift_neg[pick_q])[:, None]
    both = (1.0 - t)[:, None] * np.concatenate([parent_pos, parent_neg])[None, :] + t[:, None] * diff
    return both[:, : parent_pos.shape[0]], both[:, parent_pos.shape[0] :]


# the tree computes a Gram matrix of its rows only up to this size (4,096 rows): above, it would cost
# more memory than the rows and more time than the matrix products it saves
OWN_GRAM_BYTES = 128 << 20


def samples_per_node(delta: float, mu: float, tree_height: int) -> int:
    """Children per node: ``(1 + 1/delta)^2 ln(h/mu + 1)``.

    Two-class samples ``s = p - q`` help only when *both* p and q are inliers, so the one-class
    size ``(1 + 1/delta) ln(h/mu)`` of the paper is squared in the first factor (``+ 1`` keeps the
    logarithm positive when ``h <= mu``, e.g. ``h = 0``).
    """
    # in logarithms: a tiny delta (1e-200) overflowed the square; beyond 2^62 no tree could hold the children
    spread = math.log(max(tree_height, 1) / mu + 1.0)
    if 2.0 * math.log1p(1.0 / delta) + math.log(spread) >= 62 * math.log(2.0):
        return 2**62
    return max(1, math.ceil((1.0 + 1.0 / delta) ** 2 * spread))


def tree_level_bytes(n_samples: int, level_width: int, tree_height: int, dim: int, n_rows: int) -> int:
    """Bytes of the widest level of a tree: its children (``dim`` values each) and their projections on the
    ``n_rows`` rows the tree ranks them on. A level has at most ``level_width`` nodes and, near the
    root, at most ``n_samples^depth``.

    >>> tree_level_bytes(37, 10, 6, 20, 2000) / 2**20  # the defaults on 2,000 rows of 20 features: MiB
    5.7...
    """
    nodes = 1
    for _ in range(max(tree_height - 1, 0)):  # the parents of the deepest level
        nodes = min(level_width, nodes * n_samples)
        if nodes == level_width or n_samples <= 1:  # as wide as it gets (one child per node: 1)
            break
    return 8 * nodes * n_samples * (dim + n_rows)


def tree_nodes_per_round(n_samples: int, level_width: int, tree_height: int) -> int:
    """Most children one round of the search evaluates: each level's nodes (at most ``level_width``,
    and near the root at most ``n_samples^depth``) expand into ``n_samples`` children each.

    >>> tree_nodes_per_round(37, 10, 6)  # the batch defaults: 37 + 5 levels of 10 x 37
    1887
    """
    nodes, total = 1, 0
    for depth in range(tree_height):
        total += nodes * n_samples
        nodes = min(level_width, nodes * n_samples)
        if nodes == level_width or n_samples <= 1:  # every deeper level is as wide (one child per node: 1)
            return total + (tree_height - depth - 1) * nodes * n_samples
    return total


def evaluate_directions(
    directions: np.ndarray, P: np.ndarray, Q: np.ndarray, n_discard_pos: int, n_discard_neg: int, widths=trimmed_widths
):
    """Trimmed widths of the rows of ``directions`` plus the projections they were read from."""
    proj_p = directions @ P.T
    proj_q = directions @ Q.T
    norms = np.sqrt(np.einsum("ij,ij->i", directions, directions))
    return widths(proj_p, proj_q, n_discard_pos, n_discard_neg, norms), proj_p, proj_q


def rgd_tree(
    P: np.ndarray,
    Q: np.ndarray,
    n_discard_pos: int,
    n_discard_neg: int,
    root: np.ndarray,
    *,
    tree_height: int = 6,
    level_width: int = 10,
    n_samples: int = 16,
    delta: float = 0.5,
    boosting_rounds: int = 3,
    tol: float = 1e-3,
    seed: int = 0,
    gram: np.ndarray | None = None,
    gram_rows: np.ndarray | None = None,
    reference: bool = False,
):
    """Grow pruned RGD-trees from ``root``, re-rooting at the best node (boosting).

    Parameters are arrays and numbers only. Returns ``(best_direction, best_width, n_nodes,
    n_rounds)``; ``best_width`` is the trimmed margin width along ``best_direction``.
    ``gram``, ``gram_rows``: a Gram matrix of rows that hold P and Q, the stacked ``[P; Q]`` being
    its rows ``gram_rows`` (ascending per class; a solve's polish matrix, of centred rows: entries of
    rows far from the origin would lose the projections' digits). The children's projections then
    come from it from the first level on, instead of from a Gram matrix of the centred rows that the
    tree computes once it has evaluated n / 2 children, if it has at most ``OWN_GRAM_BYTES`` (the same
    search, up to rounding).
    ``reference=True`` uses the NumPy references of the kernels (for tests).
    """
    P = np.ascontiguousarray(P, dtype=np.float64)
    Q = np.ascontiguousarray(Q, dtype=np.float64)
    n_pos, n_neg = P.shape[0], Q.shape[0]
    if not (0 <= n_discard_pos < n_pos and 0 <= n_discard_neg < n_neg):
        raise ValueError("n_discard_pos/n_discard_neg must leave at least one row per class")
    from .selection import smallest_k_indices_reference, trimmed_widths_reference

    widths_fn = trimmed_widths_reference if reference else trimmed_widths
    select_fn = smallest_k_indices_reference if reference else smallest_k_indices
    expand_fn = expand_node_reference if reference else expand_node
    project_fn = child_projections_reference if reference else child_projections
    k_pos = min(n_pos, max(1, math.ceil((1.0 + delta) * n_discard_pos)))
    k_neg = min(n_neg, max(1, math.ceil((1.0 + delta) * n_discard_neg)))
    rng = np.random.default_rng(seed)

    best = np.asarray(root, dtype=np.float64).copy()
    widths, proj_p, proj_q = evaluate_directions(best[None, :], P, Q, n_discard_pos, n_discard_neg, widths_fn)
    if not (np.all(np.isfinite(proj_p)) and np.all(np.isfinite(proj_q))):
        # the selection kernels need finite projections; values near 1e155 overflow in the products
        raise ValueError("projections are not finite: the rows hold NaN, infinite or too large values")
    best_width = float(widths[0])
    # no width is larger than the largest row norm: the stop's floor for rounding scales with it
    width_floor = 1e-12 * math.sqrt(max(float(np.max(np.einsum("ij,ij->i", P, P))),
                                        float(np.max(np.einsum("ij,ij->i", Q, Q)))))  # fmt: skip
    n_nodes = 1
    n_rounds = 0
    n_evaluated = 0
    if gram is not None:
        if gram_rows is None or len(gram_rows) != n_pos + n_neg:
            raise ValueError(f"gram needs gram_rows: the {n_pos + n_neg} rows of gram that P and Q are, in order")
        rows_pos, rows_neg = np.asarray(gram_rows[:n_pos], np.int64), np.asarray(gram_rows[n_pos:], np.int64)
    else:  # the tree's own, of the stacked rows [P; Q], once as many children were evaluated as it costs
        rows_pos, rows_neg = np.arange(n_pos), np.arange(n_pos, n_pos + n_neg)
    shift_pos, shift_neg = np.zeros(n_pos), np.zeros(n_neg)
    own_gram = 8 * (n_pos + n_neg) ** 2 <= OWN_GRAM_BYTES
    for _ in range(boosting_rounds):
        n_rounds += 1
        round_start = best_width
        level = best[None, :]
        level_pp, level_pq = proj_p, proj_q
        for _depth in range(tree_height):
            kids, kids_pp, kids_pq = [], [], []
            for node in range(level.shape[0]):
                cand_p = select_fn(level_pp[node], k_pos)
                cand_q = select_fn(-level_pq[node], k_neg)
                pick_p = cand_p[rng.integers(0, cand_p.size, n_samples)]
                pick_q = cand_q[rng.integers(0, cand_q.size, n_samples)]
                children, keep, t = expand_fn(level[node], P, Q, pick_p, pick_q)
                if keep.any():
                    kids.append(children[keep])
                    if gram is not None:
                        pp, pq = project_fn(level_pp[node], level_pq[node], gram, rows_pos, rows_neg, shift_pos,
                                            shift_neg, pick_p[keep], pick_q[keep], t[keep])  # fmt: skip
                        kids_pp.append(pp)
                        kids_pq.append(pq)
            if not kids:
                break
            children = np.concatenate(kids)
            if gram is None:
                widths, pp, pq = evaluate_directions(children, P, Q, n_discard_pos, n_discard_neg, widths_fn)
            else:
                pp, pq = np.concatenate(kids_pp), np.concatenate(kids_pq)
                norms = np.sqrt(np.einsum("ij,ij->i", children, children))
                widths = widths_fn(pp, pq, n_discard_pos, n_discard_neg, norms)
            n_evaluated += children.shape[0]
            if gram is None and own_gram and 2 * n_evaluated >= n_pos + n_neg:
                centre = (P.sum(axis=0) + Q.sum(axis=0)) / (n_pos + n_neg)
                rows = np.concatenate([P, Q]) - centre
                gram = rows @ rows.T
                shift_pos, shift_neg = P @ centre, Q @ centre
            n_nodes += children.shape[0]
            # stable sort: equal widths keep generation order, so the search is reproducible
            order = np.argsort(-widths, kind="stable")[:level_width]
            level, level_pp, level_pq = children[order], pp[order], pq[order]
            if widths[order[0]] > best_width:
                best_width = float(widths[order[0]])
                best = children[order[0]].copy()
                proj_p, proj_q = pp[order[0]][None, :], pq[order[0]][None, :]
        if best_width - round_start <= tol * abs(round_start) + width_floor:
            break
    return best, best_width, n_nodes, n_rounds
