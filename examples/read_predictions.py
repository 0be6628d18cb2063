"""Read the daemon's predictions topic and, with the clean labels, score it.

    python examples/read_predictions.py --bootstrap-servers 127.0.0.1:9092 \
        --topic robustream-predictions --clean-labels clean.json

Prints the first ``--show N`` predictions, how many there are, and, with ``--clean-labels`` from
produce_noisy.py, the accuracy against the clean labels. Reads from the beginning, without a
consumer group.
"""

import argparse
import json
import sys

from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaError


def main() -> int:
    try:
        return read()
    except KafkaError as exc:
        print(f"read_predictions: error: cannot reach the brokers ({exc})", file=sys.stderr)
        return 1


def read() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-servers", default="127.0.0.1:9092")
    parser.add_argument("--topic", default="robustream-predictions")
    parser.add_argument("--clean-labels", help="JSON id -> clean label written by produce_noisy.py")
    parser.add_argument("--show", type=int, default=5, help="print the first N predictions")
    parser.add_argument("--idle-seconds", type=float, default=3.0, help="stop after this long without a message")
    args = parser.parse_args()
    clean = {}
    if args.clean_labels:
        try:
            with open(args.clean_labels) as fh:
                clean = json.load(fh)
        except (OSError, ValueError) as exc:
            parser.error(f"--clean-labels {args.clean_labels}: cannot read ({exc})")
    consumer = KafkaConsumer(bootstrap_servers=args.bootstrap_servers.split(","), enable_auto_commit=False,
                             consumer_timeout_ms=int(args.idle_seconds * 1000))
    partitions = consumer.partitions_for_topic(args.topic)
    if not partitions:
        print(f"read_predictions: error: topic {args.topic!r} does not exist", file=sys.stderr)
        return 2
    tps = [TopicPartition(args.topic, p) for p in sorted(partitions)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    n = correct = scored = 0
    for record in consumer:
        out = json.loads(record.value)
        if n < args.show:
            print(out)
        n += 1
        if str(out["id"]) in clean:
            scored += 1
            correct += out["y_pred"] == clean[str(out["id"])]
    consumer.close()
    print(f"{n} predictions read from {args.topic}")
    if scored:
        print(f"accuracy against the clean labels: {correct / scored:.4f} ({scored} scored)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
