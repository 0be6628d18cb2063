"""JL sketch speed and accuracy of RGDSVC on d >= 784 data with 15% flipped training labels.

Data: mnist-0-vs-1 (784 features, shared data) and ``make_gaussian_classes((2000, 3000), d=1000 /
2000, seed=s)`` (the RGD paper's generator), each through ``noisy_split(flip=0.15, seed=s)``,
standardised on the train split; test labels are clean. Per seed, in one interleaved run:

* ``RGDSVC(random_state=s)`` without a sketch (the reference for the ratios);
* "tree on sketch": ``RGDSVC(sketch=kind, sketch_dim=k, random_state=s)`` - the RGD-tree runs on
  the sketch, the polish in full dimension (on the inliers the tree found);
* "tree+polish on sketch": ``robustream.solver.solve(..., sketch=JLSketch(k, kind, seed),
  polish_space="sketch")`` with ``outlier_fraction = per_class_outlier_fractions(0.2, n_pos, n_neg)``
  and the seed RGDSVC derives from ``random_state=s`` (so it differs from the RGDSVC run only in
  where the polish runs; ``polish_space="full"`` reproduces that RGDSVC run exactly).

Speed-up = seconds of the no-sketch fit of the same seed, timed again right before each sketched
fit (interleaved), / seconds of the sketched fit; geometric mean over seeds. Error difference =
sketch test error - no-sketch test error (points), mean +- sd over seeds. Target: sketch_dim = 64
on d >= 784 data at least 5x faster for at most 1 point more error.

    python benchmarks/sketch_speed.py            # full run (3 seeds, ~5 min on 2 cores)
    python benchmarks/sketch_speed.py --quick    # < 60 s subset (1 seed, mnist + d=1000, k in {64, 256})
    python benchmarks/sketch_speed.py --stream   # RGDSVMClassifier streams, sketch_dim=128 vs None (~1 min)

``--stream``: one pass of ``StandardScaler() | RGDSVMClassifier(seed=s, sketch_dim=...)`` over the
train split of gauss-d1000 and gauss-d2000 (rows as dicts, the default window and coreset: 1,500
rows per rebuild at most), then clean test error; CPU seconds of the pass, the two sketch settings
interleaved per seed. It measures the rule of ``sketch_dim="auto"`` (which sketches dense rows only
above ``FULL_GRAM_ROWS`` rows).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # single-threaded BLAS: timings comparable with liblinear

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import shlex  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numba  # noqa: E402
import numpy as np  # noqa: E402
import scipy  # noqa: E402
import scipy.sparse as sp  # noqa: E402
import sklearn  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.utils import check_random_state  # noqa: E402

import robustream  # noqa: E402
from _common import header  # noqa: E402
from robustream import RGDSVC, JLSketch  # noqa: E402
from robustream.datasets import load, make_gaussian_classes, noisy_split  # noqa: E402
from robustream.solver import per_class_outlier_fractions, solve  # noqa: E402

FLIP = 0.15
OUTLIER_FRACTION = 0.2  # RGDSVC's default
KINDS = ("achlioptas", "gaussian")
DIMS = (32, 64, 128, 256)
DATASETS = ("mnist-0-vs-1", "gauss-d1000", "gauss-d2000")
QUICK = {"datasets": ("mnist-0-vs-1", "gauss-d1000"), "dims": (64, 256), "seeds": 1}
TARGET_DIM, TARGET_SPEEDUP, TARGET_ERR_POINTS = 64, 5.0, 1.0
VARIANTS = {"none": "no sketch (RGDSVC)", "tree": "tree on sketch (RGDSVC)", "tree+polish": "tree+polish on sketch (solve)"}


def noisy_data(name: str, seed: int):
    """Standardised (on train) noisy train split and clean test split."""
    if name.startswith("gauss-d"):
        X, y = make_gaussian_classes((2000, 3000), d=int(name[len("gauss-d"):]), seed=seed)
    else:
        data = load(name)
        X, y = data.X, data.y
    split = noisy_split(X, y, flip=FLIP, seed=seed)
    scaler = StandardScaler(with_mean=not sp.issparse(split.X_train)).fit(split.X_train)
    return scaler.transform(split.X_train), split.y_train, scaler.transform(split.X_test), split.y_test


def test_error(pred, y_test) -> float:
    return 100.0 * float(np.mean(pred != y_test))


def fit_rgdsvc(Xtr, ytr, Xte, yte, seed, kind=None, k=None) -> dict:
    params = {"random_state": seed} if k is None else {"random_state": seed, "sketch": kind, "sketch_dim": k}
    t0 = time.perf_counter()
    model = RGDSVC(**params).fit(Xtr, ytr)
    seconds = time.perf_counter() - t0
    sol = model.solutions_[0]
    return {
        "seconds": seconds,
        "error": test_error(model.predict(Xte), yte),
        "polish_steps": sol.polish_iterations,
        "refits": sol.n_refits,
        "tree_nodes": sol.n_tree_nodes,
        "converged": sol.converged,
    }


def fit_sketch_solve(Xtr, ytr, Xte, yte, seed, kind, k) -> dict:
    """The whole solve on the sketch, with the seed RGDSVC(random_state=seed) would use."""
    seed_ = solver_seed(seed)
    n_pos = int((ytr > 0).sum())
    fractions = per_class_outlier_fractions(OUTLIER_FRACTION, n_pos, ytr.size - n_pos)
    t0 = time.perf_counter()
    sol = solve(
        Xtr, ytr, outlier_fraction=fractions,
        sketch=JLSketch(k, kind, seed_), polish_space="sketch", seed=seed_,
    )  # fmt: skip
    seconds = time.perf_counter() - t0
    pred = np.where(np.asarray(Xte @ sol.coef).ravel() + sol.intercept > 0, 1.0, -1.0)
    return {
        "seconds": seconds,
        "error": test_error(pred, yte),
        "polish_steps": sol.polish_iterations,
        "refits": sol.n_refits,
        "tree_nodes": sol.n_tree_nodes,
        "converged": sol.converged,
    }


def solver_seed(random_state: int) -> int:
    """The seed RGDSVC(random_state=...) hands to solve() and to its JLSketch (binary problem)."""
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


def warm_up() -> bool:
    """Compile / load every numba kernel used below outside the timed region.

    Also checks that ``solve(..., polish_space="full")`` with our seed and outlier fractions
    reproduces ``RGDSVC(sketch=..., sketch_dim=...)`` exactly, i.e. that the "tree+polish on sketch"
    rows differ from the "tree on sketch" rows only in where the polish runs.
    """
    X, y = make_gaussian_classes((150, 250), d=40, flip=0.15, seed=0)
    RGDSVC(random_state=0).fit(X, y)
    same = True
    for kind in KINDS:
        model = RGDSVC(sketch=kind, sketch_dim=8, random_state=0).fit(X, y)
        seed = solver_seed(0)
        n_pos = int((y > 0).sum())
        fractions = per_class_outlier_fractions(OUTLIER_FRACTION, n_pos, y.size - n_pos)
        for space in ("full", "sketch"):
            sol = solve(X, y, outlier_fraction=fractions, sketch=JLSketch(8, kind, seed), polish_space=space, seed=seed)
            if space == "full":
                same &= bool(np.array_equal(sol.coef, model.coef_[0]) and sol.intercept == model.intercept_[0])
    return same


def mean_sd(values) -> tuple[float, float]:
    v = np.asarray(values, dtype=float)
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0


def geo_mean_sd(ratios) -> tuple[float, float]:
    """Geometric mean and geometric sd (a factor >= 1) of positive ratios."""
    logs = np.log(np.asarray(ratios, dtype=float))
    return float(np.exp(logs.mean())), float(np.exp(logs.std(ddof=1))) if logs.size > 1 else 1.0


def pm(values, fmt: str) -> str:
    m, s = mean_sd(values)
    return f"{m:{fmt}} ± {s:{fmt.lstrip('+')}}" if len(values) > 1 else f"{m:{fmt}}"


STREAM_DATASETS = ("gauss-d1000", "gauss-d2000")
STREAM_SKETCHES = (128, None)


def stream_pass(Xtr, ytr, Xte, yte, seed: int, sketch_dim) -> dict:
    """One pass of the streaming learner over the train rows (no predictions during it); CPU seconds
    of the pass and clean test error."""
    from river import preprocessing

    from robustream import RGDSVMClassifier
    from robustream.replay import rows_as_dicts

    model = preprocessing.StandardScaler() | RGDSVMClassifier(seed=seed, sketch_dim=sketch_dim)
    rows = rows_as_dicts(Xtr)
    t0 = time.process_time()
    for row, label in zip(rows, ytr):
        model.learn_one(row, bool(label > 0))
    seconds = time.process_time() - t0
    pred = np.array([model.predict_one(row) for row in rows_as_dicts(Xte)])
    return {"seconds": seconds, "error": test_error(np.where(pred, 1.0, -1.0), yte)}


def stream_section(n_seeds: int, out: Path) -> None:
    meta = header()
    runs = []
    for name in STREAM_DATASETS:
        for seed in range(n_seeds):
            Xtr, ytr, Xte, yte = noisy_data(name, seed)
            for k in STREAM_SKETCHES:
                runs.append({"dataset": name, "seed": seed, "sketch_dim": k, **stream_pass(Xtr, ytr, Xte, yte, seed, k)})
            print(f"  {name} seed {seed} done", file=sys.stderr, flush=True)
    print(f"### RGDSVMClassifier streams, {FLIP:.0%} flipped train labels, mean ± sd over {n_seeds} seed(s)")
    print()
    print("| dataset | sketch_dim | CPU s per pass | test err % |")
    print("|---|---|---:|---:|")
    for name in STREAM_DATASETS:
        for k in STREAM_SKETCHES:
            rows = [r for r in runs if r["dataset"] == name and r["sketch_dim"] == k]
            print(f"| {name} | {k} | {pm([r['seconds'] for r in rows], '.2f')} | {pm([r['error'] for r in rows], '.2f')} |")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"benchmark": "sketch_speed --stream", "meta": meta, "runs": runs}, indent=1))
    print(f"\nwrote {out}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="< 60 s subset")
    parser.add_argument("--stream", action="store_true", help="RGDSVMClassifier streams, sketch_dim=128 vs None")
    parser.add_argument("--seeds", type=int, default=None, help="number of seeds 0..S-1 (default 3, quick 1)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "sketch_speed.json")
    args = parser.parse_args(argv)
    if args.stream:
        stream_section(args.seeds if args.seeds is not None else 3, args.out.with_name("sketch_stream.json"))
        return
    datasets = QUICK["datasets"] if args.quick else DATASETS
    dims = QUICK["dims"] if args.quick else DIMS
    n_seeds = args.seeds if args.seeds is not None else (QUICK["seeds"] if args.quick else 3)

    meta = header()
    meta["solve_full_reproduces_rgdsvc"] = warm_up()
    print(f"check: solve(polish_space='full') reproduces RGDSVC(sketch_dim=k): {meta['solve_full_reproduces_rgdsvc']}")
    runs = []
    shapes = {}
    t_start = time.perf_counter()
    for name in datasets:
        for seed in range(n_seeds):
            Xtr, ytr, Xte, yte = noisy_data(name, seed)
            shapes.setdefault(name, []).append(
                {"seed": seed, "n_train": int(Xtr.shape[0]), "n_test": int(Xte.shape[0]), "d": int(Xtr.shape[1])}
            )
            base = fit_rgdsvc(Xtr, ytr, Xte, yte, seed)
            runs.append({"dataset": name, "seed": seed, "variant": "none", "kind": None, "k": None, **base})
            for k in dims:
                for kind in KINDS:
                    for variant, fit in (("tree", fit_rgdsvc), ("tree+polish", fit_sketch_solve)):
                        # the reference is timed again next to each variant: a machine slower for a
                        # while slows both sides of a ratio (its test error is the same every time)
                        pair = fit_rgdsvc(Xtr, ytr, Xte, yte, seed)["seconds"]
                        r = fit(Xtr, ytr, Xte, yte, seed, kind, k)
                        r["reference_seconds"] = pair
                        r["speedup"] = pair / r["seconds"]
                        r["error_diff"] = r["error"] - base["error"]
                        runs.append({"dataset": name, "seed": seed, "variant": variant, "kind": kind, "k": k, **r})
            print(f"  [{time.perf_counter() - t_start:6.1f} s] {name} seed {seed} done", file=sys.stderr, flush=True)

    print()
    print(
        f"### JL sketch: fit time and clean test error, {FLIP:.0%} flipped train labels, "
        f"mean ± sd over {n_seeds} seed(s)"
    )
    print()
    print("| dataset | n_train x d | variant | sketch | k | fit s | speed-up x | test err % | Δ err (points) "
          "| polish steps | refits |")  # fmt: skip
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    summary = []
    for name in datasets:
        n_lo, n_hi = (f(s["n_train"] for s in shapes[name]) for f in (min, max))
        shape = f"{n_lo}x{shapes[name][0]['d']}" if n_lo == n_hi else f"{n_lo}–{n_hi}x{shapes[name][0]['d']}"
        keys = [("none", None, None)] + [(v, kind, k) for v in ("tree", "tree+polish") for kind in KINDS for k in dims]
        for variant, kind, k in keys:
            rows = [r for r in runs if r["dataset"] == name and r["variant"] == variant and r["kind"] == kind and r["k"] == k]
            entry = {
                "dataset": name, "variant": variant, "kind": kind, "k": k, "n_seeds": len(rows),
                "seconds": mean_sd([r["seconds"] for r in rows]),
                "error": mean_sd([r["error"] for r in rows]),
                "polish_steps": mean_sd([r["polish_steps"] for r in rows]),
            }  # fmt: skip
            if variant == "none":
                speed, diff = "1 (ref)", "0 (ref)"
            else:
                entry["speedup"] = geo_mean_sd([r["speedup"] for r in rows])
                entry["error_diff"] = mean_sd([r["error_diff"] for r in rows])
                entry["target_met"] = bool(
                    k == TARGET_DIM and entry["speedup"][0] >= TARGET_SPEEDUP and entry["error_diff"][0] <= TARGET_ERR_POINTS
                ) if k == TARGET_DIM else None  # fmt: skip
                speed = "{:.2f} ×/÷ {:.2f}".format(*entry["speedup"])
                diff = pm([r["error_diff"] for r in rows], "+.2f")
            summary.append(entry)
            print(
                f"| {name} | {shape} | {VARIANTS[variant]} | {kind or '—'} | {k or '—'} "
                f"| {pm([r['seconds'] for r in rows], '.2f')} | {speed} | {pm([r['error'] for r in rows], '.2f')} "
                f"| {diff} | {mean_sd([r['polish_steps'] for r in rows])[0]:.0f} "
                f"| {mean_sd([r['refits'] for r in rows])[0]:.1f} |"
            )

    print()
    print(f"### Target: sketch_dim = {TARGET_DIM}, >= {TARGET_SPEEDUP:.0f}x faster, <= {TARGET_ERR_POINTS:.0f} point more error (means)")
    print()
    print("| dataset | variant | sketch | speed-up x | Δ err (points) | met? |")
    print("|---|---|---|---:|---:|---|")
    for e in summary:
        if e["k"] != TARGET_DIM:
            continue
        (s, _), (de, _) = e["speedup"], e["error_diff"]
        why = [] if e["target_met"] else (["speed"] if s < TARGET_SPEEDUP else []) + (["error"] if de > TARGET_ERR_POINTS else [])
        verdict = "yes" if e["target_met"] else "no (" + ", ".join(why) + ")"
        print(f"| {e['dataset']} | {VARIANTS[e['variant']]} | {e['kind']} | {s:.2f} | {de:+.2f} | {verdict} |")
    total = time.perf_counter() - t_start
    print()
    print(
        "Notes: speed-up = the no-sketch RGDSVC fit of the same seed and split, timed again just before each "
        "sketched fit, over that fit's time; geometric mean ×/÷ geometric sd over seeds (the target uses the "
        "geometric mean). Δ err = difference against the no-sketch fit, mean over seeds. 'polish steps' are the MDM "
        "steps of all polishes (sketch + full dimension) and 'refits' the trim-and-refit rounds after the first "
        "polish (means)."
    )
    print(f"\ntotal {total:.1f} s")

    args.out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "benchmark": "sketch_speed", "quick": args.quick, "flip": FLIP, "outlier_fraction": OUTLIER_FRACTION,
        "seeds": list(range(n_seeds)), "kinds": list(KINDS), "dims": list(dims), "datasets": shapes,
        "target": {"sketch_dim": TARGET_DIM, "speedup": TARGET_SPEEDUP, "error_points": TARGET_ERR_POINTS},
        "meta": meta, "runs": runs, "summary": summary, "total_seconds": total,
    }  # fmt: skip
    args.out.write_text(json.dumps(payload, indent=2, default=float) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
