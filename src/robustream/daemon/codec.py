"""Input validation and output records of the daemon (message schema: DESIGN.md §5).

Input: ``{"id": str | int, "x": {feature: number, ...}, "y": label | null, "ts": optional}``.
Every way a message can be wrong raises :class:`InvalidMessage` with a reason that names the
field and the problem; the daemon sends it to the dead-letter topic with that reason.

>>> labels = LabelSpace([0, 1])
>>> decode_message(b'{"id": "a", "x": {"f": 1.5}, "y": 1}', labels=labels)
Message(id='a', x={'f': 1.5}, y=1, ts=None)
>>> decode_message(b'{"id": "a", "x": {"f": "big"}}', labels=labels)
Traceback (most recent call last):
...
robustream.daemon.codec.InvalidMessage: field 'x.f': expected a number, got a string
"""

from __future__ import annotations

import base64
import json
import math
from json.encoder import encode_basestring_ascii
from typing import Any, NamedTuple

from ..validation import finite_floats

DEAD_LETTER_RAW_LIMIT = 65536  # bytes of the original message copied into a dead letter
DEAD_LETTER_ERROR_LIMIT = 1000  # characters of a dead letter's reason (it may quote a key or a label)
MAX_ID_CHARS = 10_000  # an id is copied into the output record, which must stay well under 1 MiB escaped


class InvalidMessage(ValueError):
    """The message cannot be decoded or validated; ``str(exc)`` is the reason."""


class Message(NamedTuple):
    id: str | int
    x: dict[str, float]
    y: Any
    ts: Any


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    return "a number"


class LabelSpace:
    """The allowed labels (``--labels``); with two, the second is the positive class.

    >>> space = LabelSpace(["ham", "spam"])
    >>> space.to_internal("spam"), space.to_external(False)
    (True, 'ham')
    """

    def __init__(self, values: list[Any]):
        if len(values) < 2:
            raise ValueError(f"--labels: need at least two label values, got {values!r}")
        self.values = list(values)
        self.binary = len(values) == 2
        # (is a bool, is a string, value) -> allowed label: one dict look-up per message in find()
        self._by_kind = {(isinstance(v, bool), isinstance(v, str), v): v for v in reversed(self.values)}

    def find(self, y: Any) -> Any:
        """The allowed label equal to ``y`` (booleans only match booleans); raises InvalidMessage."""
        try:
            return self._by_kind[(isinstance(y, bool), isinstance(y, str), y)]
        except (KeyError, TypeError):  # not allowed, or unhashable: the loop below names the problem
            pass
        for v in self.values:
            if isinstance(v, bool) != isinstance(y, bool):
                continue
            if isinstance(v, str) != isinstance(y, str):
                continue
            if v == y:
                return v
        allowed = ", ".join(json.dumps(v) for v in self.values)
        raise InvalidMessage(f"field 'y': label {json.dumps(y)} is not one of {allowed} (--labels)")

    def to_internal(self, label: Any) -> Any:
        """What the learner sees: a bool for two labels (True = the second), else the label."""
        return label == self.values[1] if self.binary else label

    def to_external(self, pred: Any) -> Any:
        if pred is None:
            return None
        if self.binary:
            return self.values[1] if pred else self.values[0]
        return pred

    def __repr__(self) -> str:
        return f"LabelSpace({self.values!r})"


def _reject_constant(name: str) -> float:
    raise InvalidMessage(f"{name} is not a finite number")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # JSON readers disagree on a repeated name (RFC 8259 leaves it open): {"y": 1, "y": null} would be
    # read here as unlabelled, elsewhere as labelled
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        repeated = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise InvalidMessage(f"the name {repeated!r} appears twice in one object")
    return obj


# built once: json.loads(text, parse_constant=...) would build a decoder and its scanner per message
_JSON_DECODER = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_unique_keys)


def decode_message(
    raw: bytes | None, *, labels: LabelSpace, max_bytes: int = 1_000_000, max_features: int = 10_000
) -> Message:
    """Decode and validate one input message; raises :class:`InvalidMessage`."""
    if raw is None:
        raise InvalidMessage("empty message (null value)")
    if len(raw) > max_bytes:
        raise InvalidMessage(f"message is {len(raw)} bytes, more than --max-message-bytes {max_bytes}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidMessage(f"not valid UTF-8 (byte {exc.start}: {exc.reason})") from None
    try:
        if text.startswith("\ufeff"):  # what json.loads says about a byte-order mark
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        doc = _JSON_DECODER.decode(text)
    except InvalidMessage as exc:
        raise InvalidMessage(f"not valid JSON: {exc}") from None
    except json.JSONDecodeError as exc:
        raise InvalidMessage(f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise InvalidMessage("not valid JSON (nested too deeply)") from None
    except ValueError as exc:  # e.g. an integer literal longer than Python's int-digit limit
        reason = str(exc).split("; use sys.set_int_max_str_digits()")[0]  # advice for Python code, not producers
        raise InvalidMessage(f"not valid JSON ({reason})") from None
    if not isinstance(doc, dict):
        raise InvalidMessage(f"message is {_json_type(doc)}, expected a JSON object")
    if "id" not in doc:
        raise InvalidMessage("field 'id': missing")
    msg_id = doc["id"]
    if isinstance(msg_id, bool) or not isinstance(msg_id, (str, int)):
        raise InvalidMessage(f"field 'id': expected a string or an integer, got {_json_type(msg_id)}")
    if isinstance(msg_id, str) and len(msg_id) > MAX_ID_CHARS:
        raise InvalidMessage(f"field 'id': {len(msg_id)} characters, more than {MAX_ID_CHARS}")
    if "x" not in doc:
        raise InvalidMessage("field 'x': missing")
    x_doc = doc["x"]
    if not isinstance(x_doc, dict):
        raise InvalidMessage(f"field 'x': expected an object of feature: number, got {_json_type(x_doc)}")
    if len(x_doc) > max_features:
        raise InvalidMessage(f"field 'x': {len(x_doc)} features, more than --max-features {max_features}")
    values = x_doc.values()
    if finite_floats(values):
        return _finish(doc, msg_id, x_doc, labels)  # the common case, checked in two C-speed passes
    x: dict[str, float] = {}
    for key, value in x_doc.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidMessage(f"field 'x.{key}': expected a number, got {_json_type(value)}")
        try:
            value = float(value)
        except OverflowError:
            raise InvalidMessage(f"field 'x.{key}': integer too large for a float") from None
        if not math.isfinite(value):
            raise InvalidMessage(f"field 'x.{key}': {value} is not a finite number")
        x[key] = value
    return _finish(doc, msg_id, x, labels)


def _finish(doc: dict, msg_id: str | int, x: dict[str, float], labels: LabelSpace) -> Message:
    y = doc.get("y")
    if y is not None:
        if isinstance(y, (list, dict)):
            raise InvalidMessage(f"field 'y': expected a label, got {_json_type(y)}")
        y = labels.find(y)
    ts = doc.get("ts")
    if ts is not None and (isinstance(ts, (bool, list, dict))):
        raise InvalidMessage(f"field 'ts': expected a number or a string, got {_json_type(ts)}")
    if isinstance(ts, float) and not math.isfinite(ts):  # 1e999 parses as inf (NaN and Infinity are refused above)
        raise InvalidMessage(f"field 'ts': {ts} is not a finite number")
    return Message(msg_id, x, y, ts)


_JSON_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def encode_json(record: dict) -> bytes:
    """Compact JSON (no NaN; non-ASCII escaped, so lone surrogates from the input cannot break it)."""
    return _JSON_ENCODER.encode(record).encode("ascii")


def _finite_float_json(v: float) -> str:
    if v - v != 0.0:  # inf - inf and nan - nan are nan
        raise ValueError(f"Out of range float values are not JSON compliant: {v!r}")
    return float.__repr__(v)


# exact type -> JSON text of a scalar, as json.dumps writes it (ensure_ascii, float repr, no NaN)
_SCALAR_JSON = {
    str: encode_basestring_ascii,
    int: int.__repr__,
    float: _finite_float_json,
    bool: {True: "true", False: "false"}.__getitem__,
    type(None): lambda _: "null",
}
UNLABELLED = object()  # encode_prediction(outlier=UNLABELLED): the record has no "outlier" field


def encode_prediction(
    msg_id: str | int, y_pred: Any, proba: float | None, margin: float | None, model_version: int,
    outlier: bool | None | object = UNLABELLED,
) -> bytes:  # fmt: skip
    """The prediction record (DESIGN.md §5): the same bytes as :func:`encode_json` of
    ``{"id", "y_pred", "proba", "margin", "model_version"[, "outlier"]}``, written field by field.

    >>> encode_prediction("a", 1, 0.75, -0.5, 3, outlier=False)
    b'{"id":"a","y_pred":1,"proba":0.75,"margin":-0.5,"model_version":3,"outlier":false}'
    """
    j = _SCALAR_JSON
    try:
        text = (f'{{"id":{j[type(msg_id)](msg_id)},"y_pred":{j[type(y_pred)](y_pred)},'
                f'"proba":{j[type(proba)](proba)},"margin":{j[type(margin)](margin)},'
                f'"model_version":{j[type(model_version)](model_version)}')  # fmt: skip
        if outlier is not UNLABELLED:
            text += f',"outlier":{j[type(outlier)](outlier)}'
    except KeyError:  # not a plain JSON scalar (a NumPy number, a tuple, ...): the general encoder decides
        record = {"id": msg_id, "y_pred": y_pred, "proba": proba, "margin": margin, "model_version": model_version}
        if outlier is not UNLABELLED:
            record["outlier"] = outlier
        return encode_json(record)
    return (text + "}").encode("ascii")


def dead_letter(raw: bytes | None, *, error: str, topic: str, partition: int, offset: int) -> dict:
    """The dead-letter record: the reason, where the message was, and the message itself.

    ``raw`` is the original text when it is UTF-8, else ``raw_base64``; beyond
    ``DEAD_LETTER_RAW_LIMIT`` bytes it is cut (``raw_truncated``) — the original stays at
    ``partition``/``offset`` of the input topic. A reason beyond ``DEAD_LETTER_ERROR_LIMIT``
    characters is cut too (it may quote a huge key).
    """
    if len(error) > DEAD_LETTER_ERROR_LIMIT:
        error = f"{error[:DEAD_LETTER_ERROR_LIMIT]}... ({len(error)} characters)"
    record: dict[str, Any] = {"error": error, "topic": topic, "partition": partition, "offset": offset}
    data = raw or b""
    truncated = len(data) > DEAD_LETTER_RAW_LIMIT
    data = data[:DEAD_LETTER_RAW_LIMIT]
    text = None
    if raw is not None:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            if truncated and exc.reason == "unexpected end of data":  # the cut fell inside a character
                text = data[: exc.start].decode("utf-8")
    record["raw"] = text
    if raw is not None and text is None:
        record["raw_base64"] = base64.b64encode(data).decode("ascii")
    if truncated:
        record["raw_truncated"] = True
    return record
