"""Every example runs as a user would run it."""

import subprocess
import sys
from pathlib import Path

import pytest

from shared_data import require_shared

ROOT = Path(__file__).resolve().parents[1]


def run(*args):
    done = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_batch_label_noise_example():
    require_shared("heart_scale.xz")
    out = run("examples/batch_label_noise.py", "heart", "--seeds", "1")
    assert "heart" in out and "RGDSVC" in out


def test_river_label_noise_example():
    out = run("examples/river_label_noise.py")
    assert "identical predictions" in out
    accuracy = {line.split()[0]: float(line.split()[-1]) for line in out.splitlines()
                if line.startswith(("RGDSVMClassifier", "LogisticRegression"))}  # fmt: skip
    # measured 0.968 against 0.916 (the docstring says so); the stream and the flips are seeded
    assert accuracy["RGDSVMClassifier"] > accuracy["LogisticRegression"] + 0.02


def test_mnist_one_vs_rest_example():
    require_shared("mnist-t10k-images-idx3-ubyte.gz")
    out = run("examples/mnist_one_vs_rest.py")
    accuracy = {line.split()[0]: float(line.split()[1]) for line in out.splitlines()
                if line.startswith(("RGDSVMClassifier", "LogisticRegression"))}  # fmt: skip
    assert set(accuracy) == {"RGDSVMClassifier", "LogisticRegression"}
    assert accuracy["RGDSVMClassifier"] > 0.8  # measured 0.849 (LogisticRegression 0.825)
