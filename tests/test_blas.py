"""robustream.blas: solves run with one BLAS thread, and the original thread counts come back."""

import threading

import numpy as np
import pytest
from threadpoolctl import ThreadpoolController

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
    limiter = controller.limit(limits=2, user_api="blas")
    try:
        assert set(blas_threads()) == {2}
        yield
    finally:
        limiter.restore_original_limits()


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
    model = RGDSVMClassifier(rebuild_every=50, window_size=100, coreset_size=50, rebuild_lag=10, seed=0)
    for row, label in zip(X, y):
        model.learn_one({"a": row[0], "b": row[1], "c": row[2]}, label > 0)
    assert model.n_rebuilds_ >= 1 and seen and all(s == {1} for s in seen)
    assert set(blas_threads()) == {2}
