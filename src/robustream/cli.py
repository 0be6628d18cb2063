"""The ``robustream`` command: ``serve`` (Kafka daemon), ``demo`` (embedded broker + replay + daemon)
and ``replay`` (prequential replay of a dataset with label noise)."""

from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    from .daemon.config import add_demo_arguments, add_serve_arguments

    parser = argparse.ArgumentParser(
        prog="robustream",
        description="Online classification that stays accurate when labels are wrong: the Kafka daemon (serve), "
        "a self-contained demo (demo) and noisy replays of a data set (replay).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="{serve,demo,replay}")
    add_serve_arguments(sub.add_parser("serve", help="run the Kafka consumer daemon"))
    add_demo_arguments(sub.add_parser("demo", help="embedded broker + noisy replay + daemon, with live metrics"))
    try:
        from .replay import add_arguments as add_replay_arguments
    except ImportError:  # pragma: no cover - replay lands with its own module
        add_replay_arguments = None
    if add_replay_arguments is not None:
        add_replay_arguments(sub.add_parser("replay", help="replay a dataset with flipped labels through a learner"))
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "serve":
        from .daemon.service import run_serve

        return run_serve(args, parser)
    if args.command == "demo":
        from .daemon.demo import run_demo

        return run_demo(args)
    from .replay import run as run_replay

    return run_replay(args)


if __name__ == "__main__":
    sys.exit(main())
