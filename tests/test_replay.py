"""``robustream replay`` run end to end through ``robustream.cli.main``."""

from __future__ import annotations

import gzip
import json
import lzma
import re
from pathlib import Path

import numpy as np
import pytest

from robustream import replay
from robustream.cli import main
from robustream.datasets import make_gaussian_classes
from shared_data import require_shared

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _is_png(path: Path) -> bool:
    data = path.read_bytes()
    # signature, then the IHDR chunk with a non-zero width and height
    return data[:8] == PNG_MAGIC and data[12:16] == b"IHDR" and int.from_bytes(data[16:20], "big") > 0 \
        and int.from_bytes(data[20:24], "big") > 0


@pytest.fixture(scope="module")
def svm_file(tmp_path_factory) -> Path:
    """300 rows of two Gaussian classes, written as xz-compressed svmlight with labels 0/1."""
    X, y = make_gaussian_classes(150, d=6, seed=4)
    lines = [f"{int(lab > 0)} " + " ".join(f"{j + 1}:{v:.6g}" for j, v in enumerate(row)) for row, lab in zip(X, y)]
    path = tmp_path_factory.mktemp("data") / "gauss.svm.xz"
    with lzma.open(path, "wt") as fh:
        fh.write("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def rgd_run(svm_file, tmp_path_factory):
    out = tmp_path_factory.mktemp("replay-rgd")
    code = main(["replay", str(svm_file), "--learner", "rgd", "--param", "rebuild_every=40",
                 "--param", "window_size=120", "--flip", "0.1,0.3", "--flip", "0", "--seeds", "2",
                 "--out", str(out), "--quiet"])  # fmt: skip
    return code, out, json.loads((out / "replay.json").read_text())


def test_rgd_replay_writes_json_and_valid_pngs(rgd_run):
    code, out, result = rgd_run
    assert code == 0
    assert result["flips"] == [0.0, 0.1, 0.3]
    assert result["seeds"] == 2 and len(result["runs"]) == 6
    assert result["learner_class"] == "RGDSVMClassifier" and result["params"]["rebuild_every"] == 40
    assert result["dataset"]["n_samples"] == 300
    assert set(result["plots"]) == {"prequential", "rebuilds", "error_vs_flip"}
    for name in result["plots"].values():
        assert _is_png(out / name), name
    for run in result["runs"]:
        # 300 rows -> 120 train + 90 validation streamed, 90 clean test rows
        assert run["n_stream"] == 210 and run["n_test"] == 90
        assert run["n_flipped"] == round(run["flip"] * 120) + round(run["flip"] * 90)
        assert 0.0 <= run["holdout_error"] <= 1.0 and 0.0 <= run["prequential_accuracy"] <= 1.0
        steps = [s for s, _ in run["curve"]]
        assert steps == sorted(steps) and steps[-1] == 210
        assert run["curve"][-1][1] == pytest.approx(run["prequential_accuracy"])
        # rebuild every 40 rows: a record at each rebuild, with the learner's state
        assert [r["step"] for r in run["rebuilds"]] == [40, 80, 120, 160, 200]
        assert [r["n_rebuilds_"] for r in run["rebuilds"]] == [1, 2, 3, 4, 5]
        assert all(0.0 <= r["outlier_rate_"] < 0.5 for r in run["rebuilds"])
    summary = {s["flip"]: s for s in result["summary"]}
    assert set(summary) == {0.0, 0.1, 0.3}
    errors = [r["holdout_error"] for r in result["runs"] if r["flip"] == 0.3]
    assert summary[0.3]["holdout_error_mean"] == pytest.approx(np.mean(errors))
    # well separated classes: a useful model, not a coin toss
    assert summary[0.0]["holdout_error_mean"] < 0.2


def test_same_command_same_numbers(svm_file, rgd_run, tmp_path):
    _, _, first = rgd_run
    code = main(["replay", str(svm_file), "--learner", "rgd", "--param", "rebuild_every=40",
                 "--param", "window_size=120", "--flip", "0.1,0.3", "--flip", "0", "--seeds", "2",
                 "--out", str(tmp_path), "--quiet", "--no-plots"])  # fmt: skip
    assert code == 0
    again = json.loads((tmp_path / "replay.json").read_text())
    assert again["plots"] == {} and not list(tmp_path.glob("*.png"))
    assert [r["holdout_error"] for r in again["runs"]] == [r["holdout_error"] for r in first["runs"]]


def test_river_learner_without_state_omits_rebuild_plot(svm_file, tmp_path, capsys):
    code = main(["replay", str(svm_file), "--learner", "river:LogisticRegression", "--seeds", "1",
                 "--out", str(tmp_path)])  # fmt: skip
    assert code == 0
    result = json.loads((tmp_path / "replay.json").read_text())
    assert result["rebuild_state_recorded"] is False
    assert set(result["plots"]) == {"prequential"}
    assert not (tmp_path / "rebuilds.png").exists() and _is_png(tmp_path / "prequential.png")
    assert any("rebuilds plot omitted" in n for n in result["notes"])
    assert all(run["rebuilds"] == [] for run in result["runs"])
    captured = capsys.readouterr()
    assert "holdout error" in captured.out
    assert "replay" in captured.err  # the progress bar (tqdm or the plain line) goes to stderr


def test_a_plot_that_cannot_be_written_is_one_line_and_earlier_plots_do_not_linger(svm_file, tmp_path, capsys):
    argv = ["replay", str(svm_file), "--learner", "rgd", "--param", "rebuild_every=40", "--seeds", "1", "--quiet",
            "--out", str(tmp_path), "--flip", "0.1"]  # fmt: skip
    assert main(argv + ["--flip", "0.2"]) == 0 and (tmp_path / "error_vs_flip.png").exists()
    # one flip rate: no error-vs-flip plot, and the first run's must not sit beside the new results
    assert main(argv) == 0
    assert not (tmp_path / "error_vs_flip.png").exists()
    (tmp_path / "prequential.png").unlink()
    (tmp_path / "prequential.png").mkdir()  # in the way: a traceback from matplotlib before, results lost
    capsys.readouterr()
    assert main(argv + ["--flip", "0.2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"robustream replay: error: --out {tmp_path}: cannot write prequential.png (") and \
        "Traceback" not in err
    assert json.loads((tmp_path / "replay.json").read_text())["flips"] == [0.1, 0.2]  # the results are kept


def test_a_stream_shorter_than_rebuild_every_says_so(svm_file, tmp_path):
    code = main(["replay", str(svm_file), "--learner", "rgd", "--param", "rebuild_every=100000", "--seeds", "1",
                 "--out", str(tmp_path), "--quiet"])  # fmt: skip
    assert code == 0
    result = json.loads((tmp_path / "replay.json").read_text())
    assert any("no rebuild happened" in n and "rebuild_every=100000" in n for n in result["notes"])
    assert "rebuilds" not in result["plots"] and not (tmp_path / "rebuilds.png").exists()


def test_adversarial_noise_flips_the_positive_class(svm_file, tmp_path):
    code = main(["replay", str(svm_file), "--learner", "ramp", "--noise", "adversarial", "--flip", "0.2",
                 "--seeds", "1", "--out", str(tmp_path), "--quiet", "--no-plots"])  # fmt: skip
    assert code == 0
    result = json.loads((tmp_path / "replay.json").read_text())
    assert result["noise"] == "adversarial" and result["runs"][0]["n_flipped"] == 24 + 18
    assert not any("plot" in note for note in result["notes"])  # --no-plots: no note on plots left out


@pytest.mark.dataset
def test_shared_dataset_with_max_samples(tmp_path):
    require_shared("mushrooms.xz")
    code = main(["replay", "mushrooms", "--learner", "coreset", "--max-samples", "400", "--seeds", "1",
                 "--flip", "0.15", "--out", str(tmp_path), "--quiet"])  # fmt: skip
    assert code == 0
    result = json.loads((tmp_path / "replay.json").read_text())
    assert result["dataset"]["name"] == "mushrooms" and result["dataset"]["n_features"] == 112
    assert result["runs"][0]["n_stream"] == 280 and result["runs"][0]["n_test"] == 120
    assert result["summary"][0]["holdout_error_mean"] < 0.25
    assert _is_png(tmp_path / "prequential.png") and _is_png(tmp_path / "rebuilds.png")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["{missing}"], "no such data file"),
        (["{folder}"], "is a folder, not a data file"),  # "no such data file" before, of a path that is there
        (["{data}", "--flip", "0.7"], "--flip 0.7: must be in [0, 0.5)"),
        (["{data}", "--flip", "0.1,abc"], "--flip abc: not a number"),
        (["{data}", "--learner", "nope"], "--learner nope: unknown learner 'nope'"),
        (["{data}", "--learner", "river:NoSuchModel"], "no River classifier"),
        (["{data}", "--param", "rebuild_every"], "expected key=value"),
        (["{data}", "--param", "bogus=1"], "--learner rgd --param bogus=1: RGDSVMClassifier has no parameter 'bogus' "
                                           "(its parameters: "),
        (["{data}", "--learner", "river:LogisticRegression", "--param", "l2=abc"],
         "--learner river:LogisticRegression --param l2=abc: the model fails on a first message (TypeError: "),
        (["{data}", "--seeds", "0"], "--seeds 0: must be at least 1"),
        (["{data}", "--max-samples", "x"], "--max-samples x: not an integer"),
        (["{data}", "--label-column", "last"], "--label-column last: not an integer"),
        (["{csv}", "--label-column", "5"], "label_column=5 is out of range for 3 columns"),
        (["{corrupt_gz}"], "cannot decompress (.gz file)"),
        (["{data}", "--noise", "gaussian"], "--noise gaussian: must be uniform or adversarial"),
        (["{garbage}"], "DATASET"),
        (["no-such-dataset-name"], "unknown data set"),
        (["{one_class}"], "every label is 7.0; replay needs two classes or more"),
        (["{empty}"], "empty.svm: no data rows"),
        (["{data}", "--max-samples", "3"], "only 3 rows (--max-samples 3), too few to replay"),
        (["{data}", "--learner", "rgd", "--param", "seed=abc"], "seed must be a non-negative integer, got 'abc'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, message, svm_file, tmp_path, capsys):
    garbage = tmp_path / "garbage.svm"
    garbage.write_text("1 1:0.5\nnot-a-label 2:x\n")
    one_class = tmp_path / "one_class.svm"
    one_class.write_text("".join(f"7 1:{i / 10} 2:{i % 3}\n" for i in range(100)))
    empty = tmp_path / "empty.svm"
    empty.write_text("# a comment and no rows\n")
    csv = tmp_path / "label_last.csv"
    csv.write_text("0.5,1,a\n1.5,2,b\n")
    corrupt_gz = tmp_path / "corrupt.svm.gz"
    raw = bytearray(gzip.compress(b"1 1:1\n" * 1000))
    raw[20] ^= 0xFF  # a damaged deflate stream: zlib.error
    corrupt_gz.write_bytes(bytes(raw))
    values = {"folder": str(tmp_path), "missing": str(tmp_path / "missing.svm"), "data": str(svm_file), "garbage": str(garbage),
              "one_class": str(one_class), "empty": str(empty), "csv": str(csv), "corrupt_gz": str(corrupt_gz)}
    argv = [a.format(**values) for a in argv]
    code = main(["replay", *argv, "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err
    assert err.startswith("robustream replay: error: ") and err.count("\n") == 1
    assert not (tmp_path / "out").exists()  # a usage error leaves no output folder behind
    assert not re.search(r"DATASET (\S+)[:,] \1", err)  # a message that names the file names it once
    assert "Traceback" not in err
    assert not (tmp_path / "out" / "replay.json").exists()


def test_a_csv_file_with_its_label_in_the_last_column(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 3))
    y = np.where(X @ [1.0, -1.0, 0.5] > 0, "yes", "no")
    path = tmp_path / "label_last.csv"
    path.write_text("a,b,c,label\n" + "".join(f"{r[0]},{r[1]},{r[2]},{lab}\n" for r, lab in zip(X, y)))
    code = main(["replay", str(path), "--learner", "river:LogisticRegression", "--label-column", "-1", "--seeds", "1",
                 "--out", str(tmp_path / "out"), "--quiet", "--no-plots"])  # fmt: skip
    assert code == 0
    result = json.loads((tmp_path / "out" / "replay.json").read_text())
    assert result["dataset"]["n_features"] == 3 and "--label-column -1" in result["command"]
    assert result["summary"][0]["holdout_error_mean"] < 0.2


def test_missing_matplotlib_is_one_line(svm_file, tmp_path, capsys, monkeypatch):
    def no_matplotlib():
        raise ImportError("No module named 'matplotlib'")

    monkeypatch.setattr(replay, "_pyplot", no_matplotlib)
    code = main(["replay", str(svm_file), "--out", str(tmp_path), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and 'pip install "robustream[bench]"' in err and err.count("\n") == 1


def test_parse_flips_sorts_and_deduplicates():
    assert replay.parse_flips(["0.2,0.1", "0.1", " 0 "]) == [0.0, 0.1, 0.2]
    with pytest.raises(replay.ReplayError, match="empty value"):
        replay.parse_flips(["0.1,"])


@pytest.mark.parametrize("n", [399, 400, 537, 800, 801])
def test_the_curve_has_at_most_curve_points_points(n):
    from river.metrics import Accuracy

    curve: list = []
    stream = replay._recording_stream([{}] * n, [True] * n, [True] * n, None, False, replay._Progress(n, True),
                                      curve, [], Accuracy())  # fmt: skip
    assert sum(1 for _ in stream) == n
    assert len(curve) <= replay.CURVE_POINTS and curve[-1][0] == n
    assert len(curve) >= replay.CURVE_POINTS // 2  # not much sparser than it may be


def test_an_unknown_option_is_named_with_the_subcommand_usage(capsys):
    with pytest.raises(SystemExit) as info:
        main(["replay", "heart", "--bogus"])
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert err.startswith("usage: robustream replay") and "robustream replay: error: unrecognized arguments: --bogus" in err
    with pytest.raises(SystemExit):  # before the subcommand: the top-level command's
        main(["--bogus", "replay", "heart"])
    err = capsys.readouterr().err
    assert err.startswith("usage: robustream [-h]") and "robustream: error: unrecognized arguments: --bogus" in err


def test_the_name_synthetic_wins_over_a_file_of_that_name_as_data_set_names_do(tmp_path, monkeypatch):
    # a file "synthetic" in the current folder replaced the generator, while "heart" stays the shared set
    from robustream.replay import _load

    (tmp_path / "synthetic").write_text("1 1:0.5\n-1 1:-0.5\n")
    monkeypatch.chdir(tmp_path)
    assert _load("synthetic").X.shape[1] == 100  # the generator
    assert _load("./synthetic").X.shape == (2, 1)
