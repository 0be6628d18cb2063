"""Closing kafka-python clients without their teardown noise.

kafka-python 3 logs ERRORs, some with a traceback, for the work its own ``close()`` cuts short: the
metadata request it cancels ("Metadata refresh: failed Cancelled") and the read its IO thread had
pending on the socket that ``close()`` just shut ("Error receiving network data closing socket").
Nothing is wrong and nothing can be done about them, yet they read like failures at the end of a
clean shutdown. :func:`close_client` counts the closes in progress, and :class:`QuietWhileClosing`,
on the handler that prints kafka-python's records, drops those records while any close is in
progress (from the closing thread and from the client's IO thread alike).

>>> from robustream.daemon.clients import close_client
>>> class Client:
...     def close(self, timeout=None):
...         raise OSError("already gone")
>>> close_client(Client(), timeout=1)  # best effort: the error is swallowed
"""

from __future__ import annotations

import logging
import threading
from typing import Any

_lock = threading.Lock()
_closing = 0


def close_client(client: Any, **kwargs: Any) -> None:
    """``client.close(**kwargs)``, best effort, with kafka-python's teardown records held back meanwhile."""
    global _closing
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
    """Drops kafka-python's records below CRITICAL while :func:`close_client` is closing a client."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.CRITICAL or not closing_in_progress()
