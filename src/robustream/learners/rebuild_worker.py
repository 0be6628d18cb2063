"""A separate Python process that runs the learners' background rebuilds (``rebuild_lag > 0``).

A thread cannot run a rebuild beside the stream: between its numba kernels (which release the GIL) a
solve runs many short Python and small-array NumPy steps, each of which needs the GIL back from the
thread that is busy with the stream. Measured on a 1,500 x 100 rebuild: beside a pure-Python loop, a
background-thread solve made almost no progress until the loop ended, so ``rebuild_lag`` gained
nothing (2,850 rows/s with and without it). A process has its own GIL.

One worker per parent process, started on first use: ``sys.executable`` (with the parent's
interpreter flags) running :func:`serve`. Calls and answers are pickles in length-prefixed frames
on two pipes of their own (not stdin/stdout, so nothing a library prints can corrupt them; both ends
above fd 2 even when the parent's stdin or stdout is closed),
exchanged with our own child process and never read from disk. The worker imports the parent's copy
of robustream (checked in a handshake: another copy, or no answer within ``STARTUP_SECONDS``, and the
worker is stopped). It ignores SIGINT (a Ctrl-C is the parent's to handle) and exits when the parent
closes the pipe or dies; a forked child of the parent lets go of the parent's pipes. It does not
re-run the user's main script (what ``multiprocessing``'s spawn and forkserver do), so scripts
without a ``__main__`` guard are safe; a frozen application (``sys.frozen``) or an interpreter without
``sys.executable`` gets no worker (:class:`WorkerUnavailable`): its rebuilds are solved in-process.

Whatever stops the worker (killed, out of memory), its pending calls fail with
:class:`WorkerUnavailable` and its process group is killed and reaped. A worker that had started is
replaced by the next :func:`solve_worker`; one that never started (no handshake) is not tried again in
this process, so a host where no worker can run pays ``STARTUP_SECONDS`` once, not at every rebuild.
POSIX only (inherited pipe descriptors); elsewhere every rebuild is solved in-process.

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
import traceback
from concurrent.futures import Future

STARTUP_SECONDS = 30.0  # the worker must answer the handshake within this time (its imports: 1-3 s here)
_HEADER = struct.Struct("<QQ")  # request id, payload length
_HANDSHAKE = 2**64 - 1  # the id of the worker's first frame: the robustream it imported
_BOOTSTRAP = (
    # "-c" puts the working directory first on sys.path: drop it before importing anything that a file
    # there could shadow, then take the parent's path (its robustream first)
    "import sys; sys.path[:] = [p for p in sys.path if p]; import json, os; "
    "sys.path[:] = json.loads(os.environ.pop('ROBUSTREAM_WORKER_SYS_PATH')); "
    "from robustream.learners.rebuild_worker import serve; serve(int(sys.argv[1]), int(sys.argv[2]))"
)


class WorkerUnavailable(RuntimeError):
    """The worker cannot run this call (there is none here, it stopped, or it cannot import what the
    call needs): run it in this process."""


def _read_frame(pipe) -> tuple[int, bytes] | None:
    """``(request id, payload)`` of the next frame; None at the end of the pipe or in a torn frame."""
    header = pipe.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    request_id, n = _HEADER.unpack(header)
    payload = pipe.read(n)
    return (request_id, payload) if len(payload) == n else None


def _robustream_file() -> str:
    import robustream

    return os.path.realpath(robustream.__file__)


# this process's open ends of its workers' pipes, from their creation on (a fork may come before the
# worker is set up): a forked child lets go of them
_PIPE_FDS: set[int] = set()


def _pipe() -> tuple[int, int]:
    """``os.pipe()`` with both ends above 2: with our stdin or stdout closed, a pipe end would take fd 0
    or 1, which the worker's stdin/stdout redirection would then overwrite."""
    import fcntl

    ends = []
    for fd in os.pipe():
        if fd <= 2:
            fd, low = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3), fd
            os.close(low)
        ends.append(fd)
    _PIPE_FDS.update(ends)
    return ends[0], ends[1]


def _widen_pipe(fd: int) -> None:
    """Let the pipe hold a whole call (a rebuild's rows: 0.4 MB for 500 x 100, 1.2 MB for 1,500 x 100) up
    to the system's limit for unprivileged processes (Linux: /proc/sys/fs/pipe-max-size, 1 MiB by
    default; 64 KiB otherwise): a submit then writes it at once instead of in turns with the worker's
    reads. Where the size cannot be set (not Linux), the pipe keeps its own."""
    import fcntl

    setter = getattr(fcntl, "F_SETPIPE_SZ", None)
    if setter is None:
        return
    try:
        with open("/proc/sys/fs/pipe-max-size") as fh:
            size = int(fh.read())
        fcntl.fcntl(fd, setter, min(size, 4 << 20))
    except (OSError, ValueError):
        pass


def _close_pipe_end(end) -> None:
    """Close a pipe end (a descriptor or a file object) and forget it."""
    try:
        fd = end if isinstance(end, int) else end.fileno()
    except ValueError:  # already closed
        return
    _PIPE_FDS.discard(fd)
    try:
        os.close(fd) if isinstance(end, int) else end.close()
    except OSError:
        pass


def _usable_fd(fd: int) -> bool:
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


def _interpreter_flags() -> list[str]:
    flags = getattr(subprocess, "_args_from_interpreter_flags", None)  # what multiprocessing passes on
    return list(flags()) if flags else []


class SolveWorker:
    """The parent's handle on one worker process: :meth:`submit` returns a ``concurrent.futures.Future``.

    Calls run one at a time, in the order they reach the pipe (answers are matched to calls by id). A
    call to an idle worker is written to its pipe by the submitting thread (at once if it fits the pipe,
    1 MiB on Linux; a larger one while the idle worker reads it); one behind a call still running goes
    through a writer thread, so that a submit never waits for a busy worker. ``cpu_seconds`` is the
    worker's CPU time spent in the calls so far (what a benchmark reports as the cost of the background
    solves).
    """

    def __init__(self) -> None:
        if not sys.executable or getattr(sys, "frozen", False):
            raise WorkerUnavailable("no Python interpreter to start a worker with (sys.executable is "
                                    f"{sys.executable!r}, frozen: {getattr(sys, 'frozen', False)})")  # fmt: skip
        package_root = os.path.dirname(os.path.dirname(_robustream_file()))
        paths = [package_root] + [os.path.abspath(p) for p in sys.path if os.path.abspath(p) != package_root]
        env = dict(os.environ, ROBUSTREAM_WORKER_SYS_PATH=json.dumps(paths))
        calls_r, calls_w = _pipe()
        answers_r, answers_w = _pipe()
        output = 2 if _usable_fd(2) else subprocess.DEVNULL  # the worker's prints go to our stderr
        try:
            self._process = subprocess.Popen(
                [sys.executable, *_interpreter_flags(), "-c", _BOOTSTRAP, str(calls_r), str(answers_w)],
                stdin=subprocess.DEVNULL, stdout=output, stderr=output, env=env, pass_fds=(calls_r, answers_w),
                start_new_session=True,  # its own process group: stopping it stops what a launcher started too
            )  # fmt: skip
        except BaseException:
            for fd in (calls_r, calls_w, answers_r, answers_w):
                _close_pipe_end(fd)
            raise
        _close_pipe_end(calls_r)
        _close_pipe_end(answers_w)
        _widen_pipe(calls_w)
        self._calls = os.fdopen(calls_w, "wb")
        self._answers = os.fdopen(answers_r, "rb")
        self.pid = self._process.pid
        self.cpu_seconds = 0.0
        self.failure: str | None = None  # why it stopped
        self._futures: dict[int, Future] = {}
        self._lock = threading.Lock()
        self._kill_lock = threading.Lock()
        self._next_id = 0
        self._alive = True
        self._outbox: queue.SimpleQueue = queue.SimpleQueue()
        self._write_lock = threading.Lock()  # one frame at a time on the calls pipe, whichever thread writes it
        self._ready = threading.Event()
        # a writer thread, so a submit never blocks on a pipe the busy worker is not reading
        threading.Thread(target=self._write, name="robustream-worker-writer", daemon=True).start()
        threading.Thread(target=self._read, name="robustream-worker-reader", daemon=True).start()
        threading.Thread(target=self._watch_startup, name="robustream-worker-startup", daemon=True).start()

    @property
    def alive(self) -> bool:
        return self._alive

    def submit(self, fn, *args) -> Future:
        """Run ``fn(*args)`` in the worker; raises :class:`WorkerUnavailable` if it has stopped."""
        payload = pickle.dumps((fn, args), protocol=pickle.HIGHEST_PROTOCOL)
        future: Future = Future()
        with self._lock:
            if not self._alive:
                raise WorkerUnavailable("the rebuild worker process has stopped")
            request_id = self._next_id
            self._next_id += 1
            self._futures[request_id] = future
            idle = len(self._futures) == 1 and self._ready.is_set()  # the worker waits for a call: it reads at once
        frame = _HEADER.pack(request_id, len(payload)) + payload
        if idle and self._write_lock.acquire(blocking=False):
            # Written here, not by the writer thread, which needs the GIL back from this (busy) thread after
            # each step: the call reached the worker 10-25 ms late beside a stream's pure-Python loop
            # (a 410 KB call: 11 ms round trip instead of 0.6 ms), and the stream then waited for its result
            try:
                self._calls.write(frame)
                self._calls.flush()
            except (OSError, ValueError) as exc:  # the worker is gone: its calls fail with WorkerUnavailable
                self._stop(f"stopped ({exc!r})")
            except BaseException:  # a Ctrl-C while a call larger than the pipe was half written: the worker
                self._stop("stopped: a call to it was interrupted while being written")  # would read out of step
                raise
            finally:
                self._write_lock.release()
        else:  # busy with another call (several learners share the worker): never block the stream on it
            self._outbox.put(frame)
        return future

    def close(self, timeout: float = 5.0) -> None:
        """Let the worker finish its calls and exit; kill it after ``timeout`` seconds."""
        self._outbox.put(None)
        try:
            self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            self._kill()

    def _stop(self, reason: str) -> None:
        """The worker is unusable: fail its calls, stop the writer, kill and reap the process."""
        with self._lock:
            self._alive = False
            self.failure = self.failure or reason  # the first reason (a kill then ends the reader too)
            orphans, self._futures = list(self._futures.values()), {}
        for future in orphans:
            if not future.done():
                future.set_exception(WorkerUnavailable(f"the rebuild worker process {reason}"))
        self._outbox.put(None)
        self._kill()

    def _kill(self) -> None:
        """SIGKILL the worker's process group (a launcher that did not exec Python may have left its
        child running) and reap it; once."""
        with self._kill_lock:
            if self._process.returncode is None:  # not reaped yet, so its group id is still ours
                try:
                    os.killpg(self._process.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                self._process.wait()

    @property
    def started(self) -> bool:
        """The worker answered the handshake (it imported our robustream)."""
        return self._ready.is_set()

    def _watch_startup(self) -> None:
        if not self._ready.wait(STARTUP_SECONDS) and self._alive:
            self._stop(f"did not start within {STARTUP_SECONDS:.0f} s")

    def _write(self) -> None:
        pipe = self._calls
        try:
            while (frame := self._outbox.get()) is not None:
                with self._write_lock:
                    pipe.write(frame)
                    pipe.flush()
        except (OSError, ValueError):
            pass
        finally:
            _close_pipe_end(pipe)

    def _read(self) -> None:
        pipe, reason = self._answers, "stopped"
        try:
            while (frame := _read_frame(pipe)) is not None:
                request_id, payload = frame
                if request_id == _HANDSHAKE:
                    theirs, ours = pickle.loads(payload), _robustream_file()
                    if theirs != ours:
                        reason = f"imported robustream from {theirs}, not {ours}"
                        break
                    self._ready.set()
                    continue
                with self._lock:
                    future = self._futures.pop(request_id, None)
                try:
                    ok, value, cpu = pickle.loads(payload)
                except Exception as exc:  # the frame is whole: only this answer is lost
                    ok, value, cpu = False, RuntimeError(f"the worker's answer could not be read: {exc!r}"), 0.0
                self.cpu_seconds += cpu
                if future is not None:
                    (future.set_result if ok else future.set_exception)(value)
        except Exception as exc:  # noqa: BLE001 - whatever breaks the pipe stops this worker
            reason = f"stopped ({exc!r})"
        self._stop(reason)
        _close_pipe_end(pipe)


_WORKER: SolveWorker | None = None
_WORKER_PID = -1
_WORKER_LOCK = threading.Lock()


def solve_worker() -> SolveWorker:
    """The worker of this process, started on first use and again if it stopped after it had started;
    raises :class:`WorkerUnavailable` (or OSError) when none can be started here. A worker that never
    started (no handshake) is not tried again in this process: each try could cost ``STARTUP_SECONDS``."""
    global _WORKER, _WORKER_PID
    with _WORKER_LOCK:
        if _WORKER_PID != os.getpid():
            _WORKER = None
        if _WORKER is not None and not _WORKER.alive:
            if not _WORKER.started:
                raise WorkerUnavailable(f"the rebuild worker process could not start ({_WORKER.failure})")
            _WORKER = None
        if _WORKER is None:
            _WORKER, _WORKER_PID = SolveWorker(), os.getpid()
        return _WORKER


def _forget_after_fork() -> None:
    """In a forked child: let go of the parent's worker pipes, including those of a worker still being
    set up (they must close when the parent's do, or the worker would outlive the parent), of the
    worker, and of locks another thread may have held at the fork."""
    global _WORKER, _WORKER_LOCK
    _WORKER_LOCK = threading.Lock()
    _WORKER = None
    if _PIPE_FDS:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in _PIPE_FDS:
            try:  # point the inherited descriptors at /dev/null: nothing buffered can reach the pipe
                os.dup2(null, fd)
            except OSError:
                pass
        os.close(null)
        _PIPE_FDS.clear()


os.register_at_fork(after_in_child=_forget_after_fork)


@atexit.register
def _close_at_exit() -> None:
    # nobody waits for a solve still running at exit (a pending rebuild is part of a saved model's
    # state, recomputed on load): give the worker a moment to see the closed pipe, then stop it
    if _WORKER is not None and _WORKER_PID == os.getpid():
        _WORKER.close(timeout=1.0)


def _transportable(exc: BaseException) -> BaseException:
    """The exception with the worker's traceback as a note, or a RuntimeError if it cannot be pickled."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    note = f"in the rebuild worker process:\n{text}"
    try:
        if not isinstance(exc, Exception):  # SystemExit, KeyboardInterrupt: not the parent's to raise
            raise TypeError
        if hasattr(exc, "add_note"):  # Python >= 3.11
            exc.add_note(note)
        else:  # 3.10 keeps the text (and pickles it) without showing it
            exc.__notes__ = [*getattr(exc, "__notes__", []), note]
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001
        return RuntimeError(f"{type(exc).__name__} in the rebuild worker process:\n{text}")


def serve(calls_fd: int, answers_fd: int) -> None:
    """The worker's loop: read a call, run it, answer; exit when the parent closes the pipe."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    inbox, outbox = os.fdopen(calls_fd, "rb"), os.fdopen(answers_fd, "wb")
    try:
        _serve(inbox, outbox)
    finally:
        for pipe in (inbox, outbox):
            try:
                pipe.close()
            except OSError:  # a broken pipe: the parent is gone
                pass


def _serve(inbox, outbox) -> None:
    def answer(request_id: int, frame: bytes) -> bool:
        try:
            outbox.write(_HEADER.pack(request_id, len(frame)) + frame)
            outbox.flush()
            return True
        except OSError:  # the parent is gone
            return False

    if not answer(_HANDSHAKE, pickle.dumps(_robustream_file())):
        return
    while (frame := _read_frame(inbox)) is not None:
        request_id, payload = frame
        start = time.thread_time()
        try:
            try:
                fn, args = pickle.loads(payload)
            except Exception as exc:  # e.g. a class defined in the parent's __main__
                raise WorkerUnavailable(f"the rebuild worker cannot load the call: {exc!r}") from None
            result = (True, fn(*args))
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the caller
            result = (False, exc if isinstance(exc, WorkerUnavailable) else _transportable(exc))
        cpu = time.thread_time() - start
        try:
            reply = pickle.dumps((*result, cpu), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001
            reply = pickle.dumps((False, RuntimeError(f"unpicklable answer: {exc!r}"), cpu))
        if not answer(request_id, reply):
            return
