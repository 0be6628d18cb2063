"""``robustream demo`` and the producer/consumer examples, run as a user runs them."""

import json
import re
import subprocess
import sys
from pathlib import Path

from kafka_helpers import DaemonThread, serve_args

ROOT = Path(__file__).resolve().parents[1]


def _run(*args, timeout=300):
    done = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done.stdout


def test_demo_runs_end_to_end_and_accounts_for_every_message():
    out = _run("-m", "robustream.cli", "demo", "--dataset", "synthetic", "--max-samples", "1600", "--no-progress")
    lines = dict(m.groups() for line in out.splitlines() if (m := re.match(r"^(\S.*?)\s{2,}(\S.*)$", line)))
    assert int(lines["messages predicted"].strip()) == 1600
    assert int(lines["dead letters (malformed input)"].strip()) == 4
    accuracy = float(lines["prequential accuracy vs clean labels"])
    noisy_agreement = float(lines["agreement with the noisy labels it learned from"])
    # it learns from labels of which ~15% are wrong, and is scored against the clean ones
    assert accuracy > 0.85 and accuracy > noisy_agreement
    assert "metrics were served on http://127.0.0.1:" in out


def test_demo_rejects_a_bad_dataset_with_one_line():
    done = subprocess.run([sys.executable, "-m", "robustream.cli", "demo", "--dataset", "/nonexistent.svm"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith("robustream demo: error:") and "nonexistent" in done.stderr
    assert "Traceback" not in done.stderr


def test_producer_and_consumer_examples_around_a_running_daemon(broker, tmp_path):
    clean_file = tmp_path / "clean.json"
    out = _run("examples/produce_noisy.py", "--bootstrap-servers", broker.bootstrap_servers, "--topic", "in",
               "--dataset", "synthetic", "--max-samples", "800", "--clean-labels", str(clean_file))  # fmt: skip
    assert "sent 800 messages to in" in out
    with DaemonThread(serve_args(broker.bootstrap_servers, tmp_path / "ckpt")) as d:
        d.wait_processed(800)
        assert d.stop() == 0
    out = _run("examples/read_predictions.py", "--bootstrap-servers", broker.bootstrap_servers, "--topic", "preds",
               "--clean-labels", str(clean_file), "--show", "2")  # fmt: skip
    assert "800 predictions read from preds" in out
    accuracy = float(out.split("accuracy against the clean labels: ")[1].split()[0])
    assert accuracy > 0.8
    first = json.loads(out.splitlines()[0].replace("'", '"').replace("True", "true").replace("False", "false")
                       .replace("None", "null"))  # fmt: skip
    assert set(first) == {"id", "y_pred", "proba", "margin", "outlier", "model_version"}
