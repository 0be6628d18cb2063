"""``robustream demo`` and the producer/consumer examples, run as a user runs them."""

import json
import re
import subprocess
import sys
from pathlib import Path

from kafka_helpers import DaemonThread, serve_args

ROOT = Path(__file__).resolve().parents[1]


def _run(*args, timeout=300):
    done = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done.stdout


def test_demo_runs_end_to_end_and_accounts_for_every_message():
    out = _run("-m", "robustream.cli", "demo", "--dataset", "synthetic", "--max-samples", "1600", "--no-progress")
    lines = dict(m.groups() for line in out.splitlines() if (m := re.match(r"^(\S.*?)\s{2,}(\S.*)$", line)))
    assert int(lines["messages predicted"].strip()) == 1600
    assert int(lines["dead letters (malformed input)"].strip()) == 4
    accuracy = float(lines["prequential accuracy vs clean labels"])
    noisy_agreement = float(lines["agreement with the noisy labels it learned from"])
    # it learns from labels of which ~15% are wrong, and is scored against the clean ones
    assert accuracy > 0.85 and accuracy > noisy_agreement
    assert "metrics were served on http://127.0.0.1:" in out


def test_demo_rejects_a_bad_dataset_with_one_line():
    done = subprocess.run([sys.executable, "-m", "robustream.cli", "demo", "--dataset", "/nonexistent.svm"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith("robustream demo: error:") and "nonexistent" in done.stderr
    assert "Traceback" not in done.stderr


def test_demo_and_broker_options_a_user_gets_wrong_are_named():
    import socket

    with socket.socket() as busy:  # a port in use
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        cases = [
            (["demo", "--max-samples", "-5"], "robustream demo: error: --max-samples: must be at least 1, got -5"),
            (["demo", "--seed", "-1"], "robustream demo: error: --seed: must be at least 0, got -1"),
            (["demo", "--dataset", "synthetic", "--metrics-port", str(port)],
             f"robustream demo: error: --metrics-port {port}: cannot listen (Address already in use)"),
            (["broker", "--host", "no-such-host.invalid", "--port", "0"],
             "robustream broker: error: --host no-such-host.invalid: cannot be resolved"),
            # "n_per_class must satisfy 1 <= low <= high, got 0", naming no flag (a review)
            (["demo", "--dataset", "synthetic", "--max-samples", "1"],
             "robustream demo: error: --max-samples: 'synthetic' draws rows of two classes, at least 2, got 1"),
        ]  # before: all rows but the last 5; "expected non-negative integer"; "[Errno 98]"; a traceback
        for argv, message in cases:
            done = subprocess.run([sys.executable, "-m", "robustream.cli", *argv], cwd=ROOT, capture_output=True,
                                  text=True, timeout=120)  # fmt: skip
            assert done.returncode == 2 and "Traceback" not in done.stderr, (argv, done.stderr[-2000:])
            assert done.stderr.startswith(message), (argv, done.stderr)


def test_producer_and_consumer_examples_around_a_running_daemon(broker, tmp_path):
    clean_file = tmp_path / "clean.json"
    out = _run("examples/produce_noisy.py", "--bootstrap-servers", broker.bootstrap_servers, "--topic", "in",
               "--dataset", "synthetic", "--max-samples", "800", "--clean-labels", str(clean_file))  # fmt: skip
    assert "sent 800 messages to in" in out
    with DaemonThread(serve_args(broker.bootstrap_servers, tmp_path / "ckpt")) as d:
        d.wait_processed(800)
        assert d.stop() == 0
    out = _run("examples/read_predictions.py", "--bootstrap-servers", broker.bootstrap_servers, "--topic", "preds",
               "--clean-labels", str(clean_file), "--show", "2", "--idle-seconds", "15")  # fmt: skip
    assert "800 predictions read from preds" in out
    accuracy = float(out.split("accuracy against the clean labels: ")[1].split()[0])
    assert accuracy > 0.8
    first = json.loads(out.splitlines()[0].replace("'", '"').replace("True", "true").replace("False", "false")
                       .replace("None", "null"))  # fmt: skip
    assert set(first) == {"id", "y_pred", "proba", "margin", "outlier", "model_version"}


def test_the_broker_command_serves_its_topics_until_sigterm():
    import signal
    import socket

    from kafka.admin import KafkaAdminClient

    proc = subprocess.Popen([sys.executable, "-m", "robustream.cli", "broker", "--port", "0", "--topic", "events:3",
                             "--topic", "preds"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        first = proc.stdout.readline()
        assert first.startswith("embedded broker (tansu, in-memory store) on 127.0.0.1:"), first + proc.stderr.read()
        bootstrap = first.split(" on ")[1].split(";")[0]
        rest = [proc.stdout.readline() for _ in range(3)]
        assert rest[0].strip() == "topics: events (3 partitions), preds (1 partition)"
        assert f"robustream serve --bootstrap-servers {bootstrap} --kafka-option session_timeout_ms=6000" in rest[2]
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            described = {t["name"]: len(t["partitions"]) for t in admin.describe_topics(["events", "preds"])}
        finally:
            admin.close()
        assert described == {"events": 3, "preds": 1}
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        host, port = bootstrap.split(":")
        try:  # the broker went with it
            socket.create_connection((host, int(port)), timeout=1).close()
            reachable = True
        except OSError:
            reachable = False
        assert not reachable
    finally:
        if proc.poll() is None:
            proc.kill()


def test_the_broker_command_names_a_bad_topic():
    done = subprocess.run([sys.executable, "-m", "robustream.cli", "broker", "--topic", "events:zero"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("robustream broker: error: --topic events:zero: expected NAME or NAME:PARTITIONS")


def test_the_broker_command_says_when_its_port_is_taken():
    # it took the listener there for itself: "embedded broker ... on 127.0.0.1:P", topics created on the
    # broker already there, then "tansu exited with code 0" (or a 31 s timeout before a KafkaTimeoutError)
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "robustream.cli", "broker", "--port", str(port)],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (f"robustream broker: error: 127.0.0.1:{port} is in use: another process listens there "
                           "(another broker?); choose another port\n")


def test_the_kafka_examples_say_when_the_brokers_cannot_be_reached():
    commands = [["examples/produce_noisy.py", "--bootstrap-servers", "127.0.0.1:1", "--max-samples", "5"],
                ["examples/read_predictions.py", "--bootstrap-servers", "127.0.0.1:1"]]  # fmt: skip
    # side by side: each waits for kafka-python's bootstrap timeout
    procs = [subprocess.Popen([sys.executable, *c], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for c in commands]  # fmt: skip
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 1 and "Traceback" not in err, err[-2000:]
        assert "error: cannot reach the brokers" in err


def test_an_interrupted_demo_stops_its_daemon_then_its_broker_quietly():
    import signal
    import socket
    import time

    proc = subprocess.Popen([sys.executable, "-m", "robustream.cli", "demo", "--dataset", "synthetic", "--max-samples",
                             "20000", "--no-progress"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    try:
        first = proc.stdout.readline()
        assert first.startswith("embedded broker (tansu) on 127.0.0.1:"), first
        host, port = first.split(" on ")[1].split(";")[0].split(":")
        assert proc.stdout.readline().startswith("replaying synthetic")
        time.sleep(2)  # mid-stream
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130
        assert err == "interrupted\n"  # no client errors from a broker stopped under connected clients
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
            reachable = True
        except OSError:
            reachable = False
        assert not reachable  # the broker went with it
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_broker_start_cut_short_leaves_no_tansu_behind(monkeypatch):
    import socket

    from robustream.daemon import embedded

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # Ctrl-C while waiting for tansu to listen

    broker = embedded.EmbeddedBroker()
    monkeypatch.setattr(socket, "create_connection", interrupted)
    try:
        broker.start()
    except KeyboardInterrupt:
        pass
    else:
        raise AssertionError("start() swallowed the interrupt")
    assert broker.process is not None and broker.process.poll() is not None  # killed, not left running


def _children_named(pid: int, name: str) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)
            comm = fields[0].split("(", 1)[1]
            ppid = int(fields[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid and name in comm:
            found.append(int(stat.parent.name))
    return found


def test_a_demo_stopped_while_its_broker_starts_takes_the_broker_with_it():
    import os
    import signal
    import time

    proc = subprocess.Popen([sys.executable, "-m", "robustream.cli", "demo", "--dataset", "synthetic", "--no-progress"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not (brokers := _children_named(proc.pid, "tansu")) and proc.poll() is None:
            assert time.monotonic() < deadline, "no tansu process started"
            time.sleep(0.005)
        proc.send_signal(signal.SIGTERM)  # before the broker is up, or just after: before the demo prints
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert brokers, (proc.returncode, err)
    assert proc.returncode == 130 and err == "interrupted\n", (proc.returncode, err)
    for pid in brokers:  # tansu runs in its own session: only the demo can stop it
        try:
            os.kill(pid, 0)
            alive = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except ProcessLookupError:
            alive = False
        if alive:
            os.kill(pid, signal.SIGKILL)
        assert not alive, f"tansu {pid} outlived the demo"


def test_the_demo_leaves_an_outlier_fraction_the_user_set_alone():
    from robustream.daemon.demo import demo_params

    # "outlier_fraction =0.1" (a space before =) got outlier_fraction=auto appended, which won
    for given in (["outlier_fraction =0.1"], [" outlier_fraction= 0.1"], ["outlier_fraction=0.1"]):
        assert demo_params("rgd", given) == given
    assert demo_params("rgd", ["nu=0.2"]) == ["nu=0.2", "outlier_fraction=auto"]
    assert demo_params("coreset", []) == []
