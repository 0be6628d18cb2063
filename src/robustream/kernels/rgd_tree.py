"""Pruned two-class RGD-tree with boosting (Ding & Xu, "revisited Algorithm 2" and section 3).

A node is a point ``x`` of the Minkowski difference conv(P) - conv(Q). From a node, the candidate
sets are the ``ceil((1+delta) * n_discard_pos)`` rows of P with the smallest projections on x and
the ``ceil((1+delta) * n_discard_neg)`` rows of Q with the largest (at least one each); each child
comes from a random difference ``s = p - q`` of candidates: the point of the segment [x, s]
closest to the origin (clipped formula; children with t = 0, i.e. no progress, and zero samples
``s = 0`` from duplicate rows with opposite labels, are dropped). Each level keeps the
``level_width`` children with the widest trimmed margin (the width after discarding
``n_discard_pos`` / ``n_discard_neg`` rows, allowed to be negative); boosting re-roots at the best
node until the best width stops improving. This is a heuristic search (the proven tree height is
astronomically large on real data), measured in ``benchmarks/``.

Cost per level: one matrix product ``children @ rows.T`` (BLAS) plus a linear-time selection per
child, so O(level_width * samples_per_node * n * d).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .selection import smallest_k_indices, trimmed_widths


@njit(cache=True, nogil=True)
def expand_node(x: np.ndarray, P: np.ndarray, Q: np.ndarray, pick_p: np.ndarray, pick_q: np.ndarray):
    """Children of node ``x`` for the sampled pairs ``(P[pick_p[r]], Q[pick_q[r]])``.

    Returns ``(children, keep)``: row r is the point of segment [x, P[pick_p[r]] - Q[pick_q[r]]]
    closest to the origin; ``keep[r]`` is False for zero samples and for t = 0 (no progress).
    """
    m = pick_p.shape[0]
    d = x.shape[0]
    children = np.empty((m, d))
    keep = np.zeros(m, dtype=np.bool_)
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
        t = (xx - xs) / dist2
        if t <= 0.0:
            continue
        if t > 1.0:
            t = 1.0
        for k in range(d):
            children[r, k] = (1.0 - t) * x[k] + t * (P[pick_p[r], k] - Q[pick_q[r], k])
        keep[r] = True
    return children, keep


def expand_node_reference(x, P, Q, pick_p, pick_q):
    """NumPy reference for :func:`expand_node`."""
    S = P[pick_p] - Q[pick_q]
    ss = np.einsum("ij,ij->i", S, S)
    xs = S @ x
    xx = float(x @ x)
    dist2 = xx - 2.0 * xs + ss
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (xx - xs) / dist2
    keep = (ss > 1e-300) & (dist2 > 1e-300) & (t > 0.0)
    t = np.clip(np.where(keep, t, 0.0), 0.0, 1.0)
    children = (1.0 - t)[:, None] * x[None, :] + t[:, None] * S
    return np.where(keep[:, None], children, 0.0), keep


def samples_per_node(delta: float, mu: float, tree_height: int) -> int:
    """Children per node: ``(1 + 1/delta)^2 ln(h/mu + 1)``.

    Two-class samples ``s = p - q`` help only when *both* p and q are inliers, so the one-class
    size ``(1 + 1/delta) ln(h/mu)`` of the paper is squared in the first factor (``+ 1`` keeps the
    logarithm positive when ``h <= mu``, e.g. ``h = 0``).
    """
    return max(1, math.ceil((1.0 + 1.0 / delta) ** 2 * math.log(max(tree_height, 1) / mu + 1.0)))


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
    reference: bool = False,
):
    """Grow pruned RGD-trees from ``root``, re-rooting at the best node (boosting).

    Parameters are arrays and numbers only. Returns ``(best_direction, best_width, n_nodes,
    n_rounds)``; ``best_width`` is the trimmed margin width along ``best_direction``.
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
    for _ in range(boosting_rounds):
        n_rounds += 1
        round_start = best_width
        level = best[None, :]
        level_pp, level_pq = proj_p, proj_q
        for _depth in range(tree_height):
            kids = []
            for node in range(level.shape[0]):
                cand_p = select_fn(level_pp[node], k_pos)
                cand_q = select_fn(-level_pq[node], k_neg)
                pick_p = cand_p[rng.integers(0, cand_p.size, n_samples)]
                pick_q = cand_q[rng.integers(0, cand_q.size, n_samples)]
                children, keep = expand_fn(level[node], P, Q, pick_p, pick_q)
                if keep.any():
                    kids.append(children[keep])
            if not kids:
                break
            children = np.concatenate(kids)
            widths, pp, pq = evaluate_directions(children, P, Q, n_discard_pos, n_discard_neg, widths_fn)
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
