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
    with pytest.warns(RuntimeWarning, match="switched off by the test"):
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


_KILL_PARAMS = {"rebuild_every": 200, "rebuild_lag": 150, "window_size": 400, "seed": 3}


def _stream_and_undisturbed_model():
    """The stream of the worker-killing tests and the model it gives when nothing goes wrong."""
    stream = _stream(1000, seed=2)
    undisturbed = RGDSVMClassifier(**_KILL_PARAMS)
    for x, y in stream:
        undisturbed.learn_one(x, y)
    return stream, undisturbed


def test_a_killed_worker_costs_nothing_but_time():
    stream, undisturbed = _stream_and_undisturbed_model()
    model = RGDSVMClassifier(**_KILL_PARAMS)
    with pytest.warns(RuntimeWarning, match="stopped"):  # the one rebuild it had is solved here
        for i, (x, y) in enumerate(stream):
            if i + 1 == 600:
                solve_worker().submit(time.sleep, 60)  # the worker runs calls in order: row 600's stays pending
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
    with pytest.warns(RuntimeWarning, match="no rebuild worker process.*solved in this thread"):
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


def _zombies_and_writers() -> tuple[list[int], int]:
    import threading

    zombies = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(") ", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError, IndexError):
                continue
            if fields[0] == "Z" and int(fields[1]) == os.getpid():
                zombies.append(int(pid))
    writers = sum(t.name == "robustream-worker-writer" and t.is_alive() for t in threading.enumerate())
    return zombies, writers


def test_a_stopped_worker_is_reaped_and_its_threads_end():
    for _ in range(3):
        worker = solve_worker()
        worker.submit(int, "1").result(timeout=60)
        os.kill(worker.pid, signal.SIGKILL)
        with pytest.raises(WorkerUnavailable):
            worker.submit(time.sleep, 5).result(timeout=60)
    deadline = time.monotonic() + 10
    while _zombies_and_writers() != ([], 0) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _zombies_and_writers() == ([], 0)


def _reset_worker(monkeypatch):
    import robustream.learners.rebuild_worker as rw

    monkeypatch.setattr(rw, "_WORKER", None)


def _lagged_pass(n=450):
    model = RGDSVMClassifier(rebuild_every=100, rebuild_lag=50, window_size=200, seed=0)
    for x, y in _stream(n, d=4, seed=6):
        model.learn_one(x, y)
    return model


def test_a_worker_that_never_answers_is_stopped_and_the_stream_goes_on(monkeypatch, tmp_path):
    import robustream.learners.rebuild_worker as rw

    silent = tmp_path / "silent-python"
    silent.write_text("#!/bin/sh\nexec sleep 600\n")  # like an embedded host that ignores -c
    silent.chmod(0o755)
    expected = _weights(_lagged_pass())
    _reset_worker(monkeypatch)
    monkeypatch.setattr(sys, "executable", str(silent))
    monkeypatch.setattr(rw, "STARTUP_SECONDS", 1.0)
    start = time.monotonic()
    with pytest.warns(RuntimeWarning, match="did not start within 1 s"):
        model = _lagged_pass()
    assert time.monotonic() - start < 30 and _weights(model) == expected
    worker = rw._WORKER  # one try for the process: the later rebuilds did not start (and wait for) another
    assert not worker.alive and not worker.started
    with pytest.raises(WorkerUnavailable, match="could not start"):
        solve_worker()


@pytest.mark.parametrize("setting", ["frozen", "no executable"])
def test_no_worker_where_none_can_be_started(monkeypatch, setting):
    expected = _weights(_lagged_pass())
    _reset_worker(monkeypatch)
    if setting == "frozen":
        monkeypatch.setattr(sys, "frozen", True, raising=False)  # sys.executable is the application itself
    else:
        monkeypatch.setattr(sys, "executable", None)
    with pytest.warns(RuntimeWarning, match="no Python interpreter to start a worker"):
        model = _lagged_pass()
    assert _weights(model) == expected


def test_a_worker_importing_another_robustream_is_refused(monkeypatch):
    import robustream.learners.rebuild_worker as rw

    _reset_worker(monkeypatch)
    monkeypatch.setattr(rw, "_robustream_file", lambda: "/elsewhere/robustream/__init__.py")
    with pytest.raises(WorkerUnavailable, match="imported robustream from"):
        solve_worker().submit(int, "1").result(timeout=120)


def test_what_the_worker_prints_at_startup_does_not_reach_the_frames(tmp_path):
    (tmp_path / "sitecustomize.py").write_text("print('hello from sitecustomize')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    out = _run(
        """
        import warnings
        warnings.simplefilter("error")  # a fallback to in-process solves would warn
        from robustream.learners.rebuild_worker import solve_worker
        w = solve_worker()
        print("answers", [w.submit(divmod, 7, k).result(timeout=120) for k in (2, 3)], "same worker", solve_worker() is w)
        """,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "answers [(3, 1), (2, 1)] same worker True"


def test_a_forked_child_does_not_keep_the_worker_of_a_killed_parent_alive():
    parent = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(
            """
            import os, signal, sys, time
            from robustream.learners.rebuild_worker import solve_worker
            w = solve_worker(); w.submit(int, "1").result(120)
            child = os.fork()
            if child == 0:
                time.sleep(60); os._exit(0)
            print(w.pid, child, flush=True)
            time.sleep(600)
            """
        )],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    _kill_parent_and_expect_its_worker_gone(parent)


def test_a_fork_while_the_worker_starts_does_not_keep_it_alive_after_the_parent():
    """Another thread forks between the creation of the worker's pipes and the end of its setup."""
    parent = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(
            """
            import os, subprocess, time
            from robustream.learners import rebuild_worker as rw
            real_popen, forked = subprocess.Popen, []

            def popen(*args, **kwargs):  # the pipes exist; "another thread" forks now
                child = os.fork()
                if child == 0:
                    time.sleep(60); os._exit(0)
                forked.append(child)
                return real_popen(*args, **kwargs)

            rw.subprocess.Popen = popen
            w = rw.solve_worker(); w.submit(int, "1").result(120)
            print(w.pid, forked[0], flush=True)
            time.sleep(600)
            """
        )],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    _kill_parent_and_expect_its_worker_gone(parent)


def _kill_parent_and_expect_its_worker_gone(parent: subprocess.Popen) -> None:
    """``parent`` printed its worker's pid and a forked child's; SIGKILL it: the worker must exit
    (within 30 s) although the child lives on."""
    worker_pid, child_pid = map(int, parent.stdout.readline().split())
    try:
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _running(worker_pid):
            time.sleep(0.1)
        assert not _running(worker_pid), "the worker outlived its parent while a forked child of the parent lived"
    finally:
        for pid in (child_pid, worker_pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


class FailingSolve(RGDSVMClassifier):
    """A learner whose solves raise an error that is not 'cannot solve' (a bug)."""

    def _fit_rows(self, X, signs, features, context, seed):
        raise ZeroDivisionError("a bug in the solve")


class TwoArgumentError(Exception):
    def __init__(self, a, b):  # pickles as Exception(args) but cannot be rebuilt from them
        super().__init__(f"{a}/{b}")


class UnpicklableFailure(RGDSVMClassifier):
    def _fit_rows(self, X, signs, features, context, seed):
        raise TwoArgumentError(1, 2)


@pytest.mark.parametrize("lag", [0, 50])
def test_a_solve_that_raises_is_counted_once_wherever_it_ran(lag):
    model = FailingSolve(rebuild_every=100, rebuild_lag=lag, window_size=200, seed=0)
    with pytest.raises(ZeroDivisionError) as raised:
        for x, y in _stream(300, d=4):
            model.learn_one(x, y)
    assert (model.n_failed_rebuilds_, model.n_rebuilds_) == (1, 0)
    if lag:  # where it happened, in the worker
        assert "in the rebuild worker process" in "".join(getattr(raised.value, "__notes__", []))


def test_an_exception_that_cannot_travel_arrives_as_a_runtime_error_and_the_worker_lives_on():
    worker = solve_worker()
    model = UnpicklableFailure(rebuild_every=100, rebuild_lag=50, window_size=200, seed=0)
    with pytest.raises(RuntimeError, match="TwoArgumentError in the rebuild worker process"):
        for x, y in _stream(300, d=4):
            model.learn_one(x, y)
    assert model.n_failed_rebuilds_ == 1
    assert solve_worker() is worker and worker.submit(int, "3").result(timeout=60) == 3


@pytest.mark.parametrize("closed", ["0", "1", "0 1"])
def test_a_parent_with_stdin_or_stdout_closed_still_gets_a_worker(closed):
    out = _run(
        f"""
        import os, sys, warnings
        warnings.simplefilter("error")  # a fallback to in-process solves would warn
        for fd in ({closed.replace(" ", ", ")},):
            os.close(fd)
        import numpy as np
        from robustream import RGDSVMClassifier
        from robustream.learners.rebuild_worker import solve_worker
        model = RGDSVMClassifier(rebuild_every=100, rebuild_lag=50, window_size=200)
        pids = set()
        for x in np.random.default_rng(0).normal(size=(450, 4)):
            model.learn_one(dict(enumerate(x)), bool(x[0] + x[1] > 0))
            if model._pending and "future" in model._pending:
                pids.add(solve_worker().pid)
        print("rebuilds", model.n_rebuilds_, "workers", len(pids), file=sys.stderr)
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines()[-1] == "rebuilds 4 workers 1", out.stderr


def test_files_in_the_working_directory_do_not_shadow_the_workers_imports(tmp_path):
    """A script run from a folder holding a json.py: the script itself does not see that folder
    (python puts the script's own folder on its path), and neither may the worker (``-c`` puts the
    working directory there)."""
    work, scripts = tmp_path / "work", tmp_path / "scripts"
    work.mkdir()
    scripts.mkdir()
    (work / "json.py").write_text("raise ImportError('the user json.py was imported')\n")
    script = scripts / "run.py"
    script.write_text(textwrap.dedent(
        """
        import warnings
        warnings.simplefilter("error")
        from robustream.learners.rebuild_worker import solve_worker
        print(solve_worker().submit(divmod, 9, 4).result(timeout=120))
        """
    ))  # fmt: skip
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=work)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "(2, 1)"


def test_with_warnings_as_errors_a_rebuild_solved_here_is_still_applied():
    import warnings

    stream, undisturbed = _stream_and_undisturbed_model()
    model = RGDSVMClassifier(**_KILL_PARAMS)
    raised = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for i, (x, y) in enumerate(stream):
            if i + 1 == 600:
                solve_worker().submit(time.sleep, 60)  # the worker runs calls in order: row 600's stays pending
            try:
                model.learn_one(x, y)
            except RuntimeWarning:
                raised.append(i + 1)
            if i + 1 == 620:
                os.kill(solve_worker().pid, signal.SIGKILL)
    assert raised == [750]  # the row the killed worker's rebuild was due
    assert _weights(model) == _weights(undisturbed)


def test_a_submit_writes_to_an_idle_worker_itself_and_never_waits_for_a_busy_one(monkeypatch):
    worker = solve_worker()
    assert worker.submit(int, "1").result(timeout=60) == 1  # started

    class Written:  # the calls pipe as the submitting thread sees it (the writer thread keeps its own)
        def __init__(self, pipe):
            self.pipe, self.frames = pipe, 0

        def write(self, frame):
            self.frames += 1
            return self.pipe.write(frame)

        def flush(self):
            self.pipe.flush()

    monkeypatch.setattr(worker, "_calls", here := Written(worker._calls))
    big = np.ones(200_000)  # 1.6 MB: more than the pipe holds
    # idle: written by the submitting thread (the writer thread needs the GIL back from a busy stream
    # after each step: a rebuild's rows reached the worker 10-25 ms late)
    assert worker.submit(np.sum, big).result(timeout=60) == 200_000.0 and here.frames == 1
    # busy: handed to the writer thread, so the submit returns at once
    sleeping = worker.submit(time.sleep, 3)
    start = time.monotonic()
    behind = worker.submit(np.sum, big)
    assert time.monotonic() - start < 2 and here.frames == 2  # (the sleep written here, not the call behind it)
    assert behind.result(timeout=60) == 200_000.0 and sleeping.done()


def test_a_call_interrupted_while_written_stops_the_worker_instead_of_leaving_it_out_of_step(monkeypatch):
    worker = solve_worker()
    assert worker.submit(int, "1").result(timeout=60) == 1

    class Interrupted:  # a Ctrl-C while a call larger than the pipe is half written
        def write(self, frame):
            raise KeyboardInterrupt

        def flush(self):
            pass

    monkeypatch.setattr(worker, "_calls", Interrupted())
    with pytest.raises(KeyboardInterrupt):
        worker.submit(np.sum, np.ones(10))
    assert not worker.alive and "interrupted while being written" in worker.failure
    monkeypatch.undo()
    assert solve_worker() is not worker and solve_worker().submit(int, "7").result(timeout=60) == 7  # a new one
