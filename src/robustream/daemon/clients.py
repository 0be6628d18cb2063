"""Closing kafka-python clients without their teardown noise.

kafka-python 3 logs ERRORs, some with a traceback, for the work its own ``close()`` cuts short: the
metadata request it cancels ("Metadata refresh: failed Cancelled") and the read its IO thread had
pending on the socket that ``close()`` just shut ("Error receiving network data closing socket").
Nothing is wrong and nothing can be done about them, yet they read like failures at the end of a
clean shutdown. :func:`close_client` counts the closes in progress, and :class:`QuietWhileClosing`,
on the handler that prints kafka-python's records, drops the records of those teardown kinds
(:data:`TEARDOWN_MESSAGES`) while any close is in progress, from the closing thread and from the
client's IO thread alike; every other record still shows.

In the main thread a close is not cut short by Ctrl-C or SIGTERM either (:func:`deferred_interrupts`):
a client interrupted half-way through ``close()`` keeps its IO thread, which then logs connection
errors when the broker goes.

>>> from robustream.daemon.clients import close_client
>>> class Client:
...     def close(self, timeout=None):
...         raise OSError("already gone")
>>> close_client(Client(), timeout=1)  # best effort: the error is swallowed
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

Client = TypeVar("Client")

_lock = threading.Lock()
_closing = 0


# kafka-python 3's message templates for the work its close() cancels or cuts off
TEARDOWN_MESSAGES = frozenset({
    "Metadata refresh: failed %s",
    "Metadata refresh loop error: %s",
    "%s: Error receiving network data closing socket",
    "%s: Error sending request data: %s",
    "%s: Abort (%s)",
    "Error closing coroutine for cancelled task",
})  # fmt: skip


@contextlib.contextmanager
def deferred_interrupts() -> Iterator[None]:
    """SIGINT and SIGTERM arriving inside the block are delivered at its end, to the handlers that were
    in place before it, so that what the block makes or closes (a client, a child process) is never
    left half-done. Outside the main thread (where signals cannot be handled) it does nothing.

    >>> with deferred_interrupts():
    ...     pass
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []
    kinds = (signal.SIGINT, signal.SIGTERM)
    previous = {kind: signal.signal(kind, lambda signum, frame: arrived.append(signum)) for kind in kinds}
    try:
        yield
    finally:
        for kind, handler in previous.items():
            signal.signal(kind, handler)
        for signum in dict.fromkeys(arrived):
            signal.raise_signal(signum)


def close_client(client: Any, **kwargs: Any) -> None:
    """``client.close(**kwargs)``, best effort and not cut short by an interrupt, with kafka-python's
    teardown records held back meanwhile."""
    global _closing
    # the count too: an interrupt between its increment and decrement would leave it up for good
    with deferred_interrupts():
        with _lock:
            _closing += 1
        try:
            client.close(**kwargs)
        except Exception:  # noqa: BLE001 - closing is best effort
            pass
        finally:
            with _lock:
                _closing -= 1


def closing_in_progress() -> bool:
    """Whether a :func:`close_client` call is running in any thread."""
    return _closing > 0


class QuietWhileClosing(logging.Filter):
    """Drops kafka-python's teardown records (:data:`TEARDOWN_MESSAGES`) while :func:`close_client` is
    closing a client."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (closing_in_progress() and record.msg in TEARDOWN_MESSAGES)


@contextlib.contextmanager
def kafka_client(make: Callable[[], Client], **close_kwargs: Any) -> Iterator[Client]:
    """A client from ``make()``, built with interrupts deferred and closed by :func:`close_client` on the way
    out, so that an interrupt at any point leaves no client open.

    >>> class Client:
    ...     def close(self, timeout=None):
    ...         print("closed")
    >>> with kafka_client(Client, timeout=5) as client:
    ...     pass
    closed
    """
    client = None
    try:
        with deferred_interrupts():
            client = make()
        yield client
    finally:
        if client is not None:
            close_client(client, **close_kwargs)
