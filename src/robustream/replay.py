"""``robustream replay``: replay a data set with flipped labels through a River learner.

For every ``--flip`` rate and seed the data set is split by :func:`robustream.datasets.noisy_split`
(random 40/30/30 train/validation/test split, ``--noise`` flips in train and validation, clean test
labels). The noisy train and validation rows (70%) are the stream: each row is predicted, scored
against its *clean* label, then learned with its *noisy* label (:func:`robustream.evaluate.prequential`).
After that one pass the model is scored on the clean test rows (:func:`robustream.evaluate.holdout`,
with an empty training stream), giving the holdout error.

Written to ``--out``:

* ``replay.json``: the arguments, the data set, per run (flip, seed) the prequential accuracy,
  the holdout error, the accuracy curve and the learner's state at every rebuild
  (``n_rebuilds_``, ``outlier_rate_``, ``margin_width_``), and a summary per flip rate;
* ``prequential.png``: prequential accuracy over the stream, one line per flip rate;
* ``rebuilds.png``: outlier rate and margin width at each rebuild (learners exposing
  ``outlier_rate_``/``margin_width_``/``n_rebuilds_``; for others the JSON says why it is missing);
* ``error_vs_flip.png``: holdout error against flip rate (with two or more ``--flip`` values).

DATASET is a shared data set name (``robustream.datasets.DATASETS``), ``synthetic`` (the RGD
paper's two Gaussian classes, :func:`robustream.datasets.make_gaussian_classes`, d = 100), or the
path of a svmlight / CSV / dense file, compressed or not.

>>> import argparse
>>> parser = argparse.ArgumentParser(prog="replay")
>>> add_arguments(parser)
>>> args = parser.parse_args(["heart", "--flip", "0.1,0.2", "--flip", "0.3", "--learner", "ramp"])
>>> parse_flips(args.flip), args.learner, args.noise
([0.1, 0.2, 0.3], 'ramp', 'uniform')
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
import scipy.sparse as sp

__all__ = ["add_arguments", "run", "parse_flips", "rows_as_dicts", "scaler_for", "ReplayError"]

#: Learner attributes recorded at every rebuild.
STATE_ATTRIBUTES = ("n_rebuilds_", "outlier_rate_", "margin_width_")
#: At most this many points of each prequential accuracy curve are stored.
CURVE_POINTS = 400
PLOT_NAMES = ("prequential.png", "rebuilds.png", "error_vs_flip.png")
MATPLOTLIB_HINT = 'matplotlib is not installed: pip install "robustream[bench]" (or pass --no-plots)'


class ReplayError(ValueError):
    """A bad argument or an unreadable input; the message is the one line shown to the user."""


# ------------------------------------------------------------------------------------------------
# arguments
# ------------------------------------------------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``replay`` options to ``parser``.

    Numbers are taken as text and checked by :func:`run`, so that a bad value gives one line
    naming the option instead of argparse's usage block.
    """
    parser.description = "Replay a data set with flipped labels through a learner: prequential accuracy " \
                         "against the clean labels, clean holdout error after one pass, JSON and PNG plots."
    parser.add_argument("dataset", metavar="DATASET",
                        help="shared data set name (e.g. heart, mushrooms), 'synthetic', or a svmlight/CSV file path")
    parser.add_argument("--learner", default="rgd",
                        help="rgd, coreset, ramp, ordi or river:<Class> (e.g. river:LogisticRegression); default rgd")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="learner parameter, repeatable (e.g. --param outlier_fraction=0.2)")
    parser.add_argument("--flip", action="append", default=None, metavar="RATE",
                        help="share of train/validation labels flipped, in [0, 0.5); repeat or comma-separate "
                             "for an error-vs-flip plot (default 0.15)")
    parser.add_argument("--noise", default="uniform", help="uniform or adversarial (default uniform)")
    parser.add_argument("--seeds", default="5", metavar="N", help="number of seeds 0..N-1 per flip rate (default 5)")
    parser.add_argument("--max-samples", default=None, metavar="N",
                        help="use a random subsample of N rows of the data set (default: all)")
    parser.add_argument("--label-column", default="0", metavar="N",
                        help="a CSV file's label column, -1 for the last one (default 0; a registered shared "
                             "file, given by name or path, knows its own)")
    parser.add_argument("--no-scale", action="store_true",
                        help="do not put river's StandardScaler (MaxAbsScaler for sparse data) in front of the learner")
    parser.add_argument("--out", default="replay-out", metavar="DIR", help="output folder (default ./replay-out)")
    parser.add_argument("--no-plots", action="store_true", help="write the JSON only (no matplotlib needed)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def parse_flips(values: Sequence[str] | None) -> list[float]:
    """``["0.1,0.2", "0.3"]`` -> ``[0.1, 0.2, 0.3]`` (sorted, unique); raises ReplayError naming the bad item.

    >>> parse_flips(None)
    [0.15]
    >>> parse_flips(["0.6"])
    Traceback (most recent call last):
    ...
    robustream.replay.ReplayError: --flip 0.6: must be in [0, 0.5)
    """
    if not values:
        return [0.15]
    flips: set[float] = set()
    for value in values:
        for item in str(value).split(","):
            item = item.strip()
            if not item:
                raise ReplayError(f"--flip {value!r}: empty value")
            try:
                rate = float(item)
            except ValueError:
                raise ReplayError(f"--flip {item}: not a number") from None
            if not (0.0 <= rate < 0.5):
                raise ReplayError(f"--flip {item}: must be in [0, 0.5)")
            flips.add(rate)
    return sorted(flips)


def _positive_int(option: str, text: str | None) -> int | None:
    if text is None:
        return None
    try:
        value = int(str(text))
    except ValueError:
        raise ReplayError(f"{option} {text}: not an integer") from None
    if value < 1:
        raise ReplayError(f"{option} {text}: must be at least 1")
    return value


# ------------------------------------------------------------------------------------------------
# data
# ------------------------------------------------------------------------------------------------
def _load(name: str, label_column: int = 0):
    from . import datasets

    if name == "synthetic":  # a name wins over a file of that name, as in datasets.load (./synthetic: the file)
        X, y = datasets.make_gaussian_classes((1000, 3000), d=100, seed=0)
        return datasets.Dataset(X, y, "synthetic", (-1.0, 1.0))
    try:
        return datasets.load(name, label_column=label_column)
    except (FileNotFoundError, ValueError) as exc:
        message = str(exc)
        if message.startswith(name) and message[len(name):len(name) + 1] in (":", ","):
            raise ReplayError(f"DATASET {message}") from None  # it names the file already
        raise ReplayError(f"DATASET {name}: {message}") from None
    except (OSError, EOFError, UnicodeError) as exc:
        raise ReplayError(f"DATASET {name}: cannot read it ({type(exc).__name__}: {exc})") from None


def rows_as_dicts(X) -> list[dict[int, float]]:
    """One ``{column: value}`` dict per row.

    Dense rows keep their zeros, so that a streaming ``StandardScaler`` sees every value (with the
    zeros left out it would see one-hot columns as constant); sparse (CSR) rows keep only their
    stored entries.

    >>> rows_as_dicts(np.array([[0.0, 2.0], [1.5, 0.0]]))
    [{0: 0.0, 1: 2.0}, {0: 1.5, 1: 0.0}]
    >>> rows_as_dicts(sp.csr_matrix(np.array([[0.0, 2.0], [1.5, 0.0]])))
    [{1: 2.0}, {0: 1.5}]
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        return [
            dict(zip(X.indices[a:b].tolist(), X.data[a:b].tolist()))
            for a, b in zip(X.indptr[:-1], X.indptr[1:])
        ]
    X = np.asarray(X, dtype=np.float64)
    keys = list(range(X.shape[1]))
    return [dict(zip(keys, r)) for r in X.tolist()]


def scaler_for(X: np.ndarray | sp.spmatrix) -> Any:
    """River's ``StandardScaler`` for dense data, ``MaxAbsScaler`` for sparse rows (whose missing
    keys are zeros the running mean and variance would never see)."""
    from river import preprocessing

    return preprocessing.MaxAbsScaler() if sp.issparse(X) else preprocessing.StandardScaler()


def _river_labels(y: np.ndarray, binary: bool) -> list:
    return [bool(v > 0) for v in y] if binary else [int(v) for v in y]


# ------------------------------------------------------------------------------------------------
# learner
# ------------------------------------------------------------------------------------------------
def _make_model(name: str, params: dict[str, Any], seed: int, binary: bool, scaler=None):
    """The learner (fresh), seeded with ``seed`` when it has a ``seed`` parameter the user left alone,
    wrapped in OneVsRest for multi-class data when it is binary-only, behind ``scaler`` if given."""
    from .learners.registry import make_learner

    if "seed" not in params and "seed" in make_learner(name, params)._get_params():
        params = {**params, "seed": seed}
    learner = make_learner(name, params, multiclass=not binary)
    model = scaler | learner if scaler is not None else learner
    return model, learner


def _has_state(learner) -> bool:
    return all(hasattr(learner, a) for a in STATE_ATTRIBUTES)


# ------------------------------------------------------------------------------------------------
# progress
# ------------------------------------------------------------------------------------------------
class _Progress:
    """tqdm when installed (on stderr), else one plain line per 10%."""

    def __init__(self, total: int, quiet: bool):
        self.total, self.done, self.quiet, self._next = total, 0, quiet, 0.1
        self._bar = None
        if not quiet:
            try:
                from tqdm import tqdm
            except ImportError:
                pass
            else:
                self._bar = tqdm(total=total, unit="row", file=sys.stderr, desc="replay", mininterval=0.5)

    def update(self, n: int) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
        elif not self.quiet and self.done >= self._next * self.total:
            print(f"replay: {self.done}/{self.total} rows ({100 * self.done / self.total:.0f}%)",
                  file=sys.stderr, flush=True)  # fmt: skip
            while self._next * self.total <= self.done:
                self._next += 0.1

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


# ------------------------------------------------------------------------------------------------
# one run
# ------------------------------------------------------------------------------------------------
@dataclass
class RunResult:
    """One (flip, seed) replay."""

    flip: float
    seed: int
    n_stream: int
    n_test: int
    n_flipped: int
    prequential_accuracy: float
    holdout_error: float
    seconds: float
    curve: list[tuple[int, float]] = field(default_factory=list)
    rebuilds: list[dict[str, float]] = field(default_factory=list)


def _recording_stream(xs, ys_noisy, ys_clean, learner, track: bool, progress: _Progress,
                      curve: list, rebuilds: list, metric) -> Iterator[tuple[dict, Any, Any]]:  # fmt: skip
    """Feed ``prequential`` and, after each learned row, record the curve and the rebuilds."""
    n = len(xs)
    every = max(1, -(-n // CURVE_POINTS))  # ceil: at most CURVE_POINTS points
    last_rebuilds = getattr(learner, "n_rebuilds_", 0) if track else 0
    pending = 0
    for i, (x, yn, yc) in enumerate(zip(xs, ys_noisy, ys_clean)):
        yield x, yn, yc  # prequential predicts, updates the metric, then learns before resuming us
        step = i + 1
        if step % every == 0 or step == n:
            curve.append((step, metric.get()))
        if track and learner.n_rebuilds_ != last_rebuilds:
            last_rebuilds = learner.n_rebuilds_
            rebuilds.append({"step": step, **{a: float(getattr(learner, a)) for a in STATE_ATTRIBUTES}})
        pending += 1
        if pending >= 256:
            progress.update(pending)
            pending = 0
    progress.update(pending)


def replay_once(data, *, flip: float, seed: int, noise: str, learner_name: str, params: dict[str, Any],
                max_samples: int | None, scale: bool, progress: _Progress) -> RunResult:  # fmt: skip
    """Split, replay the noisy train+validation stream prequentially, then score the clean test rows."""
    from river import metrics

    from .datasets import noisy_split
    from .evaluate import holdout, prequential

    binary = bool(np.all(np.isin(np.unique(data.y), [-1.0, 1.0])))
    split = noisy_split(data.X, data.y, flip=flip, noise=noise, seed=seed, max_samples=max_samples)
    X_stream = sp.vstack([split.X_train, split.X_val]).tocsr() if sp.issparse(split.X_train) \
        else np.vstack([split.X_train, split.X_val])
    xs = rows_as_dicts(X_stream)
    ys_noisy = _river_labels(np.concatenate([split.y_train, split.y_val]), binary)
    ys_clean = _river_labels(np.concatenate([split.y_train_clean, split.y_val_clean]), binary)
    model, learner = _make_model(learner_name, params, seed, binary, scaler_for(X_stream) if scale else None)
    track = _has_state(learner)
    curve: list[tuple[int, float]] = []
    rebuilds: list[dict[str, float]] = []
    metric = metrics.Accuracy()
    t0 = time.perf_counter()
    prequential(model, _recording_stream(xs, ys_noisy, ys_clean, learner, track, progress, curve, rebuilds, metric),
                metric)  # fmt: skip
    seconds = time.perf_counter() - t0
    test = zip(rows_as_dicts(split.X_test), _river_labels(split.y_test, binary))
    accuracy = holdout(model, iter(()), test).get()
    return RunResult(
        flip=flip, seed=seed, n_stream=len(xs), n_test=len(split.y_test),
        n_flipped=int(split.flipped_train.sum() + split.flipped_val.sum()),
        prequential_accuracy=float(metric.get()), holdout_error=float(1.0 - accuracy), seconds=seconds,
        curve=curve, rebuilds=rebuilds,
    )  # fmt: skip


# ------------------------------------------------------------------------------------------------
# plots
# ------------------------------------------------------------------------------------------------
def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _flip_label(flip: float) -> str:
    return f"{100 * flip:g}% flips"


def _plot_prequential(plt, runs: list[RunResult], title: str, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(7, 4))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, flip in enumerate(sorted({r.flip for r in runs})):
        colour = colours[k % len(colours)]
        for j, r in enumerate(x for x in runs if x.flip == flip):
            steps, acc = zip(*r.curve) if r.curve else ((), ())
            ax.plot(steps, acc, color=colour, alpha=0.35 if j else 0.9, lw=1.2,
                    label=_flip_label(flip) if j == 0 else None)  # fmt: skip
    ax.set_xlabel("rows seen")
    ax.set_ylabel("prequential accuracy (clean labels)")
    ax.set_title(title, fontsize=9)
    _finish(plt, fig, [ax], ax, path)


def _finish(plt, fig, axes: list, legend_ax, path: Path) -> None:
    """The common epilogue of the replay plots: grid, legend, layout, write, close."""
    for ax in axes:
        ax.grid(alpha=0.3)
    legend_ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_rebuilds(plt, runs: list[RunResult], title: str, path: Path) -> None:
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(7, 5.5), sharex=True)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, flip in enumerate(sorted({r.flip for r in runs})):
        colour = colours[k % len(colours)]
        for j, r in enumerate(x for x in runs if x.flip == flip):
            steps = [e["step"] for e in r.rebuilds]
            label = _flip_label(flip) if j == 0 else None
            alpha = 0.35 if j else 0.9
            ax1.plot(steps, [e["outlier_rate_"] for e in r.rebuilds], "o-", ms=2.5, color=colour, alpha=alpha,
                     label=label)  # fmt: skip
            ax2.plot(steps, [e["margin_width_"] for e in r.rebuilds], "o-", ms=2.5, color=colour, alpha=alpha)
        ax1.axhline(flip, color=colour, ls=":", lw=1)
    ax1.set_ylabel("outlier rate (per rebuild)")
    ax2.set_ylabel("margin width (per rebuild)")
    ax2.set_xlabel("rows seen")
    ax1.set_title(title + "  (dotted: true flip rate)", fontsize=9)
    _finish(plt, fig, [ax1, ax2], ax1, path)


def _plot_error_vs_flip(plt, summary: list[dict], title: str, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(6, 4))
    flips = [s["flip"] for s in summary]
    ax.errorbar([100 * f for f in flips], [100 * s["holdout_error_mean"] for s in summary],
                yerr=[100 * s["holdout_error_sd"] for s in summary], marker="o", capsize=3,
                label="clean holdout error after one pass")  # fmt: skip
    ax.plot([100 * f for f in flips], [100 * (1 - s["prequential_accuracy_mean"]) for s in summary], "s--",
            label="prequential error (clean labels)")  # fmt: skip
    ax.set_xlabel("flipped labels (%)")
    ax.set_ylabel("error (%)")
    ax.set_title(title, fontsize=9)
    _finish(plt, fig, [ax], ax, path)


# ------------------------------------------------------------------------------------------------
# command
# ------------------------------------------------------------------------------------------------
def _error(message: str) -> int:
    print(f"robustream replay: error: {message}", file=sys.stderr)
    return 2


def _summary(runs: list[RunResult]) -> list[dict[str, float]]:
    out = []
    for flip in sorted({r.flip for r in runs}):
        err = np.array([r.holdout_error for r in runs if r.flip == flip])
        acc = np.array([r.prequential_accuracy for r in runs if r.flip == flip])
        out.append({
            "flip": flip, "seeds": int(err.size),
            "holdout_error_mean": float(err.mean()), "holdout_error_sd": float(err.std(ddof=1)) if err.size > 1 else 0.0,
            "prequential_accuracy_mean": float(acc.mean()), "prequential_accuracy_sd": float(acc.std(ddof=1)) if acc.size > 1 else 0.0,
        })  # fmt: skip
    return out


def run(args: argparse.Namespace) -> int:
    """Run ``robustream replay`` with parsed ``args``; returns the exit code (0, or 2 on a bad input)."""
    try:
        return _run(args)
    except ReplayError as exc:
        return _error(str(exc))


def _run(args: argparse.Namespace) -> int:
    from .learners.registry import learner_flags, parse_params, trial_learner

    flips = parse_flips(args.flip)
    n_seeds = _positive_int("--seeds", args.seeds)
    max_samples = _positive_int("--max-samples", args.max_samples)
    try:
        label_column = int(str(args.label_column))
    except ValueError:
        raise ReplayError(f"--label-column {args.label_column}: not an integer") from None
    if args.noise not in ("uniform", "adversarial"):
        raise ReplayError(f"--noise {args.noise}: must be uniform or adversarial")
    try:
        params = parse_params(args.param)
    except ValueError as exc:
        raise ReplayError(str(exc)) from None
    try:  # fail before loading anything
        trial_learner(args.learner, params, True)
    except ValueError as exc:
        raise ReplayError(f"{learner_flags(args.learner, args.param)}: {exc}") from None
    plt = None
    if not args.no_plots:
        try:
            plt = _pyplot()
        except ImportError:
            raise ReplayError(MATPLOTLIB_HINT) from None
    data = _load(args.dataset, label_column)  # a file without rows is refused by the loader
    if len(data.classes) < 2:
        raise ReplayError(f"DATASET {data.name}: every label is {data.classes[0]!r}; replay needs two classes or more")
    classes = np.unique(data.y)
    binary = bool(np.all(np.isin(classes, [-1.0, 1.0])))
    if args.noise == "adversarial" and not binary:
        raise ReplayError(f"--noise adversarial: needs a binary data set, {data.name} has {classes.size} classes")
    n_used = min(data.n_samples, max_samples or data.n_samples)
    n_stream_each = round(0.4 * n_used) + min(round(0.3 * n_used), n_used - round(0.4 * n_used))
    if n_stream_each < 4:
        limit = f" (--max-samples {max_samples})" if max_samples and max_samples < data.n_samples else ""
        raise ReplayError(f"DATASET {data.name}: only {n_used} rows{limit}, too few to replay")
    out = Path(args.out)  # made once the inputs are known to be good (a usage error leaves no folder)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ReplayError(f"--out {out}: cannot create the folder ({exc.strerror or exc})") from None
    progress = _Progress(n_stream_each * len(flips) * n_seeds, args.quiet)
    runs: list[RunResult] = []
    try:
        for flip in flips:
            for seed in range(n_seeds):
                runs.append(replay_once(
                    data, flip=flip, seed=seed, noise=args.noise, learner_name=args.learner, params=params,
                    max_samples=max_samples, scale=not args.no_scale, progress=progress,
                ))  # fmt: skip
    except (ValueError, TypeError) as exc:  # a flip rate the data cannot take, a parameter rejected at fit time
        raise ReplayError(f"{data.name}: {exc}") from None
    finally:
        progress.close()

    _, learner = _make_model(args.learner, params, 0, binary)
    has_state = _has_state(learner)
    summary = _summary(runs)
    title = f"{args.learner} on {Path(data.name).name} ({args.noise} flips, {n_seeds} seed{'s' * (n_seeds > 1)})"
    plots: dict[str, str] = {}
    notes: list[str] = []
    rebuilt = any(r.rebuilds for r in runs)
    if has_state and not rebuilt:
        every = getattr(learner, "rebuild_every", None) or getattr(getattr(learner, "classifier", None),
                                                                    "rebuild_every", "?")  # fmt: skip
        notes.append(f"no rebuild happened: each stream has {max(r.n_stream for r in runs)} rows, "
                     f"fewer than rebuild_every={every}, so the scores are the warm start's; pass e.g. "
                     f"--param rebuild_every=50 for a data set this small")  # fmt: skip
    drawings = {}  # drawn once replay.json is written: a plot that cannot be written loses no result
    if plt is not None:
        drawings["prequential.png"] = lambda path: _plot_prequential(plt, runs, title, path)
        plots["prequential"] = "prequential.png"
        if has_state and rebuilt:
            drawings["rebuilds.png"] = lambda path: _plot_rebuilds(plt, runs, title, path)
            plots["rebuilds"] = "rebuilds.png"
        if len(flips) > 1:
            drawings["error_vs_flip.png"] = lambda path: _plot_error_vs_flip(plt, summary, title, path)
            plots["error_vs_flip"] = "error_vs_flip.png"
    if not has_state:
        notes.append(f"{type(learner).__name__} does not expose {', '.join(STATE_ATTRIBUTES)}: no per-rebuild "
                     "outlier rate / margin width recorded, rebuilds plot omitted")  # fmt: skip
    elif not rebuilt and plt is not None:
        notes.append("rebuilds plot omitted (no rebuild)")
    if len(flips) == 1 and plt is not None:
        notes.append("one flip rate: error-vs-flip plot omitted (give --flip several times)")
    result = {
        "command": _command(args),
        "dataset": {"name": data.name, "n_samples": data.n_samples, "n_features": data.n_features,
                    "classes": [c if isinstance(c, (str, int, float)) else str(c) for c in data.classes],
                    "max_samples": max_samples},  # fmt: skip
        "learner": args.learner, "learner_class": type(learner).__name__, "params": params,
        "scaled": not args.no_scale, "noise": args.noise, "flips": flips, "seeds": n_seeds,
        "protocol": "noisy_split 40/30/30; stream = noisy train+validation rows (prequential, scored against the "
                    "clean labels); holdout = clean test rows after one pass",
        "rebuild_state_recorded": has_state,
        "summary": summary,
        "runs": [vars(r) for r in runs],
        "plots": plots,
        "notes": notes,
    }  # fmt: skip
    try:
        (out / "replay.json").write_text(json.dumps(result, indent=1, default=_json_default))
    except OSError as exc:
        raise ReplayError(f"--out {out}: cannot write replay.json ({exc.strerror or exc})") from None
    for name in PLOT_NAMES:
        if name not in drawings:  # an earlier run's plot would sit beside this run's results
            try:
                (out / name).unlink(missing_ok=True)
            except OSError:
                pass
    for name, draw in drawings.items():
        try:
            draw(out / name)
        except OSError as exc:
            plt.close("all")
            raise ReplayError(f"--out {out}: cannot write {name} ({exc.strerror or exc}); replay.json is "
                              f"written") from None  # fmt: skip
    for s in summary:
        print(f"flip {s['flip']:.2f}: holdout error {100 * s['holdout_error_mean']:.2f}% "
              f"(sd {100 * s['holdout_error_sd']:.2f}), prequential accuracy {s['prequential_accuracy_mean']:.4f}")
    print(f"wrote {out / 'replay.json'}" + (f" and {', '.join(plots.values())}" if plots else ""))
    for note in notes:
        print(f"note: {note}")
    return 0


def _command(args: argparse.Namespace) -> str:
    """The command line equivalent to ``args`` (for the JSON)."""
    import shlex

    parts = ["robustream", "replay", args.dataset, "--learner", args.learner]
    parts += [f"--param={p}" for p in args.param]
    parts += [f"--flip={f}" for f in (args.flip or [])]
    parts += ["--noise", args.noise, "--seeds", str(args.seeds), "--out", str(args.out)]
    if args.max_samples is not None:
        parts += ["--max-samples", str(args.max_samples)]
    if str(args.label_column) != "0":
        parts += ["--label-column", str(args.label_column)]
    parts += [f"--{flag.replace('_', '-')}" for flag in ("no_scale", "no_plots", "quiet") if getattr(args, flag)]
    return " ".join(shlex.quote(p) for p in parts)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):  # pragma: no cover - json handles floats itself
        return None
    return str(obj)
