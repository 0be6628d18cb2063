"""robustream.blas: solves run with one BLAS thread, and the original thread counts come back."""

import threading

import numpy as np
import pytest
from threadpoolctl import ThreadpoolController

import robustream.learners.base as base_module
import robustream.solver as solver_module
from robustream import RGDSVMClassifier
from robustream.blas import single_threaded_blas


def blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in ThreadpoolController().info() if lib["user_api"] == "blas"]


@pytest.fixture
def two_blas_threads():
    """BLAS at 2 threads for the test (CI may start with 1), restored afterwards."""
    controller = ThreadpoolController()
    if not controller.select(user_api="blas").lib_controllers:
        pytest.fail("no BLAS library found: numpy should have loaded one")
    with controller.limit(limits=2, user_api="blas"):  # as a context: threadpoolctl's thread ownership ends with it
        assert set(blas_threads()) == {2}
        yield


def test_limit_inside_restored_after(two_blas_threads):
    with single_threaded_blas():
        assert set(blas_threads()) == {1}
        with single_threaded_blas():  # nested: still one thread, and the inner exit restores nothing
            assert set(blas_threads()) == {1}
        assert set(blas_threads()) == {1}
    assert set(blas_threads()) == {2}


def test_restored_after_an_exception(two_blas_threads):
    with pytest.raises(RuntimeError):
        with single_threaded_blas():
            raise RuntimeError("boom")
    assert set(blas_threads()) == {2}


def test_overlapping_threads_restore_once_the_last_ends(two_blas_threads):
    """A ends while B still runs: B keeps one thread; the counts come back when B ends."""
    a_in, a_out, b_in, b_out = (threading.Event() for _ in range(4))
    seen = {}

    def a():
        with single_threaded_blas():
            a_in.set()
            b_in.wait(5)
        a_out.set()

    def b():
        a_in.wait(5)
        with single_threaded_blas():
            b_in.set()
            a_out.wait(5)
            seen["b after a left"] = set(blas_threads())
        b_out.set()

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert b_out.is_set()
    assert seen["b after a left"] == {1}
    assert set(blas_threads()) == {2}


def test_solve_and_learner_rebuilds_run_single_threaded(two_blas_threads, monkeypatch):
    seen = []
    mdm = solver_module.mdm_gram

    def recording(*args):
        seen.append(set(blas_threads()))
        return mdm(*args)

    monkeypatch.setattr(solver_module, "mdm_gram", recording)
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(1, 1, (40, 3)), rng.normal(-1, 1, (40, 3))]
    y = np.r_[np.ones(40), -np.ones(40)]
    solver_module.solve(X, y, seed=0)
    assert seen and all(s == {1} for s in seen)
    assert set(blas_threads()) == {2}

    seen.clear()
    slope = base_module._fit_slope

    def recording_slope(margins):  # called where the margins that choose the coreset are computed
        seen.append(set(blas_threads()))
        return slope(margins)

    monkeypatch.setattr(base_module, "_fit_slope", recording_slope)
    model = RGDSVMClassifier(rebuild_every=50, window_size=100, coreset_size=50, seed=0)
    for row, label in zip(X, y):
        model.learn_one({"a": row[0], "b": row[1], "c": row[2]}, label > 0)
    assert model.n_rebuilds_ >= 1 and seen and all(s == {1} for s in seen)
    assert len(seen) > model.n_rebuilds_  # the solves' and the applies' readings
    assert set(blas_threads()) == {2}


def threads_seen_by_a_solve() -> tuple[list, list]:
    """(BLAS counts seen inside a learner's solve, counts after it), with 2 threads set before."""
    from threadpoolctl import threadpool_limits

    seen = []
    mdm = solver_module.mdm_gram

    def recording(*args):
        seen.append(sorted(set(blas_threads())))
        return mdm(*args)

    solver_module.mdm_gram = recording
    try:
        with threadpool_limits(limits=2, user_api="blas"):
            rng = np.random.default_rng(0)
            X = np.r_[rng.normal(1, 1, (40, 3)), rng.normal(-1, 1, (40, 3))]
            y = np.r_[np.ones(40), -np.ones(40)]
            fit, _ = RGDSVMClassifier(seed=0)._solve(X, y, ["a", "b", "c"], {"fractions": [(0.2, 0.2)], "previous": [None]}, 0)
            assert fit is not None
            return seen, sorted(set(blas_threads()))
    finally:
        solver_module.mdm_gram = mdm


def test_the_rebuild_worker_process_solves_single_threaded_too():
    from robustream.learners.rebuild_worker import solve_worker

    worker = solve_worker()
    seen, after = worker.submit(threads_seen_by_a_solve).result(timeout=120)
    assert seen and all(s == [1] for s in seen)
    assert after == [2]


def test_a_count_changed_during_a_solve_is_not_overwritten(two_blas_threads, monkeypatch):
    """A user's own limit (as scikit-learn sets internally) ends while a rebuild that started inside
    it still runs in another of the user's threads: the rebuild's end must not put the limit back."""
    from threadpoolctl import threadpool_limits

    entered, release = threading.Event(), threading.Event()
    mdm = solver_module.mdm_gram

    def held(*args):
        entered.set()
        release.wait(10)
        return mdm(*args)

    monkeypatch.setattr(solver_module, "mdm_gram", held)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 5))
    y = X @ rng.normal(size=5) > 0
    model = RGDSVMClassifier(rebuild_every=10_000, window_size=400, seed=0)
    for i in range(400):
        model.learn_one({j: X[i, j] for j in range(5)}, bool(y[i]))
    with threadpool_limits(limits=1, user_api="blas"):
        t = threading.Thread(target=model.rebuild)
        t.start()
        assert entered.wait(30)  # the rebuild's solve is running
    release.set()  # the user's block has ended (count back to 2); now the solve ends
    t.join(60)
    assert model.n_rebuilds_ == 1
    assert set(blas_threads()) == {2}


def test_libraries_with_a_count_per_thread_are_limited_in_every_solving_thread(monkeypatch):
    """MKL and OpenMP-built OpenBLAS keep one count per thread: each solving thread sets and restores its own."""
    import robustream.blas as blas

    class PerThreadCount:  # a stand-in: a thread-local count, 2 in every thread by default
        def __init__(self):
            self._count = threading.local()

        @property
        def num_threads(self):
            return getattr(self._count, "n", 2)

        def set_num_threads(self, n):
            self._count.n = n

    library = PerThreadCount()
    monkeypatch.setattr(blas, "_libraries", ([], [library]))
    main_in, other_in, main_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def other():
        main_in.wait(5)
        with single_threaded_blas():
            seen["other thread in its solve"] = library.num_threads
            other_in.set()
            main_out.wait(5)
        seen["other thread after"] = library.num_threads

    t = threading.Thread(target=other)
    t.start()
    with single_threaded_blas():
        seen["main thread in its solve"] = library.num_threads
        main_in.set()
        other_in.wait(5)
    main_out.set()
    t.join(10)
    assert seen == {"main thread in its solve": 1, "other thread in its solve": 1, "other thread after": 2}
    assert library.num_threads == 2
