"""``robustream serve`` / ``robustream demo`` options.

Every ``serve`` flag can also come from the environment (``ROBUSTREAM_<FLAG>``, dashes as
underscores, e.g. ``ROBUSTREAM_BOOTSTRAP_SERVERS``) or from a TOML file given by ``--config``
(keys as the flag names, dashes or underscores). Precedence: command line > environment > file >
default. Repeated options (``--param``, ``--kafka-option``) take a comma-separated list in the
environment (commas inside brackets, braces or quotes do not separate: ``a=[1,2],b=3``) and a list or a
table in the file. A ``ROBUSTREAM_*`` variable that names no option is reported (logged as a warning).
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

try:
    from kafka.net.sasl import SASL_MECHANISMS
except ImportError:  # another kafka-python layout
    SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER", "AWS_MSK_IAM")

from ..learners.registry import parse_params, parse_value

ENV_PREFIX = "ROBUSTREAM_"

# (flag, type, default, help); type "list" = repeated option, "csv" = comma-separated values
SERVE_OPTIONS: tuple[tuple[str, str, Any, str], ...] = (
    ("bootstrap-servers", "str", "127.0.0.1:9092", "Kafka bootstrap servers, host:port[,host:port]"),
    ("input-topic", "str", "robustream-input", "topic with the input messages"),
    ("group-id", "str", "robustream", "consumer group id; daemons of one group share the partitions"),
    ("predictions-topic", "str", "robustream-predictions", "topic the predictions are produced to"),
    ("dead-letter-topic", "str", "robustream-dead-letters", "topic for messages that fail validation"),
    ("checkpoint-dir", "str", "./robustream-checkpoints", "directory of the checkpoints (model + offsets)"),
    ("checkpoint-every", "int", 1000, "checkpoint and commit after this many messages"),
    ("checkpoint-interval", "float", 30.0, "... or after this many seconds, whichever comes first"),
    ("checkpoint-keep", "int", 3, "checkpoints kept on disk (older ones are deleted)"),
    ("metrics-host", "str", "127.0.0.1", "bind address of the Prometheus endpoint"),
    ("metrics-port", "int", 9108, "port of the Prometheus endpoint (0: any free port)"),
    ("learner", "str", "rgd", "rgd, coreset, ramp, ordi or river:<Class> (e.g. river:LogisticRegression)"),
    ("param", "list", [], "learner parameter key=value (repeatable)"),
    ("max-features", "int", 10000, "messages with more features go to the dead-letter topic"),
    ("max-message-bytes", "int", 1_000_000, "larger messages go to the dead-letter topic"),
    ("labels", "csv", ["0", "1"], "allowed label values; with two, the second is the positive class"),
    ("accuracy-window", "int", 1000, "labelled messages in the prequential accuracy window"),
    ("poll-timeout-ms", "int", 500, "longest wait for a batch of messages"),
    ("max-poll-records", "int", 500, "largest batch of messages"),
    ("shutdown-timeout", "float", 20.0, "seconds allowed for a graceful stop after SIGTERM/SIGINT"),
    ("security-protocol", "str", "PLAINTEXT", "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"),
    ("sasl-mechanism", "str", None, "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, GSSAPI, OAUTHBEARER or AWS_MSK_IAM"),
    ("sasl-plain-username", "str", None, "SASL username"),
    ("sasl-plain-password", "str", None, "SASL password (prefer the environment variable "
                                         "ROBUSTREAM_SASL_PLAIN_PASSWORD: a command line is visible to other users)"),
    ("ssl-cafile", "str", None, "CA file for SSL"),
    ("ssl-certfile", "str", None, "client certificate for SSL"),
    ("ssl-keyfile", "str", None, "client key for SSL"),
    ("ssl-check-hostname", "bool", True, "check the broker's host name against its certificate"),
    ("kafka-option", "list", [], "any other kafka-python client setting key=value (repeatable)"),
    ("log-format", "str", "text", "text or json (one JSON object per line)"),
    ("log-level", "str", "INFO", "DEBUG, INFO, WARNING or ERROR"),
)

# text options that cannot be empty (an empty group id, for one, would commit nothing)
_NON_EMPTY = frozenset(f"--{flag}" for flag, kind, default, _ in SERVE_OPTIONS
                       if kind == "str" and default is not None and flag != "metrics-host")  # "": every interface

# options with a fixed set of values (compared in upper case, as kafka-python expects them)
_CHOICES = {
    "log-level": ("DEBUG", "INFO", "WARNING", "ERROR"),
    "security-protocol": ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
    "sasl-mechanism": tuple(SASL_MECHANISMS),  # what this kafka-python supports (AWS_MSK_IAM, ...)
}

# Client settings the daemon decides itself: --kafka-option may not set them.
DAEMON_OWNED_SETTINGS = {
    "bootstrap_servers": "set by --bootstrap-servers",
    "group_id": "set by --group-id",
    "max_poll_records": "set by --max-poll-records",
    "enable_auto_commit": "the daemon commits offsets itself, after each checkpoint (at-least-once)",
    "key_serializer": "the daemon writes the message keys and values as bytes",
    "value_serializer": "the daemon writes the message keys and values as bytes",
    "key_deserializer": "the daemon reads the message keys and values as bytes",
    "value_deserializer": "the daemon reads the message keys and values as bytes",
    "security_protocol": "set by --security-protocol",
    "sasl_mechanism": "set by --sasl-mechanism",
    "sasl_plain_username": "set by --sasl-plain-username",
    "sasl_plain_password": "set by --sasl-plain-password",
    "ssl_cafile": "set by --ssl-cafile",
    "ssl_certfile": "set by --ssl-certfile",
    "ssl_keyfile": "set by --ssl-keyfile",
    "ssl_check_hostname": "set by --ssl-check-hostname",
}


_SECURITY_KEYS = ("security-protocol", "sasl-mechanism", "sasl-plain-username", "sasl-plain-password",
                  "ssl-cafile", "ssl-certfile", "ssl-keyfile", "ssl-check-hostname")  # fmt: skip


def _dest(flag: str) -> str:
    return flag.replace("-", "_")


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """Add every serve flag with default ``None`` so that unset flags can be filled by env/file."""
    parser.description = ("Run the Kafka consumer daemon: predict every input message, learn from the labelled "
                          "ones, produce the predictions, checkpoint and commit, and serve Prometheus metrics.")
    parser.epilog = ("Every option can also come from the environment, ROBUSTREAM_<OPTION> with dashes as "
                     "underscores (e.g. ROBUSTREAM_BOOTSTRAP_SERVERS=broker:9092; repeated options as a "
                     "comma-separated list), or from the TOML file of --config (keys as the option names). "
                     "Precedence: command line > environment > file > default.")
    parser.add_argument("--config", help="TOML file with any of the options below")
    for flag, kind, default, text in SERVE_OPTIONS:
        shown = ",".join(default) if kind == "csv" else default  # --labels 0,1, as it is typed
        help_text = f"{text} (default: {shown})" if default not in (None, []) else text
        if kind == "list":
            parser.add_argument(f"--{flag}", action="append", default=None, metavar="KEY=VALUE", help=help_text)
        elif kind == "bool":
            parser.add_argument(f"--{flag}", type=_parse_bool, default=None, metavar="BOOL", help=help_text)
        else:
            parser.add_argument(f"--{flag}", default=None, help=help_text)


def add_demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("The whole service on this machine, no Kafka needed: start an embedded Kafka-compatible "
                          "broker (tansu) on a free loopback port, replay a data set with flipped labels into it, "
                          "serve it with the daemon, and show live prequential accuracy against the clean labels, "
                          "outlier rate and margin width; then shut everything down.")
    parser.add_argument("--dataset", default="mushrooms",
                        help="shared data set name or path, or 'synthetic' (default: mushrooms, 6000 shuffled rows)")
    parser.add_argument("--flip", type=float, default=0.15, help="share of flipped labels (default: 0.15)")
    parser.add_argument("--max-samples", type=int, default=6000, help="replay at most this many messages")
    parser.add_argument("--partitions", type=int, default=2, help="partitions of the input topic (default: 2)")
    parser.add_argument("--learner", default="rgd",
                        help="rgd, coreset, ramp, ordi or river:<Class> (default: rgd, with outlier_fraction=auto "
                             "unless a --param sets it: the demo's learner is not told the flip rate either)")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="learner parameter")
    parser.add_argument("--metrics-port", type=int, default=0, help="Prometheus port (default: any free port)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the split and the flips")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (log lines instead)")


def _parse_bool(text: str) -> bool:
    low = str(text).strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


@dataclass
class ServeConfig:
    """Resolved ``serve`` options (see :data:`SERVE_OPTIONS`); build with :func:`resolve`."""

    values: dict[str, Any] = field(default_factory=dict)
    # ROBUSTREAM_* environment variables that name no option (a typo), each with what it may have meant
    ignored_environment: list[str] = field(default_factory=list)
    # where each option not given on the command line came from: "environment ROBUSTREAM_X", "--config F"
    sources: dict[str, str] = field(default_factory=dict)

    def came_from(self, *dests: str) -> str:
        """`` (from environment ROBUSTREAM_LEARNER)``: where the named options came from, when not all
        from the command line or their defaults; for messages that name them as flags."""
        places = sorted({self.sources[d] for d in dests if d in self.sources})
        return f" (from {' and '.join(places)})" if places else ""

    def __getattr__(self, name: str) -> Any:
        try:
            return self.values[name]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def learner_params(self) -> dict[str, Any]:
        return parse_params(self.values["param"])

    @property
    def label_values(self) -> list[Any]:
        try:
            return [parse_value(v) for v in self.values["labels"]]
        except ValueError as exc:
            raise ValueError(f"--labels: {exc}") from None

    def kafka_settings(self) -> dict[str, Any]:
        """Settings passed to both KafkaConsumer and KafkaProducer (security + ``--kafka-option``)."""
        out = {_dest(k): self.values[_dest(k)] for k in _SECURITY_KEYS if self.values[_dest(k)] is not None}
        for item in self.values["kafka_option"]:
            key, sep, text = item.partition("=")
            key = key.strip()
            if not sep or not key:
                raise ValueError(f"--kafka-option {item!r}: expected key=value")
            if key in DAEMON_OWNED_SETTINGS:
                raise ValueError(f"--kafka-option {key}: not settable here ({DAEMON_OWNED_SETTINGS[key]})")
            out[key] = kafka_option_value(key, text)
        return out


def kafka_option_value(key: str, text: str) -> Any:
    """The value of ``--kafka-option key=text``, typed as kafka-python's default for ``key`` is.

    >>> [kafka_option_value(*option) for option in (("client_id", "123"), ("linger_ms", "5"), ("api_version", "2.5"))]
    ['123', 5, (2, 5)]
    """
    from kafka import KafkaConsumer, KafkaProducer

    defaults = {**KafkaProducer.DEFAULT_CONFIG, **KafkaConsumer.DEFAULT_CONFIG}
    if key not in defaults:
        raise ValueError(f"--kafka-option {key}: not a kafka-python client setting")
    default, text = defaults[key], text.strip()
    problem = None
    if key == "acks":
        value = "all" if text == "all" else parse_value(text)  # "all" or -1 (the daemon allows no other)
    elif key == "api_version":
        try:
            value = tuple(int(part) for part in text.split("."))
        except ValueError:
            value = ()
        if not 1 <= len(value) <= 3:
            problem = "expected a version such as 2.5 or 3.7.0"
    elif key in _INT_SETTINGS or (isinstance(default, (int, float)) and not isinstance(default, bool)):
        try:
            value = parse_value(text)
        except ValueError as exc:
            raise ValueError(f"--kafka-option {key}: {exc}") from None
        wanted = float if isinstance(default, float) else int
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (wanted is int and value != int(value)):
            problem = f"expected {'a number' if wanted is float else 'an integer'}, got {text!r}"
        else:
            value = wanted(value)
    elif isinstance(default, bool):
        value = parse_value(text)
        if not isinstance(value, bool):
            problem = f"expected true or false, got {text!r}"
    elif key == "compression_type":  # kafka-python refuses others (or a codec not installed) only at connect
        compressors = getattr(KafkaProducer, "_COMPRESSORS", {})
        value = None if text.lower() == "none" else text.lower()
        if compressors and value not in compressors:
            problem = f"expected one of {', '.join(sorted(str(k).lower() for k in compressors))}, got {text!r}"
        elif value is not None and compressors and not compressors[value][0]():
            problem = f"{value}: its Python library is not installed (pip install kafka-python[{value}])"
    elif key == "auto_offset_reset":
        value = text.lower()
        if value not in ("earliest", "latest"):  # kafka-python reads anything else as "none": no consuming
            problem = f"expected earliest or latest, got {text!r}"
    elif key not in _OBJECT_SETTINGS and (default is None or isinstance(default, str)):
        value = text  # names, paths, passwords: kept as written ("123" stays a string)
    else:
        problem = "takes a Python object, not settable from the command line"
    if problem:
        raise ValueError(f"--kafka-option {key}: {problem}")
    return value


# settings whose kafka-python default is None but that take integers, or Python objects
_INT_SETTINGS = frozenset({"receive_buffer_bytes", "send_buffer_bytes"})
_OBJECT_SETTINGS = frozenset({"ssl_context", "sasl_oauth_token_provider"})


def _check_toml_labels(raw: list, source: str) -> None:
    """TOML's labels keep their types: ``[0, 1]`` are numbers, ``["no", "yes"]`` text. Text that reads as
    a number or a boolean is refused, not guessed: ``["0", "1"]`` meant the numbers 0 and 1 in files
    written before (deploy/robustream.toml), so reading it either way would change someone's labels."""
    for v in raw:
        if not isinstance(v, str):
            continue
        try:
            value = parse_value(v.strip())
        except ValueError:
            continue
        if not isinstance(value, str) and value is not None:
            raise ValueError(f"--labels (from {source}): {v!r} is text that reads as the {type(value).__name__} "
                             f"{json.dumps(value)}: write {json.dumps(value)} (no quotes) for the "
                             f"{type(value).__name__}, or '\"{v}\"' for the text")  # fmt: skip


def _convert(flag: str, kind: str, raw: Any, source: str) -> Any:
    if flag == "--labels" and isinstance(raw, list):
        _check_toml_labels(raw, source)
    try:
        if raw is None:
            return None
        if isinstance(raw, bool) and kind in ("int", "float"):
            raise ValueError
        if kind == "int":
            if isinstance(raw, float) and not raw.is_integer():
                raise ValueError  # int() would truncate 1.9 from a TOML file to 1
            value = int(raw)
            if value < 0:
                raise ValueError
            return value
        if kind == "float":
            value = float(raw)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError
            return value
        if kind == "bool":
            return raw if isinstance(raw, bool) else _parse_bool(raw)
        if kind == "csv":
            items = raw if isinstance(raw, list) else str(raw).split(",")
            items = [_toml_text(v).strip() for v in items]  # (TOML labels: checked by _check_toml_labels)
            if not items or any(not v for v in items):
                raise ValueError
            return items
        if kind == "list":
            if isinstance(raw, dict):  # a TOML table: its values are typed already, JSON keeps their types
                # (a client setting's text is taken as written: client_id = "my-app" is my-app, not "my-app")
                return [f"{k}={v}" if flag == "--kafka-option" and isinstance(v, str)
                        else f"{k}={json.dumps(v, allow_nan=False)}" for k, v in raw.items()]
            if isinstance(raw, str):
                return [v.strip() for v in split_items(raw) if v.strip()]
            return [str(v) for v in raw]
        if isinstance(raw, list) and flag == "--bootstrap-servers":
            raw = ",".join(str(v).strip() for v in raw)  # a TOML array of host:port
        if isinstance(raw, (list, dict)):
            raise ValueError
        if not str(raw).strip() and flag in _NON_EMPTY:
            raise ValueError
        return str(raw)
    except (ValueError, TypeError, argparse.ArgumentTypeError):
        expected = {"int": "a non-negative integer", "float": "a finite non-negative number", "bool": "true or false",
                    "csv": "comma-separated non-empty values", "str": "a non-empty string"}  # fmt: skip
        expected = expected.get(kind, "a value")
        raise ValueError(f"{flag} (from {source}): expected {expected}, got {raw!r}") from None


def split_items(text: str) -> list[str]:
    """``text`` split at the commas outside brackets, braces and quotes: the environment's form of a
    repeated option keeps a list or object value whole.

    >>> split_items('a=1, b=["x","y"], c={"k": [1, 2]}, d="p,q"')
    ['a=1', ' b=["x","y"]', ' c={"k": [1, 2]}', ' d="p,q"']
    >>> split_items("name=O'Brien,x=1")
    ["name=O'Brien", 'x=1']
    """
    items, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    if quote or depth:  # a quote or bracket left open (an apostrophe in a name): plain commas
        return text.split(",")
    return [*items, text[start:]]


def _toml_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def resolve(args: argparse.Namespace, environ: dict[str, str] | None = None) -> ServeConfig:
    """Merge command line, environment and ``--config`` file; raises ValueError naming the option."""
    environ = os.environ if environ is None else environ
    file_values: dict[str, Any] = {}
    config_path = getattr(args, "config", None) or environ.get(ENV_PREFIX + "CONFIG")
    if config_path:
        try:
            with open(config_path, "rb") as fh:
                raw = tomllib.load(fh)
        except OSError as exc:
            raise ValueError(f"--config {config_path}: cannot read ({exc.strerror})") from None
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"--config {config_path}: not valid TOML ({exc})") from None
        known = {_dest(flag) for flag, *_ in SERVE_OPTIONS}
        written_as: dict[str, str] = {}
        for key, value in raw.items():
            if _dest(key) not in known:
                raise ValueError(f"--config {config_path}: unknown option {key!r}")
            if _dest(key) in written_as:  # metrics-port and metrics_port: one option, which would win silently
                raise ValueError(f"--config {config_path}: {written_as[_dest(key)]!r} and {key!r} set the same option")
            written_as[_dest(key)] = key
            file_values[_dest(key)] = value
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    ignored = _unknown_environment(environ)
    for flag, kind, default, _ in SERVE_OPTIONS:
        dest = _dest(flag)
        env_name = ENV_PREFIX + dest.upper()
        cli = getattr(args, dest, None)
        if cli is not None:
            values[dest] = _convert(f"--{flag}", kind, cli, "command line")
        elif env_name in environ:
            sources[dest] = f"environment {env_name}"
            values[dest] = _convert(f"--{flag}", kind, environ[env_name], sources[dest])
        elif dest in file_values:
            sources[dest] = f"--config {config_path}"
            values[dest] = _convert(f"--{flag}", kind, file_values[dest], sources[dest])
        else:
            values[dest] = default
    values["log_format"] = values["log_format"].lower()
    if values["log_format"] not in ("text", "json"):
        raise ValueError(f"--log-format: expected text or json, got {values['log_format']!r}")
    check_topics(values)
    for flag, allowed in _CHOICES.items():
        dest = _dest(flag)
        if values[dest] is not None:
            values[dest] = values[dest].upper()
            if values[dest] not in allowed:
                raise ValueError(f"--{flag}: expected one of {', '.join(allowed)}, got {values[dest]!r}")
    for flag in ("checkpoint-every", "checkpoint-keep", "accuracy-window", "max-poll-records", "max-features",
                 "max-message-bytes", "poll-timeout-ms"):  # fmt: skip
        if values[_dest(flag)] < 1:  # 0 would send every message to the dead letters, or spin on polls
            raise ValueError(f"--{flag}: must be at least 1, got {values[_dest(flag)]}")
    if not 2 <= values["shutdown_timeout"] <= MAX_SHUTDOWN_TIMEOUT:  # the final flush and checkpoint get half
        raise ValueError(f"--shutdown-timeout: must be 2 to {MAX_SHUTDOWN_TIMEOUT} seconds, got "
                         f"{values['shutdown_timeout']}")  # fmt: skip
    if values["poll_timeout_ms"] > 500 * values["shutdown_timeout"]:  # a stop waits for the poll in progress
        raise ValueError(f"--poll-timeout-ms: must be at most half of --shutdown-timeout "
                         f"({values['shutdown_timeout']:g} s), got {values['poll_timeout_ms']}")  # fmt: skip
    check_bootstrap_servers(values["bootstrap_servers"])
    _check_security(values)
    if values["metrics_port"] > 65535:
        raise ValueError(f"--metrics-port: expected a port number 0-65535, got {values['metrics_port']}")
    cfg = ServeConfig(values, ignored, sources)
    check_labels(cfg.label_values, values["labels"])
    cfg.learner_params  # noqa: B018 - validate key=value now
    cfg.kafka_settings()
    return cfg


# ROBUSTREAM_* variables read elsewhere (the data sets' folder, the broker binary, the rebuild worker)
OTHER_ENVIRONMENT = frozenset({"CONFIG", "DATASETS", "TANSU", "WORKER_SYS_PATH"})


def _unknown_environment(environ) -> list[str]:
    """``ROBUSTREAM_*`` variables that name no option, each said with the option it may have meant."""
    names = [_dest(flag).upper() for flag, *_ in SERVE_OPTIONS] + sorted(OTHER_ENVIRONMENT)
    out = []
    for var in sorted(environ):
        if var.startswith(ENV_PREFIX) and var[len(ENV_PREFIX):] not in names:
            near = difflib.get_close_matches(var[len(ENV_PREFIX):], names, n=1)
            out.append(f"{var}: no such option" + (f" (did you mean {ENV_PREFIX}{near[0]}?)" if near else ""))
    return out


_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")


def is_topic_name(name: str) -> bool:
    """Kafka's rule for topic names (kafka-python refuses others when it first sends to one)."""
    return bool(_TOPIC.fullmatch(name)) and name not in (".", "..")


def check_topics(values: dict[str, Any]) -> None:
    """Topic names Kafka accepts, and outputs that do not go back to the input topic (a dead letter
    read back as input is dead-lettered again, without end); ValueError naming the option.

    >>> check_topics({"input_topic": "in", "predictions_topic": "out", "dead_letter_topic": "dead letters"})
    Traceback (most recent call last):
    ...
    ValueError: --dead-letter-topic: 'dead letters' is not a Kafka topic name (1-249 of a-z, A-Z, 0-9, '.', '_', '-'; not '.' or '..')
    """
    for flag in ("input-topic", "predictions-topic", "dead-letter-topic"):
        name = values[_dest(flag)]
        if not is_topic_name(name):
            raise ValueError(f"--{flag}: {name!r} is not a Kafka topic name (1-249 of a-z, A-Z, 0-9, '.', '_', '-'; "
                             "not '.' or '..')")
    for flag in ("predictions-topic", "dead-letter-topic"):
        if values[_dest(flag)] == values["input_topic"]:
            raise ValueError(f"--{flag}: {values['input_topic']!r} is also --input-topic: the daemon would read its "
                             "own output back as input")


MAX_SHUTDOWN_TIMEOUT = 86400  # the stop's watchdog timer takes no more than threading.TIMEOUT_MAX


def check_bootstrap_servers(text: str) -> None:
    """``host[:port]`` entries separated by commas (an IPv6 address with a port in brackets), each port
    1-65535; ValueError naming ``--bootstrap-servers`` otherwise.

    >>> check_bootstrap_servers("broker-1:9092,[::1]:9093,broker-2")
    >>> check_bootstrap_servers("127.0.0.1:99999")
    Traceback (most recent call last):
    ...
    ValueError: --bootstrap-servers: '127.0.0.1:99999': the port must be 1-65535
    """
    for entry in text.split(","):
        entry = entry.strip()
        if entry.startswith("["):
            host, _, rest = entry[1:].partition("]")
            port = rest[1:] if rest.startswith(":") else None
        elif entry.count(":") == 1:
            host, port = entry.split(":")
        else:  # a name, or an IPv6 address without a port
            host, port = entry, None
        if not host:
            raise ValueError(f"--bootstrap-servers: {entry!r} in {text!r}: expected host:port")
        if port is not None and not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
            raise ValueError(f"--bootstrap-servers: {entry!r}: the port must be 1-65535")


def _check_security(values: dict[str, Any]) -> None:
    """Settings kafka-python would take and then fail with at every connection (a retry loop that
    looks like a broker outage): SASL without its mechanism or credentials, unreadable SSL files."""
    protocol, mechanism = values["security_protocol"], values["sasl_mechanism"]
    if protocol.startswith("SASL") and mechanism is None:
        raise ValueError(f"--sasl-mechanism: required with --security-protocol {protocol}")
    if protocol.startswith("SASL") and mechanism is not None and (mechanism == "PLAIN" or mechanism.startswith("SCRAM")):
        for flag in ("sasl-plain-username", "sasl-plain-password"):
            if values[_dest(flag)] is None:
                raise ValueError(f"--{flag}: required with --sasl-mechanism {mechanism}")
    for flag in ("ssl-cafile", "ssl-certfile", "ssl-keyfile"):
        path = values[_dest(flag)]
        if path is not None:
            try:
                with open(path, "rb"):
                    pass
            except OSError as exc:
                raise ValueError(f"--{flag} {path}: cannot read ({exc.strerror or exc})") from None


def check_labels(labels: list[Any], texts: list[str] | None = None) -> None:
    """``--labels`` must name at least two different classes: no null or NaN, no two values that are
    equal once parsed (``1``, ``1.0`` and ``true`` are one label to a learner)."""
    shown = texts if texts is not None else labels
    if len(labels) < 2:
        raise ValueError(f"--labels: need at least two label values, got {shown!r}")
    for text, value in zip(shown, labels):
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            raise ValueError(f"--labels: {text!r} cannot be a label (a null label means: unlabelled)")
        if not isinstance(value, (str, int, float)):
            raise ValueError(f"--labels: {text!r} is not a string, number or boolean")
    for i, a in enumerate(labels):
        for b in labels[:i]:
            if a == b:
                raise ValueError(f"--labels: {shown[labels.index(b)]!r} and {shown[i]!r} are the same label")
