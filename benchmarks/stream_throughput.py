"""Streaming throughput: rows per second of predict_one + learn_one, rebuilds included.

Every learner sits behind its own River StandardScaler and sees the same stream: two Gaussian
classes in d = 100 (robustream.datasets.make_gaussian_classes) with 15% of the labels flipped,
rows as dicts. The learners are timed side by side in one process, round-robin over
``--repeats`` rounds (a fresh model each round, numba kernels compiled before timing), so a
noisy machine slows all of them alike; the table reports the median rate and its ratio to River's
LogisticRegression. For the rebuilding learners it also reports the CPU time of their solves
(inline, or in the rebuild worker process with ``rebuild_lag``) and the CPU time per row left on
the calling thread. A row with the scaler and no learner shows what every learner pays first.

    python benchmarks/stream_throughput.py                 # 20,000 rows, d = 100, 3 rounds
    python benchmarks/stream_throughput.py --rows 2000 --repeats 1   # a quick look

Prints a Markdown table and writes benchmarks/results/stream_throughput.json.
"""

from __future__ import annotations

# No thread settings here: users run with their BLAS's defaults, and the solvers limit BLAS to one
# thread themselves (robustream.blas).
import argparse
import json
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np
from river import base, linear_model, preprocessing

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import header, warm_up  # noqa: E402

from robustream import CoresetSVMClassifier, ORDIFilter, RampSVMClassifier, RGDSVMClassifier  # noqa: E402
from robustream.datasets import make_gaussian_classes  # noqa: E402
from robustream.learners.rebuild_worker import solve_worker  # noqa: E402

REFERENCE = "River LogisticRegression"
SCALER_ALONE = "StandardScaler alone (no learner)"


class ScalerOnly(base.Classifier):
    """No learner: what the StandardScaler in front of every learner costs by itself."""

    def learn_one(self, x: dict, y: bool) -> None:
        pass

    def predict_proba_one(self, x: dict) -> dict[bool, float]:
        return {False: 1.0, True: 0.0}


def learners() -> dict[str, Callable]:
    """Every learner with its default parameters (what a user gets)."""
    return {
        REFERENCE: linear_model.LogisticRegression,
        SCALER_ALONE: ScalerOnly,
        "RGDSVMClassifier": lambda: RGDSVMClassifier(seed=0),
        "RGDSVMClassifier rebuild_lag=250": lambda: RGDSVMClassifier(rebuild_lag=250, seed=0),
        "RGDSVMClassifier auto": lambda: RGDSVMClassifier(outlier_fraction="auto", seed=0),
        "RGDSVMClassifier auto rebuild_lag=250": lambda: RGDSVMClassifier(outlier_fraction="auto", rebuild_lag=250, seed=0),
        "CoresetSVMClassifier": CoresetSVMClassifier,
        "RampSVMClassifier": RampSVMClassifier,
        "ORDIFilter(LogisticRegression)": lambda: ORDIFilter(linear_model.LogisticRegression()),
        "River PAClassifier (C=1e-3)": lambda: linear_model.PAClassifier(C=1e-3, mode=1),
    }


def stream(n_rows: int, d: int, flip: float, seed: int) -> list[tuple[dict, bool]]:
    X, y = make_gaussian_classes((n_rows // 2, n_rows - n_rows // 2), d=d, seed=seed)
    rng = np.random.default_rng(seed)
    order = rng.permutation(n_rows)
    noisy = np.where(rng.random(n_rows) < flip, -y, y)
    return [({f"f{j}": float(v) for j, v in enumerate(X[i])}, bool(noisy[i] > 0)) for i in order]


def timed_pass(make: Callable, rows: list[tuple[dict, bool]]) -> dict:
    """One pass of predict_one + learn_one: wall time, CPU time of the calling thread, and the CPU
    time of the learner's solves (wherever they run: inline, or in the worker process with rebuild_lag)."""
    learner = make()
    solve_cpu, solves = [0.0], [0]  # CPU time and number of the rebuild solves timed
    inline = getattr(learner, "rebuild_lag", 0) == 0
    if hasattr(learner, "_compute"):
        inner = learner._compute

        def compute(snapshot):  # shadows the method on this instance only
            t = time.thread_time()
            try:
                return inner(snapshot)
            finally:
                solve_cpu[0] += time.thread_time() - t
                solves[0] += 1

        learner._compute = compute
    if not inline:
        start = learner._start_pending

        def start_pending():  # as above
            start()
            if learner._pending is not None and "future" in learner._pending:
                solves[0] += 1  # sent to the worker: its CPU time is in worker.cpu_seconds

        learner._start_pending = start_pending
    model = preprocessing.StandardScaler() | learner
    worker = None if inline else solve_worker()  # lagged rebuilds solve in the worker process
    w0 = worker.cpu_seconds if worker else 0.0
    t0, c0 = time.perf_counter(), time.thread_time()
    for x, y in rows:
        model.predict_one(x)
        model.learn_one(x, y)
    seconds, caller_cpu = time.perf_counter() - t0, time.thread_time() - c0
    if worker is not None:
        if learner._pending is not None and "future" in learner._pending:
            learner._pending["future"].result()  # count the last one's CPU too (never applied: not in n_rebuilds_)
        solve_cpu[0] += worker.cpu_seconds - w0
    return {
        "seconds": seconds,
        "rows_per_second": len(rows) / seconds,
        "caller_cpu_seconds": caller_cpu,
        # inline solves run on the calling thread: without them, what is left is the per-row work
        "per_row_cpu_us": 1e6 * (caller_cpu - (solve_cpu[0] if inline else 0.0)) / len(rows),
        "solve_cpu_seconds": solve_cpu[0],
        "rebuilds_solved": solves[0],
        "rebuilds": getattr(learner, "n_rebuilds_", 0),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20_000, help="rows per pass (default 20,000)")
    ap.add_argument("--dim", type=int, default=100, help="features per row (default 100)")
    ap.add_argument("--repeats", type=int, default=3, help="timed rounds per learner (default 3)")
    ap.add_argument("--flip", type=float, default=0.15)
    ap.add_argument("--only", nargs="+", help="learner names to time (the reference and the scaler alone are always timed)")
    args = ap.parse_args()
    meta = header()
    make = learners()
    if args.only:
        unknown = sorted(set(args.only) - set(make))
        if unknown:
            ap.error(f"unknown learner(s) {unknown}; choose from {sorted(make)}")
        make = {k: v for k, v in make.items() if k in (REFERENCE, SCALER_ALONE) or k in args.only}
    rows = stream(args.rows, args.dim, args.flip, seed=0)
    # the numba kernels load before any timing (rebuild_lag: in the worker process too)
    warm_up(stream=[lambda f=factory: preprocessing.StandardScaler() | f() for factory in make.values()], d=args.dim)

    runs: dict[str, list[dict]] = {name: [] for name in make}
    for r in range(args.repeats):
        for name, factory in make.items():
            runs[name].append(timed_pass(factory, rows))
            print(f"  round {r + 1}: {name}: {runs[name][-1]['rows_per_second']:,.0f} rows/s", flush=True)

    ref = float(np.median([x["rows_per_second"] for x in runs[REFERENCE]]))
    print(f"\n## Throughput, d = {args.dim}, {args.rows:,} rows, {args.flip:.0%} flips, StandardScaler in front "
          f"(median of {args.repeats} interleaved rounds)\n")
    print("| learner | rows/s | × River LogisticRegression | rebuilds solved (applied) | solve CPU ms per rebuild | "
          "solve CPU µs per row | other CPU µs per row (calling thread) |")
    print("|---|---|---|---|---|---|---|")
    summary = {}
    for name, rs in runs.items():
        rate = float(np.median([x["rows_per_second"] for x in rs]))
        n_rebuilds, n_solves = rs[0]["rebuilds"], rs[0]["rebuilds_solved"]  # the same schedule every round
        solve = float(np.median([x["solve_cpu_seconds"] for x in rs]))
        per_row = float(np.median([x["per_row_cpu_us"] for x in rs]))
        # with rebuild_lag the last solve is timed but never applied: solved, not in rebuilds (n_rebuilds_)
        summary[name] = {"rows_per_second": rate, "ratio": rate / ref, "rebuilds": n_rebuilds,
                         "rebuilds_solved": n_solves,
                         "solve_cpu_ms_per_rebuild": 1000 * solve / n_solves if n_solves else None,
                         "other_cpu_us_per_row": per_row}  # fmt: skip
        cells = [f"{n_solves} ({n_rebuilds})", f"{1000 * solve / n_solves:.1f}", f"{1e6 * solve / args.rows:.0f}"] \
            if n_solves else ["–", "–", "–"]  # fmt: skip
        print(f"| {name} | {rate:,.0f} | {rate / ref:.2f} | " + " | ".join(cells) + f" | {per_row:.0f} |")
    print("\n(rebuild_lag > 0: the solves run in the rebuild worker process, so with a free core the rate is bound by the "
          "larger of the per-row work and the solve work per row. The scaler alone is the per-row work every learner "
          "pays before its own: a learner's own CPU per row is its row minus that one.)")

    out_dir = Path(__file__).resolve().parent / "results"
    out_dir.mkdir(exist_ok=True)
    path = out_dir / "stream_throughput.json"
    path.write_text(json.dumps({"meta": meta, "args": vars(args), "summary": summary, "runs": runs}, indent=1))
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
