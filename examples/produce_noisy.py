"""Send a data set with flipped labels to a Kafka topic, as input for ``robustream serve``.

    python examples/produce_noisy.py --bootstrap-servers 127.0.0.1:9092 --topic robustream-input \
        --dataset mushrooms --flip 0.15 --max-samples 5000 [--noise adversarial]

Each message is ``{"id": "<row>", "x": {"f<j>": value, ...}, "y": 0 or 1}`` (keyed by id); the
clean labels are written to ``--clean-labels`` (JSON: id -> label) if given, so that a consumer of
the predictions topic can score the daemon against them (see read_predictions.py).
"""

import argparse
import json
import os
import sys

from kafka import KafkaProducer
from kafka.errors import KafkaError

from robustream.daemon import dataset_messages, send_messages


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-servers", default="127.0.0.1:9092")
    parser.add_argument("--topic", default="robustream-input")
    parser.add_argument("--dataset", default="mushrooms", help="shared data set name or path, or 'synthetic'")
    parser.add_argument("--flip", type=float, default=0.15, help="share of labels flipped (default 0.15)")
    parser.add_argument("--noise", choices=["uniform", "adversarial"], default="uniform",
                        help="uniform flips, or adversarial: the positives farthest on the correct side of a clean "
                             "reference boundary (default uniform)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-samples", type=int, default=None)
    parser.add_argument("--clean-labels", help="write id -> clean label (JSON) to this file")
    args = parser.parse_args()
    try:  # opened first: the clean labels must not be lost after every message was sent
        clean_file = open(args.clean_labels, "w") if args.clean_labels else None
    except OSError as exc:
        parser.error(f"--clean-labels {args.clean_labels}: cannot write ({exc.strerror})")
    try:
        messages = dataset_messages(args.dataset, flip=args.flip, seed=args.seed, max_samples=args.max_samples,
                                    noise=args.noise)
        producer = KafkaProducer(bootstrap_servers=args.bootstrap_servers.split(","), acks="all", linger_ms=20)
        clean = send_messages(producer, args.topic, messages)
        producer.close()
    except (ValueError, OSError, KafkaError) as exc:
        if clean_file is not None:  # labels of messages that were not (all) sent
            clean_file.close()
            os.remove(args.clean_labels)
        if isinstance(exc, KafkaError):
            print(f"produce_noisy: error: cannot reach the brokers {args.bootstrap_servers} ({exc})", file=sys.stderr)
            return 1
        print(f"produce_noisy: error: {exc}", file=sys.stderr)
        return 2
    if clean_file is not None:
        with clean_file:
            json.dump(clean, clean_file)
    print(f"sent {len(clean)} messages to {args.topic} ({args.flip:.0%} of the labels flipped, {args.noise})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
