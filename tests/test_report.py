"""``benchmarks/run_all.py --quick`` runs end to end and writes a complete report (CI runs this).

No timing or accuracy assertions: the test checks that every table is there, that every number in
them parses, and that the plots are real PNG files.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from shared_data import require_shared

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = [
    "## 1. Test error at 15% uniform flips",
    "## 2. Flip-rate sweep",
    "## 3. Adversarial flips",
    "## 4. Drift",
    "## 5. Outlier detection",
    "## 6. Fit / learn time and memory",
]
METHOD_COLUMNS = ["RGD stream", "Coreset stream", "Ramp stream", "River LR", "River PA", "River ALMA",
                  "River Perceptron", "RGDSVC", "LinearSVC"]  # fmt: skip
NUMBER = r"-?\d+(?:\.\d+)?"
CELL = re.compile(rf"^(?:\*\*)?(?:{NUMBER}(?: ± {NUMBER})?|{NUMBER} x {NUMBER}|{NUMBER} data sets|– \(batch\)|–)(?:\*\*)?$")


def _tables(text: str) -> dict[str, list[list[list[str]]]]:
    """Per section, its Markdown tables: each a list of rows, the header first (separator dropped)."""
    out: dict[str, list[list[list[str]]]] = {}
    section, in_table = None, False
    for line in text.splitlines():
        if line.startswith("## "):
            section, in_table = line, False
            out[section] = []
        elif line.startswith("|") and section is not None:
            if not in_table:
                out[section].append([])
                in_table = True
            if not line.startswith("|---"):
                out[section][-1].append([c.strip() for c in line.strip("|").split("|")])
        else:
            in_table = False
    return out


@pytest.mark.slow
@pytest.mark.dataset
def test_quick_report_has_every_table(tmp_path):
    require_shared()
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "run_all.py"), "--quick", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = (tmp_path / "RESULTS.md").read_text()
    positions = [text.find(s) for s in SECTIONS]
    assert all(p >= 0 for p in positions), [s for s, p in zip(SECTIONS, positions) if p < 0]
    assert positions == sorted(positions)

    tables = _tables(text)
    for section in SECTIONS:
        (key,) = [k for k in tables if k.startswith(section)]
        body = text[text.find(section):]
        body = body[: body.find("\n## ", 1)] if "\n## " in body[1:] else body
        # each table says the command that made it and the package versions
        assert "Command: `python benchmarks/run_all.py --quick`" in body, section
        assert "versions: robustream" in body and "river" in body and "scikit-learn" in body, section
        assert tables[key], f"{section}: no table"
        for header, *rows in tables[key]:
            assert rows, f"{section}: empty table"
            numbers = 0
            for row in rows:
                assert len(row) == len(header), (section, row)
                for cell in row[1:]:
                    assert CELL.match(cell), (section, cell)
                    for value in re.findall(NUMBER, cell):
                        assert math.isfinite(float(value))
                        numbers += 1
            assert numbers > 0, section

    def first_table(n: int) -> list[list[str]]:
        return tables[[k for k in tables if k.startswith(SECTIONS[n])][0]][0]

    error_header, *error_rows = first_table(0)
    for method in METHOD_COLUMNS:
        assert method in error_header, method
    assert {row[0] for row in error_rows} == {"heart", "breast-cancer", "australian", "synthetic-small"}
    for row in error_rows:  # errors are percentages
        for cell in row[2:]:
            assert 0.0 <= float(re.findall(NUMBER, cell)[0]) <= 100.0
    assert [row[0] for row in first_table(1)[1:]] == ["0.00", "0.05", "0.10", "0.15", "0.20", "0.30"]
    assert {row[0] for row in first_table(3)[1:]} >= set(METHOD_COLUMNS)  # drift: every method
    assert {"RGDSVC", "RGD stream"} <= {row[0] for row in first_table(4)[1:]}  # outlier detection

    for png in re.findall(r"\]\((results/[^)]+\.png)\)", text):
        data = (tmp_path / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", png
    raw = json.loads((tmp_path / "results" / "run_all.json").read_text())
    assert raw["meta"]["report_command"] == "python benchmarks/run_all.py --quick"
    assert set(raw["main"]) == {"heart", "breast-cancer", "australian", "synthetic-small"}
    # RGD stream and RGDSVC pick the soft polish's nu on validation too, from batch_noise.py's grid
    picked = [run[m]["params"] for runs in raw["main"].values() for run in runs for m in ("RGD stream", "RGDSVC")]
    assert all(set(p) == {"outlier_fraction", "nu"} and p["nu"] in (0.1, 0.3, 0.6) for p in picked), picked
    assert "(outlier_fraction ∈ {0, 0.05, 0.1, 0.2, 0.3} × nu ∈ {0.1, 0.3, 0.6})" in text


def test_the_report_prequential_pass_does_not_score_rows_without_a_prediction(monkeypatch):
    # a one-vs-rest learner predicts None until it has learned a class; counted as an error, that row
    # lowered the report's prequential accuracy (robustream.evaluate.prequential skips it, as River)
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import run_all

    class FirstRowUnknown:
        def __init__(self):
            self.seen = 0

        def predict_one(self, x):
            return None if self.seen == 0 else x["y"]

        def learn_one(self, x, y):
            self.seen += 1

    model = FirstRowUnknown()
    monkeypatch.setattr(run_all, "make_stream_model", lambda *args: (model, model))
    rows = [{"y": v} for v in (True, False, True, True)]
    labels = [r["y"] for r in rows]
    preq = run_all.stream_pass("rgd", {}, 0, True, None, rows, labels, labels)[2]
    assert preq == 1.0  # 3 of 3 scored rows right, not 3 of 4


def test_benchmark_headers_name_the_checkout_the_library_was_imported_from(tmp_path):
    # PYTHONPATH may point a benchmark at another checkout (an older commit timed side by side): the
    # header must give that checkout's commit, not the benchmark's own
    import os
    import shutil

    other = tmp_path / "other"
    shutil.copytree(ROOT / "src" / "robustream", other / "src" / "robustream",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    git = ["git", "-C", str(other), "-c", "user.name=robustream", "-c", "user.email=robustream@localhost"]
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "another checkout"], check=True)
    commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
    code = f"import sys; sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); import _common; print(_common.git_state())"
    state = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(other / "src")},
                           capture_output=True, text=True, check=True).stdout  # fmt: skip
    expected = {"commit": commit.stdout.strip(), "src_uncommitted": [], "package": str(other / "src" / "robustream")}
    assert state.strip() == repr(expected)
