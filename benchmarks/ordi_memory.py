"""ORDIFilter with ``memory``: statistics over the last m samples against cumulative ones, under drift.

Section 1, drift: the drift stream of benchmarks/run_all.py (``drift_data``: two Gaussian classes,
d = 20, 15% of the stream labels flipped uniformly; halfway through the stream every row, and the
clean test set, is rotated by 90° in the plane of the Bayes direction and a random orthogonal one).
One prequential pass, every model behind River's StandardScaler: prequential accuracy against the
clean labels (whole stream, and after the drift), then the error of the final model on the clean
test rows of the new concept. Methods: River's LogisticRegression alone, and wrapped in
ORDIFilter (removal_fraction ``--removal``, default 0.1) with cumulative statistics
(``memory=None``) and with ``memory`` in {250, 500, 1000}. Mean ± sample sd over the seeds.

Section 2, no drift: a few shared data sets under the project's protocol (run_all.get_split:
robustream.datasets.noisy_split, 40/30/30 split, 15% uniform flips in train and validation, clean
test labels; the validation split is not used, nothing is tuned), the same pass over the train
split, with the throughput of each method timed side by side in the same process (each pass is one
predict_one + learn_one per row, scaler included) and the ratio memory / cumulative.

    python benchmarks/ordi_memory.py                   # 5 seeds, ~2 min on 2 cores
    python benchmarks/ordi_memory.py --quick           # 2 seeds, shorter drift stream
    python benchmarks/ordi_memory.py --removal 0.2

Prints Markdown tables and writes benchmarks/results/ordi_memory.json (``--quick`` or a custom
``--removal``/``--seeds``: ordi_memory_custom.json).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Callable

import numpy as np
from river import linear_model, preprocessing

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import header, warm_up  # noqa: E402
from run_all import accuracy, drift_data, get_split, mean_sd, river_labels  # noqa: E402

from robustream import ORDIFilter  # noqa: E402
from robustream.replay import rows_as_dicts  # noqa: E402

MEMORIES = (250, 500, 1000)
DRIFT_N = 3000  # per class: 6000 rows, 4000 of them streamed (2000 per concept), 2000 test rows
NO_DRIFT = ["svmguide1", "australian", "german.numer", "mushrooms", "w8a"]
TIMING_REPEATS = 5  # section 2's passes are timed this many times, in rotated order; the fastest counts


def methods(removal: float) -> dict[str, Callable]:
    def ordi(memory):
        return lambda: ORDIFilter(linear_model.LogisticRegression(), removal_fraction=removal, memory=memory)

    return {
        "LogReg": lambda: linear_model.LogisticRegression(),
        "ORDI cumulative": ordi(None),
        **{f"ORDI m={m}": ordi(m) for m in MEMORIES},
    }


def one_pass(factory: Callable, rows: list[dict], y_noisy: list, y_clean: list) -> tuple:
    """Prequential pass behind a StandardScaler: (model, hit per row, seconds)."""
    model = preprocessing.StandardScaler() | factory()
    hits = np.zeros(len(rows), bool)
    t0 = time.perf_counter()
    for i, (x, yn, yc) in enumerate(zip(rows, y_noisy, y_clean)):
        hits[i] = model.predict_one(x) == yc
        model.learn_one(x, yn)
    return model, hits, time.perf_counter() - t0


def error_rate(model, rows: list[dict], labels: list) -> float:
    return 1.0 - accuracy(model, rows, labels)


def run_drift(job: tuple) -> dict:
    n, seed, removal = job
    Xs, yn, yc, Xt, yt, half = drift_data(n, seed)
    rows, rows_t = rows_as_dicts(Xs), rows_as_dicts(Xt)
    y_noisy, y_clean, y_test = river_labels(yn, True), river_labels(yc, True), river_labels(yt, True)
    out = {"seed": seed, "n_stream": len(rows), "drift_at": half, "methods": {}}
    for name, factory in methods(removal).items():
        model, hits, seconds = one_pass(factory, rows, y_noisy, y_clean)
        out["methods"][name] = {
            "test_error": 100 * error_rate(model, rows_t, y_test),
            "prequential": 100 * hits.mean(),
            "prequential_after": 100 * hits[half:].mean(),
            "seconds": seconds,
        }
    print(f"  drift seed {seed}: done", file=sys.stderr, flush=True)
    return out


def run_no_drift(job: tuple) -> dict:
    name, seed, removal = job
    split = get_split(name, seed, 0.15, "uniform")
    dense = lambda X: X.toarray() if hasattr(X, "toarray") else X  # noqa: E731 - StandardScaler sees the zeros
    rows, rows_t = rows_as_dicts(dense(split.X_train)), rows_as_dicts(dense(split.X_test))
    y_noisy, y_clean = river_labels(split.y_train, True), river_labels(split.y_train_clean, True)
    y_test = river_labels(split.y_test, True)
    out = {"dataset": name, "seed": seed, "n_train": len(rows), "d": int(split.X_train.shape[1]), "methods": {}}
    make = methods(removal)
    seconds: dict[str, list[float]] = {m: [] for m in make}
    for r in range(TIMING_REPEATS):
        # rotated, so that no method always runs first (or right after the same one)
        for method in list(make)[r % len(make):] + list(make)[: r % len(make)]:
            model, hits, t = one_pass(make[method], rows, y_noisy, y_clean)
            seconds[method].append(t)
            if r == 0:  # every repeat learns the same model
                out["methods"][method] = {"test_error": 100 * error_rate(model, rows_t, y_test),
                                          "prequential": 100 * hits.mean()}  # fmt: skip
    for method, times in seconds.items():
        out["methods"][method]["seconds"] = min(times)
    print(f"  {name} seed {seed}: done", file=sys.stderr, flush=True)
    return out


def warm_up_worker() -> None:
    warm_up(stream=[lambda f=f: preprocessing.StandardScaler() | f() for f in methods(0.1).values()])


def mean_sd_text(values) -> str:
    return "{:.2f} ± {:.2f}".format(*mean_sd(values))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--removal", type=float, default=0.1, help="ORDIFilter removal_fraction (default 0.1)")
    ap.add_argument("--seeds", type=int, help="number of seeds (default 5, --quick 2)")
    ap.add_argument("--quick", action="store_true", help="2 seeds, 2000-row drift stream, 2 data sets")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    args = ap.parse_args()
    meta = header()
    seeds = args.seeds or (2 if args.quick else 5)
    n = 1500 if args.quick else DRIFT_N
    names = NO_DRIFT[:2] if args.quick else NO_DRIFT
    make = methods(args.removal)
    t_start = time.perf_counter()
    drift_jobs = [(n, s, args.removal) for s in range(seeds)]
    nodrift_jobs = [(name, s, args.removal) for name in names for s in range(seeds)]
    # every pass of a method runs in one worker, after the warm-up: the timed passes of the methods
    # compared in section 2 sit next to each other in the same process
    with ProcessPoolExecutor(args.jobs, initializer=warm_up_worker) as pool:
        drift_runs = list(pool.map(run_drift, drift_jobs))
        nodrift_runs = list(pool.map(run_no_drift, nodrift_jobs))
    total = time.perf_counter() - t_start

    d0 = drift_runs[0]
    print(f"\n## 1. Drift (run_all.drift_data, d = 20, {d0['n_stream']} stream rows, 15% flips, concept "
          f"rotates after row {d0['drift_at']}): removal_fraction {args.removal}, {seeds} seeds, mean ± sd\n")
    print("| metric | " + " | ".join(make) + " |")
    print("|---|" + "---|" * len(make))
    for key, label in (("test_error", "test error on the new concept %"),
                       ("prequential", "prequential accuracy %"),
                       ("prequential_after", "prequential accuracy after the drift %")):  # fmt: skip
        print(f"| {label} | " + " | ".join(mean_sd_text([r["methods"][m][key] for r in drift_runs]) for m in make) + " |")
    print("| seconds per pass | " + " | ".join(
        f"{np.mean([r['methods'][m]['seconds'] for r in drift_runs]):.1f}" for m in make) + " |")

    ordi = [m for m in make if m.startswith("ORDI")]
    by_set: dict[str, list[dict]] = {}
    for r in nodrift_runs:
        by_set.setdefault(r["dataset"], []).append(r)
    print(f"\n## 2. No drift (run_all.get_split: 40/30/30, 15% uniform flips), removal_fraction {args.removal}, "
          f"{seeds} seeds: clean test error % mean ± sd\n")
    print("| dataset (n_train, d) | " + " | ".join(make) + " |")
    print("|---|" + "---|" * len(make))
    for name, runs in by_set.items():
        print(f"| {name} ({runs[0]['n_train']}, {runs[0]['d']}) | "
              + " | ".join(mean_sd_text([r["methods"][m]["test_error"] for r in runs]) for m in make) + " |")
    print(f"\nthroughput, rows per second (predict_one + learn_one, scaler included; the fastest of {TIMING_REPEATS} "
          "passes, summed over the seeds), and the ratio to ORDI cumulative\n")
    print("| dataset | " + " | ".join(make) + " |")
    print("|---|" + "---|" * len(make))
    speed = {}
    for name, runs in by_set.items():
        rows_total = sum(r["n_train"] for r in runs)
        speed[name] = {m: rows_total / sum(r["methods"][m]["seconds"] for r in runs) for m in make}
        cells = [f"{speed[name][m]:.0f}" + (f" ({speed[name][m] / speed[name]['ORDI cumulative']:.2f}x)"
                                            if m in ordi[1:] else "") for m in make]  # fmt: skip
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(f"\ntotal {total / 60:.1f} min")

    out_dir = Path(__file__).resolve().parent / "results"
    out_dir.mkdir(exist_ok=True)
    custom = args.quick or args.seeds is not None or args.removal != 0.1
    path = out_dir / ("ordi_memory_custom.json" if custom else "ordi_memory.json")
    path.write_text(json.dumps({"meta": meta, "removal_fraction": args.removal, "seeds": seeds,
                                "drift": drift_runs, "no_drift": nodrift_runs, "rows_per_second": speed,
                                "seconds": total}, indent=1))  # fmt: skip
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
