"""The daemon against a real Kafka-compatible broker (tansu, memory store, started per test on a free
loopback port): end to end, dead letters, kill -9, SIGTERM, broker outage and restart, metrics over
HTTP, two daemons in one group."""

import json
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter

import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kafka_helpers import (
    TOPICS,
    DaemonThread,
    free_port,
    labelled_messages,
    produce,
    read_topic,
    scrape,
    serve_args,
    start_daemon_process,
    wait_for_metric,
)
from robustream.daemon.checkpoint import CheckpointStore
from robustream.daemon.metrics import METRIC_NAMES
from test_daemon import BAD_MESSAGES

IN, PREDS, DLQ = TOPICS["input"], TOPICS["predictions"], TOPICS["dead_letters"]


def _ids(records):
    return Counter(r.key.decode() for r in records)


def _bad_messages():
    return [(f"bad{i}", raw if raw is not None else b"") for i, (raw, _) in enumerate(BAD_MESSAGES) if raw is not None]


def test_end_to_end_every_id_exactly_once_and_metrics_agree(broker, tmp_path):
    good = labelled_messages(1500)
    unlabelled = [(f"u{i}", json.dumps({"id": f"u{i}", "x": {"f0": 0.5, "f1": -0.2}}).encode()) for i in range(50)]
    bad = _bad_messages()
    # valid JSON the learner refuses to learn (its solves cannot square the value): invalid input, not a crash
    refused = [("big", json.dumps({"id": "big", "x": {"f0": 1e300, "f1": 0.0}, "y": 1}).encode())]
    produce(broker.bootstrap_servers, IN, good[:700] + refused + good[700:] + unlabelled + bad)
    total = len(good) + len(unlabelled) + len(bad) + len(refused)
    with DaemonThread(serve_args(broker.bootstrap_servers, tmp_path / "ckpt", "--checkpoint-every", "400")) as d:
        d.wait_processed(total)
        text = scrape(d.daemon.metrics_port)
        assert d.stop() == 0
    preds = read_topic(broker.bootstrap_servers, PREDS, expect=len(good) + len(unlabelled))
    dlq = read_topic(broker.bootstrap_servers, DLQ, expect=len(bad) + len(refused))
    seen = _ids(preds) + _ids(dlq)
    assert set(seen) == {k for k, _ in good + unlabelled + bad + refused}
    assert max(seen.values()) == 1
    assert _ids(dlq) == Counter(k for k, _ in bad + refused)
    big = json.loads(next(r.value for r in dlq if r.key == b"big"))
    assert big["error"].startswith("field 'x': feature 'f0' is 1e+300, larger in absolute value")
    source = next(r for r in read_topic(broker.bootstrap_servers, IN, expect=total) if r.key == b"big")
    assert (big["partition"], big["offset"]) == (source.partition, source.offset)
    assert d.daemon.model.n_failed_rebuilds_ == 0  # learned, the row failed every rebuild for a window

    out = [json.loads(r.value) for r in preds]
    labelled_out = [o for o in out if not str(o["id"]).startswith("u")]
    assert all(set(o) == {"id", "y_pred", "proba", "margin", "outlier", "model_version"} for o in labelled_out)
    assert all("outlier" not in o for o in out if str(o["id"]).startswith("u"))
    assert all(o["y_pred"] in (0, 1) and 0.5 <= o["proba"] <= 1.0 for o in out)
    assert max(o["model_version"] for o in out) >= 5  # rebuilt every 200 labelled messages

    # the endpoint, scraped over HTTP, agrees with what was processed
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in text_string_to_metric_families(text) for s in f.samples}  # fmt: skip
    names = {name for name, _ in samples}
    for name in METRIC_NAMES:
        assert name in names or f"{name}_count" in names or name == "robustream_consumer_lag_messages", name
    assert any(n == "robustream_consumer_lag_messages" for n, _ in samples)
    assert samples[("process_resident_memory_bytes", ())] > 50e6  # the process collectors: memory before an OOM kill
    assert ("python_gc_collections_total", (("generation", "0"),)) in samples
    outcome = {dict(lbl)["outcome"]: v for (n, lbl), v in samples.items() if n == "robustream_messages_total"}
    assert outcome == {"ok": len(good), "predict_only": len(unlabelled), "invalid": len(bad) + 1, "dead_letter": 0}
    assert samples[("robustream_samples_learned_total", ())] == len(good)
    assert samples[("robustream_outliers_total", ())] == sum(bool(o.get("outlier")) for o in out)
    assert samples[("robustream_model_version", ())] == d.daemon.model.n_rebuilds_ >= 5
    assert 0.0 < samples[("robustream_outlier_rate", ())] < 0.5
    assert samples[("robustream_margin_width", ())] > 0
    assert 0.6 < samples[("robustream_prequential_accuracy", ())] <= 1.0
    assert samples[("robustream_coreset_rows", ())] == len(d.daemon.model._buffer.coreset) > 0
    processed = samples[("robustream_process_duration_seconds_count", ())]
    rebuilds = samples[("robustream_rebuild_duration_seconds_count", ())]
    assert processed + rebuilds == total - 0 and rebuilds == d.daemon.model.n_rebuilds_
    assert samples[("robustream_checkpoint_duration_seconds_count", ())] >= 2  # 400 of ~1,560 (batches vary)


def test_every_bad_message_kind_reaches_the_dead_letter_topic_with_its_reason(broker, tmp_path):
    bad = [(f"bad{i}", raw) for i, (raw, _) in enumerate(BAD_MESSAGES) if raw is not None]
    oversized = ("big", json.dumps({"id": "big", "x": {"a": 1.0}, "pad": "z" * 3000}).encode())
    too_many = ("wide", json.dumps({"id": "wide", "x": {f"f{i}": 1.0 for i in range(30)}}).encode())
    produce(broker.bootstrap_servers, IN, bad + [oversized, too_many])
    argv = serve_args(broker.bootstrap_servers, tmp_path / "ckpt", "--max-message-bytes", "2000",
                      "--max-features", "20")  # fmt: skip
    with DaemonThread(argv) as d:
        d.wait_processed(len(bad) + 2)
        assert d.stop() == 0
    dlq = {r.key.decode(): (json.loads(r.value), r) for r in read_topic(broker.bootstrap_servers, DLQ, expect=len(bad) + 2)}
    reasons = {f"bad{i}": reason for i, (raw, reason) in enumerate(BAD_MESSAGES) if raw is not None}
    reasons.update(big="more than --max-message-bytes 2000", wide="field 'x': 30 features, more than --max-features 20")
    assert set(dlq) == set(reasons)
    for key, reason in reasons.items():
        record, _ = dlq[key]
        assert reason in record["error"], (key, record["error"])
        assert record["topic"] == IN and isinstance(record["offset"], int) and record["partition"] in (0, 1)
    # the offsets named in the dead letters are exactly the offsets the bad messages had
    produced = {(rec["partition"], rec["offset"]) for rec, _ in dlq.values()}
    assert len(produced) == len(reasons)
    assert read_topic(broker.bootstrap_servers, PREDS, expect=None, timeout=3) == []


def test_kill_9_and_restart_loses_nothing_and_duplicates_at_most_one_checkpoint_interval(broker, tmp_path):
    every, batch = 300, 100
    messages = labelled_messages(3000)
    produce(broker.bootstrap_servers, IN, messages[:1500])
    metrics_port = free_port()
    # max_poll_interval_ms: a membership lost to a slow first batch (numba loading its cache on a busy
    # machine) would redo work beyond the checkpoint interval counted here
    argv = serve_args(broker.bootstrap_servers, tmp_path / "ckpt", "--checkpoint-every", str(every),
                      "--checkpoint-interval", "3600", "--max-poll-records", str(batch),
                      "--kafka-option", "max_poll_interval_ms=30000", metrics_port=metrics_port)  # fmt: skip
    proc = start_daemon_process(argv, tmp_path / "daemon1.log")
    try:
        wait_for_metric(metrics_port, "robustream_messages_total", 1000)
        produce(broker.bootstrap_servers, IN, messages[1500:])
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        proc.kill()
    latest = CheckpointStore(tmp_path / "ckpt").load_latest()
    assert latest is not None, "no checkpoint was written before the kill"
    proc = start_daemon_process(argv, tmp_path / "daemon2.log")
    try:  # the restart resumes at the checkpoint: it has the rest to do, then stops with everything flushed
        wait_for_metric(metrics_port, "robustream_messages_total", len(messages) - sum(latest.offsets.values()),
                        timeout=90)  # fmt: skip
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        proc.kill()
    preds = read_topic(broker.bootstrap_servers, PREDS, expect=len(messages), timeout=60, quiet=2.0)
    seen = _ids(preds)
    assert set(seen) == {k for k, _ in messages}, "some ids never got a prediction"
    duplicates = sum(c - 1 for c in seen.values())
    # redone: what was processed since the last checkpoint, at most one interval and the batch that crossed it
    assert duplicates <= every + batch - 1, duplicates


def _sigterm_exits_0(proc, log_path) -> float:
    """SIGTERM the daemon process; asserts exit code 0 and returns the seconds it took."""
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(30)
    assert code == 0, log_path.read_text()[-2000:]
    return time.monotonic() - start


def test_sigterm_is_graceful_exit_0_with_a_final_checkpoint(broker, tmp_path):
    messages = labelled_messages(700)
    produce(broker.bootstrap_servers, IN, messages)
    metrics_port = free_port()
    # a first batch slower than FAST_GROUP's 5 s poll interval (numba loading its cache on a busy machine)
    # would cost the membership and redo the batch: this test counts rebuilds
    argv = serve_args(broker.bootstrap_servers, tmp_path / "ckpt", "--kafka-option", "max_poll_interval_ms=30000",
                      "--checkpoint-every", "100000", "--checkpoint-interval", "3600",
                      metrics_port=metrics_port)  # fmt: skip
    proc = start_daemon_process(argv, tmp_path / "daemon.log")
    try:
        wait_for_metric(metrics_port, "robustream_messages_total", len(messages))
        assert _sigterm_exits_0(proc, tmp_path / "daemon.log") < 20
    finally:
        proc.kill()
    ckpt = CheckpointStore(tmp_path / "ckpt").load_latest()
    assert ckpt is not None, "no final checkpoint"
    produced = Counter(i % 2 for i in range(len(messages)))
    assert sum(ckpt.offsets.values()) == len(messages) and len(ckpt.offsets) == len(produced)
    assert ckpt.model.n_rebuilds_ == len(messages) // 200
    # a restart finds nothing left to do: the group's committed offsets match the checkpoint
    with DaemonThread(argv[:-2] + ["--metrics-port", "0"]) as d:
        time.sleep(6)
        assert d.daemon.n_processed == 0
        d.stop()


def test_a_second_sigterm_exits_at_once_when_the_graceful_stop_waits_for_a_frozen_broker(broker, tmp_path):
    # before: a second signal was ignored, so an operator waited out --shutdown-timeout
    messages = labelled_messages(300)
    produce(broker.bootstrap_servers, IN, messages)
    metrics_port = free_port()
    argv = serve_args(broker.bootstrap_servers, tmp_path / "ckpt", "--shutdown-timeout", "120",
                      "--checkpoint-interval", "3600", metrics_port=metrics_port)  # fmt: skip
    proc = start_daemon_process(argv, tmp_path / "daemon.log")
    try:
        wait_for_metric(metrics_port, "robustream_messages_total", len(messages))
        broker.pause()  # the final commit now waits for an answer
        try:
            proc.send_signal(signal.SIGTERM)
            time.sleep(2)
            assert proc.poll() is None  # still stopping gracefully
            start = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(30) == 1 and time.monotonic() - start < 10  # not the 120 s shutdown timeout
        finally:
            broker.resume()
    finally:
        proc.kill()
    assert "signal 15 again: exiting now, without the final checkpoint" in (tmp_path / "daemon.log").read_text()


def test_sigterm_while_joining_the_group_still_exits_0_in_bounded_time(broker, tmp_path):
    # with the consumer's default group settings the first join takes several seconds; closing the
    # consumer then waited for the LeaveGroup answer without a bound, until the 20 s kill timer (exit 1)
    produce(broker.bootstrap_servers, IN, labelled_messages(50))
    metrics_port = free_port()
    argv = ["serve", "--bootstrap-servers", broker.bootstrap_servers, "--input-topic", IN, "--predictions-topic",
            PREDS, "--dead-letter-topic", DLQ, "--checkpoint-dir", str(tmp_path / "ckpt"), "--metrics-port",
            str(metrics_port), "--group-id", "g-join"]  # fmt: skip
    proc = start_daemon_process(argv, tmp_path / "daemon.log")
    try:
        wait_for_metric(metrics_port, "robustream_broker_errors_total", 0)  # up, and joining
        time.sleep(2)
        assert _sigterm_exits_0(proc, tmp_path / "daemon.log") < 12
    finally:
        proc.kill()


def test_broker_outage_and_restart_are_survived_without_restarting_the_daemon(broker, tmp_path, monkeypatch):
    from robustream.daemon import service

    monkeypatch.setattr(service, "PAST_END_SECONDS", 2.0)  # how long a position past the end must last
    first = labelled_messages(800)
    produce(broker.bootstrap_servers, IN, first)
    argv = serve_args(broker.bootstrap_servers, tmp_path / "ckpt", "--checkpoint-every", "200")
    with DaemonThread(argv) as d:
        d.wait_processed(len(first))
        # outage that keeps the data: the broker process is frozen, then thawed
        broker.pause()
        time.sleep(8)
        assert d.thread.is_alive()
        scrape(d.daemon.metrics_port)  # the metrics endpoint stays up during the outage
        broker.resume()
        second = labelled_messages(400, start=800, seed=1)
        produce(broker.bootstrap_servers, IN, second)
        d.wait_processed(len(first) + len(second), timeout=90)
        # crash and restart of the broker (memory store: topics re-created, the old data is gone)
        broker.kill()
        time.sleep(3)
        broker.start()
        broker.create_topics({IN: 2, PREDS: 1, DLQ: 1})
        third = labelled_messages(300, start=1200, seed=2)
        produce(broker.bootstrap_servers, IN, third)
        d.wait_processed(len(first) + len(second) + len(third), timeout=120)
        assert d.stop() == 0
    preds = read_topic(broker.bootstrap_servers, PREDS, expect=len(third))
    assert {k for k, _ in third} <= set(_ids(preds))


def test_a_group_offset_past_the_end_of_a_recreated_partition_reads_it_from_the_beginning(broker, tmp_path,
                                                                                        monkeypatch):  # fmt: skip
    # a broker that lost its data (re-created topics) can keep a group offset committed before: tansu
    # answers fetches past the end with no records and no error, so nothing was ever read again
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    from robustream.daemon import service

    monkeypatch.setattr(service, "PAST_END_SECONDS", 2.0)  # how long a position past the end must last

    broker.create_topics({"in_past": 1})
    produce(broker.bootstrap_servers, "in_past", labelled_messages(30))
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id="g1", enable_auto_commit=False)
    tp = TopicPartition("in_past", 0)
    consumer.assign([tp])
    consumer.commit({tp: OffsetAndMetadata(500, "", -1)})
    consumer.close()
    with DaemonThread(serve_args(broker.bootstrap_servers, tmp_path / "ckpt", "--input-topic", "in_past")) as d:
        d.wait_processed(30, timeout=30)
        assert d.stop() == 0


def test_an_output_too_large_for_the_producer_becomes_a_dead_letter_and_the_offsets_move_on(broker, tmp_path):
    # before: the record was re-sent at every flush, forever, and nothing was checkpointed or committed
    from kafka import KafkaConsumer, TopicPartition

    broker.create_topics({"in_big": 1})
    good = labelled_messages(40)
    long_id = ("long", json.dumps({"id": "L" * 3000, "x": {"f0": 1.0}, "y": 1}).encode())  # a valid message
    produce(broker.bootstrap_servers, "in_big", good[:20] + [long_id] + good[20:])
    argv = serve_args(broker.bootstrap_servers, tmp_path / "ckpt", "--input-topic", "in_big",
                      "--kafka-option", "max_request_size=2000")  # its prediction is about 3,100 bytes
    with DaemonThread(argv) as d:
        d.wait_processed(41, timeout=30)
        assert d.stop() == 0
    assert d.daemon.metrics.value("robustream_outputs_replaced_total") == 1
    assert d.daemon.metrics.value("robustream_messages_total", outcome="ok") == 41  # it was learned
    preds = read_topic(broker.bootstrap_servers, PREDS, expect=40)
    dlq = read_topic(broker.bootstrap_servers, DLQ, expect=1)
    assert _ids(preds) == Counter(k for k, _ in good)
    [letter] = dlq
    record = json.loads(letter.value)
    assert letter.key == b"long" and (record["topic"], record["partition"], record["offset"]) == ("in_big", 0, 20)
    assert record["error"].startswith("output record too large") and record["raw"] is None
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id="g1", enable_auto_commit=False)
    assert consumer.committed(TopicPartition("in_big", 0)) == 41  # committed past it
    consumer.close()


def test_a_frozen_broker_does_not_make_the_daemon_send_its_outputs_twice(broker, tmp_path):
    # before: every failed flush sent the records still in flight again (3,700 of 4,000 twice after 25 s)
    good = labelled_messages(1500)
    produce(broker.bootstrap_servers, IN, good)
    argv = serve_args(broker.bootstrap_servers, tmp_path / "ckpt", "--checkpoint-every", "300",
                      "--max-poll-records", "100")  # fmt: skip
    with DaemonThread(argv) as d:
        d.wait_processed(200)
        broker.pause()  # SIGSTOP: connections stay open, nothing is answered
        try:
            time.sleep(8)
        finally:
            broker.resume()
        d.wait_processed(len(good))
        _wait_until(lambda: not d.daemon._pending, "every output acknowledged")
        assert d.stop() == 0
        assert d.daemon.metrics.value("robustream_broker_errors_total") >= 1  # the freeze was felt
    preds = read_topic(broker.bootstrap_servers, PREDS, expect=len(good))
    assert len(preds) == len(good) and _ids(preds) == Counter(k for k, _ in good)


def test_brokers_that_hang_stop_the_contact_gauge_and_count_broker_errors(broker, tmp_path, monkeypatch):
    # before: a frozen broker raised nothing in poll(), so no error was counted, no "broker trouble" line was
    # logged and the lag gauge froze: nothing an alert could see
    from robustream.daemon import service

    monkeypatch.setattr(service, "CONTACT_PROBE_SECONDS", 1.0)  # (30 s)
    monkeypatch.setattr(service, "PROBE_TIMEOUT_MS", 1000)
    good = labelled_messages(100)
    produce(broker.bootstrap_servers, IN, good)
    contact = "robustream_broker_last_contact_timestamp_seconds"
    with DaemonThread(serve_args(broker.bootstrap_servers, tmp_path / "ckpt")) as d:
        d.wait_processed(len(good))
        idle_since = time.time()
        _wait_until(lambda: d.daemon.metrics.value(contact) > idle_since + 1, "the probe answered on an idle topic")
        assert d.daemon.metrics.value("robustream_broker_errors_total") == 0
        broker.pause()
        frozen_at = time.time()
        try:
            _wait_until(lambda: d.daemon.metrics.value("robustream_broker_errors_total") >= 2, "unanswered probes")
            last = d.daemon.metrics.value(contact)
            assert last < frozen_at + 1.5  # (a probe sent just before the pause may still have been answered)
            time.sleep(2)
            assert d.daemon.metrics.value(contact) == last
        finally:
            broker.resume()
        thawed_at = time.time()
        _wait_until(lambda: d.daemon.metrics.value(contact) > thawed_at, "answers again after the thaw")
        assert d.stop() == 0


def test_a_partition_recreated_and_refilled_past_the_checkpoint_is_read_from_its_beginning(broker, tmp_path):
    # the broker (memory store) lost its data while the daemon was down; the topics were re-created and
    # refilled beyond the checkpoint's offset. Resuming there skipped the new partition's first 300
    # messages: the record before that offset is not the one checkpointed, so it is read from the start.
    old = labelled_messages(300)
    produce(broker.bootstrap_servers, IN, old, partitions=1)
    argv = serve_args(broker.bootstrap_servers, tmp_path / "ckpt")
    with DaemonThread(argv) as d:
        d.wait_processed(len(old))
        assert d.stop() == 0
    assert sum(CheckpointStore(tmp_path / "ckpt").load_latest().offsets.values()) == len(old)
    broker.kill()
    broker.start()
    broker.create_topics({IN: 2, PREDS: 1, DLQ: 1})
    new = labelled_messages(500, start=1000, seed=3)
    produce(broker.bootstrap_servers, IN, new, partitions=1)
    with DaemonThread(argv) as d:
        d.wait_processed(len(new))
        assert d.stop() == 0
    preds = read_topic(broker.bootstrap_servers, PREDS, expect=len(new))
    assert _ids(preds) == Counter(k for k, _ in new)


def test_corrupt_newest_checkpoint_starts_from_the_previous_one(broker, tmp_path):
    messages = labelled_messages(1000)
    produce(broker.bootstrap_servers, IN, messages[:600])
    argv = serve_args(broker.bootstrap_servers, tmp_path / "ckpt", "--checkpoint-every", "200")
    with DaemonThread(argv) as d:
        d.wait_processed(600)
        assert d.stop() == 0
    store = CheckpointStore(tmp_path / "ckpt")
    paths = store.paths()
    assert len(paths) >= 2
    previous = store.load_latest()  # before corrupting: the newest
    raw = paths[-1].read_bytes()
    paths[-1].write_bytes(raw[: len(raw) // 2])  # torn write
    shutil.copytree(tmp_path / "ckpt", tmp_path / "copy")  # loading sets a corrupt file aside: look at a copy
    older = CheckpointStore(tmp_path / "copy").load_latest()
    assert older.path.name == paths[-2].name and older.path.name != previous.path.name
    produce(broker.bootstrap_servers, IN, messages[600:])
    d = DaemonThread(argv)  # loaded, not yet running
    assert d.daemon.metrics.value("robustream_checkpoint_fallbacks_total") == 1
    assert (tmp_path / "ckpt" / (paths[-1].name + ".corrupt")).exists()
    assert d.daemon.checkpoint_offsets == older.offsets
    with d:
        # it goes back to the older checkpoint's offsets: the restored model learns what it missed
        d.wait_processed(1000 - sum(older.offsets.values()))
        time.sleep(1)
        assert d.daemon.n_processed == 1000 - sum(older.offsets.values())
        assert d.stop() == 0
    preds = read_topic(broker.bootstrap_servers, PREDS, expect=1000)
    assert set(_ids(preds)) == {k for k, _ in messages}


def _wait_until(condition, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.2)


def _owned(d: DaemonThread) -> int:
    consumer = d.daemon.consumer
    return len(consumer.assignment()) if consumer is not None else 0


def _daemon_a_falls_back(broker, tmp_path, topic: str, n_messages: int):
    """Daemon A processes 400 messages of a 2-partition ``topic`` in two runs (so every checkpoint of
    the second holds offsets of both partitions), then its newest checkpoint is torn: A will fall back.
    Returns the bootstrap servers, the messages, and the arguments of A and of a daemon B in its group."""
    broker.create_topics({topic: 2})
    bootstrap = broker.bootstrap_servers
    messages = labelled_messages(n_messages)
    a_args, b_args = (serve_args(bootstrap, tmp_path / name, "--input-topic", topic, "--checkpoint-every", "50")
                      for name in ("a", "b"))  # fmt: skip
    for start in (0, 200):
        produce(bootstrap, topic, messages[start:start + 200], partitions=2)
        with DaemonThread(a_args) as a:
            a.wait_processed(200)
            assert a.stop() == 0
    paths = CheckpointStore(tmp_path / "a").paths()
    paths[-1].write_bytes(paths[-1].read_bytes()[:100])
    shutil.copytree(tmp_path / "a", tmp_path / "a-copy")  # loading sets a corrupt file aside: look at a copy
    assert len(CheckpointStore(tmp_path / "a-copy").load_latest().offsets) == 2
    return bootstrap, messages, a_args, b_args


def test_after_a_fallback_a_partition_taken_over_later_resumes_at_the_group_offset(broker, tmp_path):
    # A falls back to an older checkpoint; a partition it takes over from B later starts where B
    # committed, not at A's old offset (the group's offset is not A's own commit)
    bootstrap, messages, a_args, b_args = _daemon_a_falls_back(broker, tmp_path, "in_fb", 1400)
    with DaemonThread(b_args) as b:
        _wait_until(lambda: _owned(b) == 2, "B holds both partitions")
        with DaemonThread(a_args) as a:
            assert a.daemon.metrics.value("robustream_checkpoint_fallbacks_total") == 1
            _wait_until(lambda: _owned(a) == 1 and _owned(b) == 1, "A and B hold one partition each")
            produce(bootstrap, "in_fb", messages[400:1300], partitions=2)

            def settled():  # B's count stops moving once its partition is read to the end
                seen = b.daemon.n_processed
                time.sleep(2)
                return seen > 0 and a.daemon.n_processed > 0 and b.daemon.n_processed == seen

            _wait_until(settled, "B has read its partition to the end")
            assert b.stop() == 0  # commits what it processed
            _wait_until(lambda: _owned(a) == 2, "A takes B's partition over")
            time.sleep(2)
            before = a.daemon.n_processed
            produce(bootstrap, "in_fb", messages[1300:], partitions=2)
            a.wait_processed(before + 100)
            time.sleep(3)
            # B stopped gracefully and committed everything: A has only the 100 new messages to process
            assert a.daemon.n_processed - before == 100
            assert a.stop() == 0


def test_after_a_fallback_work_another_daemon_committed_since_is_not_redone(broker, tmp_path):
    # A stops; its newest checkpoint is torn; B processes and commits both partitions; A restarts on its
    # older checkpoint: the group's offsets are B's commits, so A goes on from there (only its own
    # commits are redone for the restored model)
    bootstrap, messages, a_args, b_args = _daemon_a_falls_back(broker, tmp_path, "in_fb2", 800)
    produce(bootstrap, "in_fb2", messages[400:700], partitions=2)
    with DaemonThread(b_args) as b:
        b.wait_processed(300)
        assert b.stop() == 0
    produce(bootstrap, "in_fb2", messages[700:], partitions=2)
    with DaemonThread(a_args) as a:
        assert a.daemon.metrics.value("robustream_checkpoint_fallbacks_total") == 1
        a.wait_processed(100)
        time.sleep(3)
        assert a.daemon.n_processed == 100
        assert a.stop() == 0


def test_a_second_daemon_on_the_same_checkpoint_folder_is_refused_and_the_first_goes_on(broker, tmp_path):
    # sharing a folder, each daemon's checkpoints overwrote and deleted the other's (same sequence
    # numbers, the last `keep`), and a restart could load the other member's model and offsets
    messages = labelled_messages(600)
    produce(broker.bootstrap_servers, IN, messages)
    port = free_port()
    first = start_daemon_process(serve_args(broker.bootstrap_servers, tmp_path / "ckpt", metrics_port=port),
                                 tmp_path / "first.log")  # fmt: skip
    try:
        wait_for_metric(port, "robustream_messages_total", 1)
        second = subprocess.run([sys.executable, "-m", "robustream.cli",
                                 *serve_args(broker.bootstrap_servers, tmp_path / "ckpt", "--group-id", "g2")],
                                capture_output=True, text=True, timeout=60)  # fmt: skip
        assert second.returncode == 2, second.stderr
        assert (f"--checkpoint-dir {tmp_path / 'ckpt'}: in use by another robustream daemon (pid {first.pid} on "
                in second.stderr), second.stderr  # fmt: skip
        wait_for_metric(port, "robustream_messages_total", len(messages))
        assert _sigterm_exits_0(first, tmp_path / "first.log") < 30
    finally:
        first.kill()
    assert sum(CheckpointStore(tmp_path / "ckpt").load_latest().offsets.values()) == len(messages)


def test_two_daemons_in_one_group_share_the_partitions_and_account_for_every_id(broker, tmp_path):
    broker.create_topics({"in4": 4})
    messages = labelled_messages(2000)
    a_args = serve_args(broker.bootstrap_servers, tmp_path / "a", "--input-topic", "in4")
    b_args = serve_args(broker.bootstrap_servers, tmp_path / "b", "--input-topic", "in4")

    with DaemonThread(a_args) as a, DaemonThread(b_args) as b:
        # produced once both are members: a member that joined late would find nothing left to do
        _wait_until(lambda: _owned(a) and _owned(b) and _owned(a) + _owned(b) == 4, "two members sharing 4 partitions",
                    timeout=90)  # fmt: skip
        produce(broker.bootstrap_servers, "in4", messages, partitions=4)
        deadline = time.monotonic() + 90
        while a.daemon.n_processed + b.daemon.n_processed < len(messages) and time.monotonic() < deadline:
            time.sleep(0.2)
        parts_a = {tp.partition for tp in a.daemon.consumer.assignment()}
        parts_b = {tp.partition for tp in b.daemon.consumer.assignment()}
        assert a.stop() == 0
        assert b.stop() == 0
    assert parts_a and parts_b and not parts_a & parts_b and parts_a | parts_b == {0, 1, 2, 3}
    assert a.daemon.n_processed > 0 and b.daemon.n_processed > 0
    preds = read_topic(broker.bootstrap_servers, PREDS, expect=len(messages))
    seen = _ids(preds)
    assert set(seen) == {k for k, _ in messages}


def test_unreachable_brokers_at_start_up_keep_metrics_up_and_sigterm_still_exits_0(tmp_path):
    metrics_port = free_port()
    argv = serve_args(f"127.0.0.1:{free_port()}", tmp_path / "ckpt", metrics_port=metrics_port)
    proc = start_daemon_process(argv, tmp_path / "daemon.log")
    try:
        wait_for_metric(metrics_port, "robustream_broker_errors_total", 1, timeout=30)
        start = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
        assert time.monotonic() - start < 10
    finally:
        proc.kill()
    assert "cannot reach the brokers" in (tmp_path / "daemon.log").read_text()


def test_three_labels_one_vs_rest_every_id_once_and_metrics_agree(broker, tmp_path):
    # one-vs-rest members appear while learning (one per new class): rebuilds are found in all of them;
    # a producer setting given with --kafka-option replaces the daemon's default
    rng = np.random.default_rng(3)
    names = ["cat", "dog", "bird"]
    labelled = []
    for i in range(900):
        c = int(rng.integers(3))
        x = rng.normal(size=3) + 3.0 * np.eye(3)[c]
        labelled.append((str(i), json.dumps({"id": str(i), "x": {f"f{j}": float(v) for j, v in enumerate(x)},
                                             "y": names[c]}).encode()))  # fmt: skip
    unlabelled = [(f"u{i}", json.dumps({"id": f"u{i}", "x": {"f0": 3.0, "f1": 0.1}}).encode()) for i in range(30)]
    produce(broker.bootstrap_servers, IN, labelled + unlabelled)
    total = len(labelled) + len(unlabelled)
    argv = serve_args(broker.bootstrap_servers, tmp_path / "ckpt", "--labels", "cat,dog,bird",
                      "--kafka-option", "linger_ms=1")  # fmt: skip
    with DaemonThread(argv) as d:
        d.wait_processed(total)
        text = scrape(d.daemon.metrics_port)
        assert d.stop() == 0
    preds = read_topic(broker.bootstrap_servers, PREDS, expect=total)
    assert _ids(preds) == Counter(k for k, _ in labelled + unlabelled)
    out = {o["id"]: o for o in (json.loads(r.value) for r in preds)}
    assert all(o["margin"] is None for o in out.values())
    assert all(o["y_pred"] in names or o["y_pred"] is None for o in out.values())  # None: before any learning
    assert all(("outlier" in o) == (not o["id"].startswith("u")) for o in out.values())
    assert sum(out[k]["y_pred"] == json.loads(v)["y"] for k, v in labelled[450:]) > 0.8 * 450
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in text_string_to_metric_families(text) for s in f.samples}  # fmt: skip
    outcome = {dict(lbl)["outcome"]: v for (n, lbl), v in samples.items() if n == "robustream_messages_total"}
    assert outcome == {"ok": len(labelled), "predict_only": len(unlabelled), "invalid": 0, "dead_letter": 0}
    members = d.daemon.model.classifiers.values()
    assert len(members) == 3
    rebuilds = samples[("robustream_rebuild_duration_seconds_count", ())]
    assert samples[("robustream_process_duration_seconds_count", ())] + rebuilds == total and rebuilds >= 1
    assert samples[("robustream_model_version", ())] == sum(m.n_rebuilds_ for m in members) > 0
    assert samples[("robustream_outliers_total", ())] == sum(bool(o.get("outlier")) for o in out.values())


def test_a_river_learner_model_version_gauge_counts_the_samples_learned(broker, tmp_path):
    # without rebuilds the version is the number of samples learned; the gauge used to stay at 0
    good = labelled_messages(60)
    produce(broker.bootstrap_servers, IN, good)
    argv = serve_args(broker.bootstrap_servers, tmp_path / "ckpt", "--learner", "river:LogisticRegression")
    for i in reversed([i for i, a in enumerate(argv) if a == "--param"]):  # drop the rgd parameters
        del argv[i : i + 2]
    with DaemonThread(argv) as d:
        d.wait_processed(len(good))
        text = scrape(d.daemon.metrics_port)
        assert d.stop() == 0
    samples = {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples if not s.labels}
    assert samples["robustream_samples_learned_total"] == samples["robustream_model_version"] == len(good)
    preds = read_topic(broker.bootstrap_servers, PREDS, expect=len(good))
    assert sorted(json.loads(r.value)["model_version"] for r in preds) == list(range(len(good)))


def test_client_settings_kafka_python_refuses_stop_serve_with_exit_2_not_a_retry_loop(broker, tmp_path):
    import subprocess
    import sys

    # (a setting serve does not check itself: kafka-python's check when it builds the clients names it)
    argv = serve_args(broker.bootstrap_servers, tmp_path / "ckpt", "--kafka-option", "client_dns_lookup=zzz")
    done = subprocess.run([sys.executable, "-m", "robustream.cli", *argv], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr[-2000:]
    expected = "robustream serve: error: kafka-python refuses the client settings: ValueError: client_dns_lookup must be"
    assert expected in done.stderr


def test_a_high_watermark_that_trails_for_a_while_does_not_make_the_daemon_reread_the_partition(broker, tmp_path):
    # a newly elected leader, or a follower read with client_rack, reports a high watermark behind the end
    # for a while; only a partition whose leader's end offset (ListOffsets) is behind too was re-created
    from robustream.daemon import service

    broker.create_topics({"in_hw": 1})
    produce(broker.bootstrap_servers, "in_hw", labelled_messages(300))
    with DaemonThread(serve_args(broker.bootstrap_servers, tmp_path / "ckpt", "--input-topic", "in_hw")) as d:
        d.wait_processed(300)
        # (the other half of the rule, the leader's end offset, cannot be tried here: tansu answers ListOffsets
        # with the last batch's first offset, below the end)
        real = d.daemon.consumer.highwater
        d.daemon.consumer.highwater = lambda tp: 250  # this member's fetches say the partition ends at 250
        time.sleep(min(10.0, service.PAST_END_SECONDS / 2))
        d.daemon.consumer.highwater = real  # the follower caught up
        time.sleep(1)
        assert d.daemon.n_processed == 300  # not read again from the beginning
        assert d.stop() == 0


def test_a_commit_refused_by_a_rebalance_at_stop_still_exits_0_with_the_offsets_in_the_checkpoint(broker, tmp_path,
                                                                                                 caplog):  # fmt: skip
    import logging

    from kafka.errors import RebalanceInProgressError

    broker.create_topics({"in_rb": 1})
    produce(broker.bootstrap_servers, "in_rb", labelled_messages(300))
    argv = serve_args(broker.bootstrap_servers, tmp_path / "ckpt", "--input-topic", "in_rb", "--checkpoint-every",
                      "100000", "--checkpoint-interval", "3600")  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="robustream.daemon"), DaemonThread(argv) as d:
        d.wait_processed(300)

        def refused(*args, **kwargs):  # what kafka-python raises when a stop meets a rolling deploy's rebalance
            raise RebalanceInProgressError("the group is rebalancing")

        d.daemon.consumer.commit = refused
        assert d.stop() == 0
    assert CheckpointStore(tmp_path / "ckpt").load_latest().offsets == {("in_rb", 0): 300}
    assert "the group refused its commit while rebalancing" in caplog.text


def test_a_revocation_commits_no_partition_this_member_gave_up_before(broker, tmp_path):
    # an earlier revocation whose flush failed left in_rv/0 in next_offsets; its new owner may have committed
    # past that offset since, so this member must not commit it when it gives up in_rv/1
    from kafka import TopicPartition

    broker.create_topics({"in_rv": 3})
    d = DaemonThread(serve_args(broker.bootstrap_servers, tmp_path / "ckpt", "--input-topic", "in_rv"))
    daemon = d.daemon
    assert daemon._connect()
    try:
        sent = []
        daemon.consumer.commit_async = lambda offsets: sent.append(offsets)
        # the group's answer, which a single member cannot get from tansu: in_rv/1 and /2 are still this member's
        daemon.consumer.assignment = lambda: {TopicPartition("in_rv", 1), TopicPartition("in_rv", 2)}
        daemon.next_offsets = {("in_rv", 0): 150, ("in_rv", 1): 115, ("in_rv", 2): 90}
        daemon._last_marks = {key: [0, 0] for key in daemon.next_offsets}
        daemon._since_checkpoint = 3
        daemon._on_revoked([TopicPartition("in_rv", 1)])
        assert [{tp.partition: om.offset for tp, om in offsets.items()} for offsets in sent] == [{1: 115, 2: 90}]
        assert daemon.next_offsets == {}
    finally:
        daemon.close()
