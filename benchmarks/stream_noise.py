"""Streaming benchmark under label noise: robustream's River learners against River's own.

A quick look with untuned defaults, not the project's protocol: the rows are split 70/0/30 by
robustream.datasets.noisy_split(flip=0) (no validation split), and each label of the training
stream is then flipped with probability ``--flip`` by robustream.evaluate.noisy_stream (a Bernoulli
draw per row, not an exact count); the rest is the clean test set. One pass over the training
stream, test-then-train: prequential accuracy is scored against the *clean* label of each row
before the model learns its *noisy* label; after the pass the model's error on the clean test rows
is the holdout error. Every learner sits behind River's StandardScaler. No hyper-parameter is tuned
here (PA-I uses C = 1e-3, the value the issue reports as strongest under flips). The comparison
under the protocol (40/30/30 split, exact flip counts, hyper-parameters picked on the noisy
validation split) is section 1 of benchmarks/run_all.py (benchmarks/RESULTS.md).

    python benchmarks/stream_noise.py            # 4 shared sets + synthetic, 2 seeds, memory 20k vs 200k rows
    python benchmarks/stream_noise.py --quick    # 2 small sets + synthetic, 1 seed, memory 5k vs 50k rows
    python benchmarks/stream_noise.py --memory-only --memory-rows 100000   # the issue's 100k vs 1M rows

Prints a Markdown table and writes benchmarks/results/stream_noise.json (``--quick``:
stream_noise_quick.json; ``--datasets`` or ``--seeds``: stream_noise_custom.json). The memory section runs RGDSVMClassifier on a generated stream under
tracemalloc and reports the peak and the retained (current) traced memory after n and 10n rows, and
the size of the pickled model.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import gc
import pickle
import json
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Callable

import numpy as np
import scipy.sparse as sp
from river import linear_model, preprocessing

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import header, warm_up  # noqa: E402

from robustream import CoresetSVMClassifier, ORDIFilter, RampSVMClassifier, RGDSVMClassifier  # noqa: E402
from robustream.datasets import load, make_gaussian_classes, noisy_split  # noqa: E402
from robustream.evaluate import holdout, noisy_stream, prequential  # noqa: E402

MAX_ROWS = {"w8a": 10_000, "mushrooms": 6_000}  # uniform subsamples, to keep a run short
FULL = ["svmguide1", "german.numer", "mushrooms", "w8a", "synthetic"]
QUICK = ["svmguide1", "german.numer", "synthetic"]


def learners() -> dict[str, Callable]:
    rgd = {"window_size": 1000, "coreset_size": 500, "rebuild_every": 250}
    return {
        "RGDSVM 0.2": lambda: RGDSVMClassifier(outlier_fraction=0.2, seed=0, **rgd),
        "RGDSVM auto": lambda: RGDSVMClassifier(outlier_fraction="auto", seed=0, **rgd),
        "CoresetSVM": lambda: CoresetSVMClassifier(**rgd),
        "RampSVM": lambda: RampSVMClassifier(**rgd),
        "ORDI(LogReg)": lambda: ORDIFilter(linear_model.LogisticRegression(), removal_fraction=0.2),
        "LogReg": lambda: linear_model.LogisticRegression(),
        "PA-I C=1e-3": lambda: linear_model.PAClassifier(C=1e-3, mode=1),
    }


def data(name: str, seed: int):
    """(X, y in {-1, +1}) of a shared set, or the synthetic Gaussian classes (d = 20)."""
    if name == "synthetic":
        return make_gaussian_classes((1500, 2500), d=20, seed=seed)
    ds = load(name)
    return ds.X, ds.y


def rows(X, idx) -> list[dict]:
    """Dense dict rows, zeros included: River's StandardScaler only updates the features present in
    a row, so a sparse one-hot row (mushrooms, w8a: every present value is 1) would scale to all 0."""
    X = X[idx].toarray() if sp.issparse(X) else X[idx]
    return [{j: float(v) for j, v in enumerate(r)} for r in X]


def run_dataset(name: str, seed: int, flip: float, make: dict[str, Callable]) -> dict:
    X, y = data(name, seed)
    split = noisy_split(X, y, flip=0.0, split=(0.7, 0.0, 0.3), seed=seed, max_samples=MAX_ROWS.get(name))
    train = list(zip(rows(X, split.index_train), (bool(v > 0) for v in split.y_train_clean)))
    test = list(zip(rows(X, split.index_test), (bool(v > 0) for v in split.y_test)))
    stream = list(noisy_stream(train, flip=flip, seed=seed))
    out = {"n_train": len(train), "n_test": len(test), "n_features": int(X.shape[1]), "methods": {}}
    for method, factory in make.items():
        model = preprocessing.StandardScaler() | factory()
        t0 = time.perf_counter()
        preq = prequential(model, stream).get()
        test_acc = holdout(model, [], test).get()  # the model after the pass; no more learning
        out["methods"][method] = {
            "prequential_acc": preq,
            "test_error": 1.0 - test_acc,
            "seconds": time.perf_counter() - t0,
        }
        print(f"  {name} seed {seed} {method}: prequential {preq:.4f}, test error {1 - test_acc:.4f}", flush=True)
    return out


def memory(n_small: int, d: int = 20, seed: int = 0) -> dict:
    """Traced memory of RGDSVMClassifier after n_small and 10 * n_small generated rows."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    model = RGDSVMClassifier(window_size=1000, coreset_size=500, rebuild_every=1000, seed=seed)
    out = {}
    gc.collect()
    tracemalloc.start()
    for i in range(10 * n_small):
        x = rng.normal(size=d)
        model.learn_one({f"f{j}": float(v) for j, v in enumerate(x)}, bool((x @ w > 0) ^ (rng.random() < 0.15)))
        if i + 1 in (n_small, 10 * n_small):
            gc.collect()
            current, peak = tracemalloc.get_traced_memory()
            saved = len(pickle.dumps(model))
            out[i + 1] = {"current_bytes": current, "peak_bytes": peak, "pickled_bytes": saved,
                          "buffered_rows": len(model._buffer)}
            print(f"  memory after {i + 1} rows: current {current / 1e6:.2f} MB, peak {peak / 1e6:.2f} MB, "
                  f"pickled model {saved / 1e6:.3f} MB", flush=True)
    tracemalloc.stop()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small subset (2 sets + synthetic, 1 seed)")
    ap.add_argument("--datasets", nargs="+", help="override the data sets")
    ap.add_argument("--seeds", type=int, help="number of seeds")
    ap.add_argument("--flip", type=float, default=0.15)
    ap.add_argument("--memory-rows", type=int, help="n of the n vs 10n memory comparison (0: skip)")
    ap.add_argument("--memory-only", action="store_true",
                    help="only the memory comparison (writes results/stream_memory.json)")
    args = ap.parse_args()
    meta = header()
    names = args.datasets or (QUICK if args.quick else FULL)
    seeds = args.seeds or (1 if args.quick else 2)
    n_mem = args.memory_rows if args.memory_rows is not None else (5_000 if args.quick else 20_000)
    make = learners()
    # the numba kernels load here: the first pass would carry them in its seconds (and memory) otherwise
    warm_up(stream=[lambda f=factory: preprocessing.StandardScaler() | f() for factory in make.values()])

    if args.memory_only:
        names = []
    results = {name: [run_dataset(name, s, args.flip, make) for s in range(seeds)] for name in names}
    mem = memory(n_mem) if n_mem else {}

    if results:
        print(f"\n## Streaming, {args.flip:.0%} uniform flips, {seeds} seed(s): "
              "prequential accuracy vs clean labels % / clean test error % (mean over seeds)\n")
        print("| dataset (n_train, d) | " + " | ".join(make) + " |")
        print("|---|" + "---|" * len(make))
        for name, runs in results.items():
            cells = []
            for method in make:
                preq = np.mean([r["methods"][method]["prequential_acc"] for r in runs]) * 100
                err = np.mean([r["methods"][method]["test_error"] for r in runs]) * 100
                cells.append(f"{preq:.1f} / {err:.1f}")
            print(f"| {name} ({runs[0]['n_train']}, {runs[0]['n_features']}) | " + " | ".join(cells) + " |")
        print("\nseconds per pass (mean over data sets and seeds): " + ", ".join(
            f"{m} {np.mean([r['methods'][m]['seconds'] for runs in results.values() for r in runs]):.1f}" for m in make))
    if mem:
        (n1, a), (n2, b) = sorted(mem.items())
        print(f"\n## RGDSVMClassifier memory (tracemalloc, d = 20, window 1000 + coreset 500)\n")
        print("| rows | retained MB | peak MB | pickled model MB | buffered rows |\n|---|---|---|---|---|")
        for n, m in sorted(mem.items()):
            print(f"| {n} | {m['current_bytes'] / 1e6:.2f} | {m['peak_bytes'] / 1e6:.2f} | "
                  f"{m['pickled_bytes'] / 1e6:.3f} | {m['buffered_rows']} |")
        print(f"\nafter {n2} rows / after {n1} rows: retained {b['current_bytes'] / a['current_bytes']:.3f}, "
              f"pickled model {b['pickled_bytes'] / a['pickled_bytes']:.3f}")

    out_dir = Path(__file__).resolve().parent / "results"
    out_dir.mkdir(exist_ok=True)
    custom = args.datasets is not None or args.seeds is not None  # not the full run: not its file
    path = out_dir / ("stream_memory.json" if args.memory_only else
                      "stream_noise_quick.json" if args.quick else
                      "stream_noise_custom.json" if custom else "stream_noise.json")
    path.write_text(json.dumps({"meta": meta, "flip": args.flip, "results": results,
                                "memory": {str(k): v for k, v in mem.items()}}, indent=1))
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
