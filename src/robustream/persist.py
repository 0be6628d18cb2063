"""Versioned, checksummed model files (JSON; no pickle is ever loaded from disk).

Layout: ``{"format": "robustream-model", "version": 1, "sha256": <hex of payload>, "payload": {...}}``
where the checksum covers the canonical JSON text of the payload (sorted keys, no spaces). Floats
round-trip exactly (JSON numbers are written with ``repr``). Writes are atomic: temp file + rename.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

FORMAT = "robustream-model"
VERSION = 1


class CorruptModelError(ValueError):
    """The file is not a robustream model, has an unknown version, or fails its checksum."""


def _canonical(payload: Any) -> bytes:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("utf-8")


def dump(payload: dict, path: str | os.PathLike, format_name: str = FORMAT) -> None:
    """Write ``payload`` (JSON-able) atomically with its checksum; ``format_name`` tells what the file holds."""
    body = _canonical(payload)
    # = _canonical(doc), around the payload text already written (json.dump would encode it again,
    # in pure Python: ~10x slower than json.dumps)
    doc = b'{"format":%s,"payload":%s,"sha256":"%s","version":%d}' % (
        _canonical(format_name), body, hashlib.sha256(body).hexdigest().encode("ascii"), VERSION
    )
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(doc)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load(path: str | os.PathLike, format_name: str = FORMAT) -> dict:
    """Read and verify a file written by :func:`dump`; raises :class:`CorruptModelError`."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptModelError(f"{path}: not a {format_name} file ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != format_name:
        raise CorruptModelError(f"{path}: not a {format_name} file (format field missing or wrong)")
    if doc.get("version") != VERSION:
        raise CorruptModelError(f"{path}: unsupported model file version {doc.get('version')!r} (expected {VERSION})")
    if hashlib.sha256(_canonical(doc.get("payload"))).hexdigest() != doc.get("sha256"):
        raise CorruptModelError(f"{path}: checksum mismatch (the file is corrupt or was edited)")
    return doc["payload"]
