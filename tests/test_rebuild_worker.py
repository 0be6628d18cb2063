"""The process that runs background rebuilds (rebuild_lag > 0): same models as in-process solves,
survives its own death, never outlives its parent, and needs no __main__ guard."""

import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import robustream.learners.base as base
from robustream import CoresetSVMClassifier, RampSVMClassifier, RGDSVMClassifier
from robustream.learners.rebuild_worker import WorkerUnavailable, solve_worker


def _stream(n, d=10, flip=0.15, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = X @ rng.normal(size=d) > 0
    flipped = rng.random(n) < flip
    return [({f"f{j}": float(X[i, j]) for j in range(d)}, bool(y[i] ^ flipped[i])) for i in range(n)]


def _weights(model):
    return pickle.dumps((model.weights, model.intercept_, model.n_rebuilds_))


def _no_worker():
    raise WorkerUnavailable("switched off by the test")


@pytest.mark.parametrize(
    "make",
    [
        lambda: RGDSVMClassifier(outlier_fraction="auto", rebuild_every=200, rebuild_lag=120, window_size=400, seed=4),
        lambda: CoresetSVMClassifier(rebuild_every=200, rebuild_lag=200, window_size=400),
        lambda: RampSVMClassifier(rebuild_every=200, rebuild_lag=50, window_size=400),
    ],
    ids=["rgd-auto", "coreset", "ramp"],
)
def test_the_worker_gives_the_same_model_as_a_solve_in_this_process(make, monkeypatch):
    stream = _stream(1300, seed=1)
    remote = make()
    for x, y in stream:
        remote.learn_one(x, y)
    assert remote.n_rebuilds_ >= 5
    monkeypatch.setattr(base, "solve_worker", _no_worker)
    here = make()
    for x, y in stream:
        here.learn_one(x, y)
    assert _weights(here) == _weights(remote)


def test_the_solves_ran_in_the_worker_process():
    worker = solve_worker()
    before = worker.cpu_seconds
    model = RGDSVMClassifier(rebuild_every=200, rebuild_lag=100, window_size=400, seed=0)
    for x, y in _stream(700):
        model.learn_one(x, y)
    assert model.n_rebuilds_ == 3
    assert worker.cpu_seconds > before and worker.submit(os.getpid).result(timeout=60) == worker.pid != os.getpid()


def test_a_killed_worker_costs_nothing_but_time():
    stream = _stream(1000, seed=2)
    params = {"rebuild_every": 200, "rebuild_lag": 150, "window_size": 400, "seed": 3}
    undisturbed, model = RGDSVMClassifier(**params), RGDSVMClassifier(**params)
    for x, y in stream:
        undisturbed.learn_one(x, y)
    for i, (x, y) in enumerate(stream):
        model.learn_one(x, y)
        if i + 1 == 620:  # the rebuild of row 600 is pending in the worker
            assert model._pending is not None and "future" in model._pending
            dead = model._pending["future"]
            os.kill(solve_worker().pid, signal.SIGKILL)
            with pytest.raises(WorkerUnavailable):
                dead.result(timeout=60)
    assert _weights(model) == _weights(undisturbed)
    assert solve_worker().alive  # a new worker for the next rebuilds
    assert solve_worker().submit(int, "7").result(timeout=60) == 7


def test_a_learner_class_the_worker_cannot_import_is_solved_here():
    class Local(RGDSVMClassifier):  # a local class cannot be pickled by reference
        pass

    stream = _stream(700, seed=3)
    local, plain = Local(rebuild_every=200, rebuild_lag=100, seed=1), RGDSVMClassifier(rebuild_every=200, rebuild_lag=100, seed=1)
    for x, y in stream:
        local.learn_one(x, y)
        plain.learn_one(x, y)
    assert local.n_rebuilds_ == 3 and _weights(local) == _weights(plain)


def _run(script: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                          timeout=300, **kwargs)  # fmt: skip


def test_a_script_without_a_main_guard_runs_once():
    """multiprocessing's spawn would re-run such a script in its workers; our worker does not."""
    out = _run(
        """
        import numpy as np
        from robustream import RGDSVMClassifier
        from robustream.learners.rebuild_worker import solve_worker
        print("script body ran")
        rng = np.random.default_rng(0)
        model = RGDSVMClassifier(rebuild_every=100, rebuild_lag=50, window_size=200)
        for x in rng.normal(size=(450, 4)):
            model.learn_one(dict(enumerate(x)), bool(x[0] + x[1] > 0))
        print("rebuilds", model.n_rebuilds_, "worker cpu", solve_worker().cpu_seconds > 0)
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["script body ran", "rebuilds 4 worker cpu True"], out.stdout


def test_the_worker_does_not_outlive_a_killed_parent():
    parent = subprocess.Popen(
        [sys.executable, "-c", "from robustream.learners.rebuild_worker import solve_worker; import time; "
         "print(solve_worker().pid, flush=True); time.sleep(600)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        worker_pid = int(parent.stdout.readline())
        os.kill(worker_pid, 0)  # it runs
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(worker_pid, 0)
        except ProcessLookupError:
            return
        try:  # our grandchild: once it exits, init reaps it; a zombie counts as gone
            with open(f"/proc/{worker_pid}/stat") as f:
                if f.read().split(") ")[1].startswith("Z"):
                    return
        except FileNotFoundError:
            return
        time.sleep(0.1)
    pytest.fail(f"the worker {worker_pid} outlived its killed parent")
