"""A River prequential loop with 20% flipped labels: RGDSVMClassifier vs LogisticRegression.

Each model predicts every sample, then learns from its (possibly wrong) label; accuracy is
measured against the clean label. Then the robust model is saved and loaded back.

    python examples/river_label_noise.py
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

from river import datasets, linear_model, metrics, preprocessing

from robustream import RGDSVMClassifier


def noisy(stream, flip: float, seed: int):
    rng = random.Random(seed)
    for x, y in stream:
        yield x, (not y) if rng.random() < flip else y, y


def main() -> None:
    models = {
        "RGDSVMClassifier": preprocessing.StandardScaler() | RGDSVMClassifier(rebuild_every=200, seed=0),
        "LogisticRegression": preprocessing.StandardScaler() | linear_model.LogisticRegression(),
    }
    for name, model in models.items():
        accuracy = metrics.Accuracy()
        for x, y_noisy, y_clean in noisy(datasets.Phishing(), flip=0.2, seed=0):
            accuracy.update(y_clean, model.predict_one(x))
            model.learn_one(x, y_noisy)
        print(f"{name:<20} prequential accuracy against clean labels: {accuracy.get():.3f}")

    learner = models["RGDSVMClassifier"]["RGDSVMClassifier"]
    print(f"margin width {learner.margin_width_:.3f}, outlier rate {learner.outlier_rate_:.2f}, "
          f"rebuilds {learner.n_rebuilds_}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rgd.json"
        learner.save(path)
        restored = RGDSVMClassifier.load(path)
        x = next(iter(datasets.Phishing()))[0]
        x = models["RGDSVMClassifier"]["StandardScaler"].transform_one(x)
        assert restored.predict_proba_one(x) == learner.predict_proba_one(x)
        print(f"saved and reloaded {path.name}: identical predictions")


if __name__ == "__main__":
    main()
