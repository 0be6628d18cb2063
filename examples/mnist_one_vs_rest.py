"""Ten MNIST digits with 15% wrong labels: RGDSVMClassifier one-vs-rest against LogisticRegression.

River's OneVsRestClassifier turns a binary learner into a multi-class one. A wrong label is one
of the other nine digits, so in each binary problem ("is it a 3?") the flipped rows sit almost all
on the positive side; ``noise_model="one_vs_rest"`` tells RGDSVMClassifier so. The models learn
from the first rows of the MNIST test set (the shared copy) with noisy labels, then are scored on
the following rows with clean labels.

    python examples/mnist_one_vs_rest.py
    python examples/mnist_one_vs_rest.py --train 3000 --test 1000 --flip 0.3
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from river import linear_model, metrics, multiclass

from robustream import RGDSVMClassifier
from robustream.datasets import load
from robustream.evaluate import noisy_stream


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, default=6000, help="rows learnt from, with noisy labels")
    parser.add_argument("--test", type=int, default=2000, help="rows scored after them, with clean labels")
    parser.add_argument("--flip", type=float, default=0.15, help="share of training labels replaced")
    args = parser.parse_args(argv)
    if args.train < 1 or args.test < 1:
        parser.error("--train and --test must be at least 1")
    if not 0.0 <= args.flip < 1.0:
        parser.error(f"--flip must be in [0, 1), got {args.flip}")

    data = load("mnist")  # 10,000 images of 784 pixels in [0, 1], labels 0-9
    if args.train + args.test > data.X.shape[0]:
        parser.error(f"--train + --test must be at most {data.X.shape[0]}")
    # dict rows with the non-zero pixels only: River learners read sparse rows as they are
    rows = [{int(j): float(data.X[i, j]) for j in np.flatnonzero(data.X[i])} for i in range(args.train + args.test)]
    labels = [int(v) for v in data.y[: args.train + args.test]]
    train = list(noisy_stream(zip(rows[: args.train], labels[: args.train]), flip=args.flip, seed=0,
                              labels=list(range(10))))  # fmt: skip
    wrong = sum(y_noisy != y for _, y_noisy, y in train)

    models = {
        "RGDSVMClassifier": multiclass.OneVsRestClassifier(
            RGDSVMClassifier(outlier_fraction=args.flip, noise_model="one_vs_rest", window_size=1000,
                             coreset_size=200, rebuild_every=1000, seed=0)  # fmt: skip
        ),
        "LogisticRegression": multiclass.OneVsRestClassifier(linear_model.LogisticRegression()),
    }
    print(f"MNIST, {args.train} training rows ({wrong} with a wrong label), {args.test} clean test rows")
    print(f"{'model (one-vs-rest)':<22}{'test accuracy':>14}{'seconds':>9}")
    for name, model in models.items():
        start = time.perf_counter()
        for x, y_noisy, _ in train:
            model.learn_one(x, y_noisy)
        accuracy = metrics.Accuracy()
        for x, y in zip(rows[args.train :], labels[args.train :]):
            accuracy.update(y, model.predict_one(x))
        print(f"{name:<22}{accuracy.get():>14.3f}{time.perf_counter() - start:>9.1f}")


if __name__ == "__main__":
    main()
