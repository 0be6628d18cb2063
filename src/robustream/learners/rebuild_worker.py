"""A separate Python process that runs the learners' background rebuilds (``rebuild_lag > 0``).

A thread cannot run a rebuild beside the stream: between its numba kernels (which release the GIL) a
solve runs many short Python and small-array NumPy steps, each of which needs the GIL back from the
thread that is busy with the stream. Measured on a 1,500 x 100 rebuild: beside a pure-Python loop, a
background-thread solve made almost no progress until the loop ended, so ``rebuild_lag`` gained
nothing (2,850 rows/s with and without it). A process has its own GIL.

One worker per parent process, started on the first background rebuild: ``sys.executable`` running
:func:`serve`, fed over its stdin and answering over its stdout in length-prefixed frames. The frames
are pickles exchanged with our own child process over a pipe, never read from disk. The worker imports
robustream from the parent's ``sys.path``; it ignores SIGINT (a Ctrl-C is the parent's to handle) and
exits when the parent closes the pipe or dies. It does not re-run the user's main script (what
``multiprocessing``'s spawn and forkserver do), so scripts without a ``__main__`` guard are safe.

>>> from robustream.learners.rebuild_worker import solve_worker
>>> solve_worker().submit(divmod, 7, 2).result()
(3, 1)
"""

from __future__ import annotations

import atexit
import json
import os
import pickle
import queue
import signal
import struct
import subprocess
import sys
import threading
import time
from concurrent.futures import Future

_HEADER = struct.Struct("<QQ")  # request id, payload length
_BOOTSTRAP = (
    "import json, os, sys; "
    "sys.path[:0] = [p for p in json.loads(os.environ.pop('ROBUSTREAM_WORKER_SYS_PATH')) if p not in sys.path]; "
    "from robustream.learners.rebuild_worker import serve; serve()"
)


class WorkerUnavailable(RuntimeError):
    """The worker cannot run this call (it died, or cannot import what the call needs): run it here."""


class SolveWorker:
    """The parent's handle on one worker process: :meth:`submit` returns a ``concurrent.futures.Future``.

    Calls run one at a time, in submission order. ``cpu_seconds`` is the worker's CPU time spent in
    the calls so far (what a benchmark reports as the cost of the background solves).
    """

    def __init__(self) -> None:
        env = dict(os.environ, ROBUSTREAM_WORKER_SYS_PATH=json.dumps([os.path.abspath(p) for p in sys.path]))
        self._process = subprocess.Popen(
            [sys.executable, "-c", _BOOTSTRAP], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
        )
        self.pid = self._process.pid
        self.cpu_seconds = 0.0
        self._futures: dict[int, Future] = {}
        self._lock = threading.Lock()
        self._next_id = 0
        self._alive = True
        self._outbox: queue.SimpleQueue = queue.SimpleQueue()
        # a writer thread, so a submit never blocks on a pipe the busy worker is not reading
        threading.Thread(target=self._write, name="robustream-worker-writer", daemon=True).start()
        threading.Thread(target=self._read, name="robustream-worker-reader", daemon=True).start()

    @property
    def alive(self) -> bool:
        return self._alive

    def submit(self, fn, *args) -> Future:
        """Run ``fn(*args)`` in the worker; raises :class:`WorkerUnavailable` if it has stopped or the
        call cannot be pickled."""
        payload = pickle.dumps((fn, args), protocol=pickle.HIGHEST_PROTOCOL)
        future: Future = Future()
        with self._lock:
            if not self._alive:
                raise WorkerUnavailable("the rebuild worker process has stopped")
            request_id = self._next_id
            self._next_id += 1
            self._futures[request_id] = future
        self._outbox.put(_HEADER.pack(request_id, len(payload)) + payload)
        return future

    def close(self, timeout: float = 5.0) -> None:
        """Let the worker finish its calls and exit; kill it after ``timeout`` seconds."""
        self._outbox.put(None)
        try:
            self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def _write(self) -> None:
        pipe = self._process.stdin
        try:
            while (frame := self._outbox.get()) is not None:
                pipe.write(frame)
                pipe.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass
        finally:
            try:
                pipe.close()
            except (BrokenPipeError, OSError):
                pass

    def _read(self) -> None:
        pipe = self._process.stdout
        try:
            while True:
                header = pipe.read(_HEADER.size)
                if len(header) < _HEADER.size:
                    break
                request_id, n = _HEADER.unpack(header)
                ok, value, cpu = pickle.loads(pipe.read(n))
                self.cpu_seconds += cpu
                with self._lock:
                    future = self._futures.pop(request_id)
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(value)
        except Exception:  # a torn frame: the worker died mid-answer
            pass
        with self._lock:
            self._alive = False
            orphans, self._futures = list(self._futures.values()), {}
        for future in orphans:
            future.set_exception(WorkerUnavailable(f"the rebuild worker process {self.pid} stopped"))


_WORKER: SolveWorker | None = None
_WORKER_PID = -1
_WORKER_LOCK = threading.Lock()


def solve_worker() -> SolveWorker:
    """The worker of this process, started on first use and again if it died (a forked child starts its own)."""
    global _WORKER, _WORKER_PID
    with _WORKER_LOCK:
        if _WORKER is None or not _WORKER.alive or _WORKER_PID != os.getpid():
            _WORKER, _WORKER_PID = SolveWorker(), os.getpid()
        return _WORKER


@atexit.register
def _close_at_exit() -> None:
    if _WORKER is not None and _WORKER_PID == os.getpid():
        _WORKER.close()


def serve() -> None:
    """The worker's loop: read a call, run it, answer; exit when the parent closes the pipe."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    inbox = sys.stdin.buffer
    outbox = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints (ours or a library's) must not corrupt frames
    while True:
        header = inbox.read(_HEADER.size)
        if len(header) < _HEADER.size:
            return
        request_id, n = _HEADER.unpack(header)
        payload = inbox.read(n)
        start = time.thread_time()
        try:
            try:
                fn, args = pickle.loads(payload)
            except Exception as exc:  # e.g. a class defined in the parent's __main__
                raise WorkerUnavailable(f"the rebuild worker cannot load the call: {exc!r}") from None
            answer = (True, fn(*args))
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the caller
            answer = (False, exc)
        cpu = time.thread_time() - start
        try:
            frame = pickle.dumps((*answer, cpu), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            frame = pickle.dumps((False, RuntimeError(f"unpicklable answer: {exc!r}"), cpu))
        try:
            outbox.write(_HEADER.pack(request_id, len(frame)) + frame)
            outbox.flush()
        except (BrokenPipeError, OSError):  # the parent is gone
            return
