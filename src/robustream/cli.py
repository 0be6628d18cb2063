"""The ``robustream`` command: ``serve`` (Kafka daemon), ``demo`` (embedded broker + replay + daemon),
``replay`` (prequential replay of a dataset with label noise) and ``broker`` (the embedded broker alone)."""

from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    from .daemon.config import add_demo_arguments, add_serve_arguments
    from .daemon.embedded import add_broker_arguments

    parser = argparse.ArgumentParser(
        prog="robustream",
        description="Online classification that stays accurate when labels are wrong: the Kafka daemon (serve), "
        "a self-contained demo (demo), noisy replays of a data set (replay) and a local broker to try serve "
        "against (broker).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{serve,demo,replay,broker}")
    add_serve_arguments(sub.add_parser("serve", help="run the Kafka consumer daemon"))
    add_demo_arguments(sub.add_parser("demo", help="embedded broker + noisy replay + daemon, with live metrics"))
    try:
        from .replay import add_arguments as add_replay_arguments
    except ImportError:  # pragma: no cover - replay lands with its own module
        add_replay_arguments = None
    if add_replay_arguments is not None:
        add_replay_arguments(sub.add_parser("replay", help="replay a dataset with flipped labels through a learner"))
    add_broker_arguments(sub.add_parser("broker", help="run the embedded broker (tansu) alone, to try serve against"))
    parser.set_defaults(_commands=sub.choices)
    return parser


def _version() -> str:
    from . import __version__

    return __version__


def _joined_negative_labels(argv: list[str]) -> list[str]:
    """``--labels -1,1`` as ``--labels=-1,1``: argparse reads a value that starts with a dash and is
    not a plain number as an option, and -1/+1 is the LIBSVM label convention."""
    out: list[str] = []
    for arg in argv:
        if out and out[-1] == "--labels" and arg[:1] == "-" and arg[1:2].isdigit():
            out[-1] = f"--labels={arg}"
        else:
            out.append(arg)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = _joined_negative_labels(sys.argv[1:] if argv is None else list(argv))
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        after = argv[argv.index(args.command) + 1 :] if args.command in argv else []
        if all(u in after for u in unknown):  # the subcommand's: name it, with its usage
            args._commands[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command == "serve":
        from .daemon.service import run_serve

        return run_serve(args, parser)
    if args.command == "demo":
        from .daemon.demo import run_demo

        return run_demo(args)
    if args.command == "broker":
        from .daemon.embedded import run_broker

        return run_broker(args)
    from .replay import run as run_replay

    return run_replay(args)


if __name__ == "__main__":
    sys.exit(main())
