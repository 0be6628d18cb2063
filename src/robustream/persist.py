"""Versioned, checksummed model files (JSON; no pickle is ever loaded from disk).

Layout: ``{"format": "robustream-model", "version": 2, "sha256": <hex of payload>, "payload": {...}}``
where the checksum covers the canonical JSON text of the payload (sorted keys, no spaces). Floats
round-trip exactly (JSON numbers are written with ``repr``). Writes are atomic: temp file + rename.

The checksum detects damage (a torn write, a flipped bit, a hand edit that forgot it), not a
deliberate forgery: whoever can write the file can recompute it. Loading reads JSON data only, so a
forged file can give a wrong model but cannot run code; protect the files as you protect the model.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

FORMAT = "robustream-model"
VERSION = 1  # the version of every format not in FORMAT_VERSIONS
# a format whose payload changed: (the version written, the versions read). Model files are version 2
# since their buffered rows are one table with base64 float blocks; an older robustream refuses them
# by their version (UnsupportedVersionError) instead of misreading the rows.
FORMAT_VERSIONS: dict[str, tuple[int, tuple[int, ...]]] = {FORMAT: (2, (1, 2))}
MODEL_STATE_FORMAT = "robustream-model-state"  # robustream.save_model's files (robustream.daemon.state)
# what reads a file of each format, named when a file of one is given to the reader of another
READERS = {FORMAT: "the learner class's load()", MODEL_STATE_FORMAT: "robustream.load_model"}


def format_version(format_name: str) -> int:
    """The version :func:`dump` writes files of ``format_name`` in."""
    return FORMAT_VERSIONS.get(format_name, (VERSION, (VERSION,)))[0]


class CorruptModelError(ValueError):
    """The file is not a robustream model, has an unknown version, or fails its checksum."""


class WrongFormatError(CorruptModelError):
    """The file is not of the format asked for (another robustream format, or not one at all)."""


class UnsupportedVersionError(CorruptModelError):
    """The file is intact but written in a later version of the format than this robustream reads."""


# longest part of the target's name in its temp file's: the temp name must stay a valid file name
_TEMP_STEM = 100


def _plain_number(value: Any) -> Any:
    """A NumPy number as the Python number it equals (a parameter given as ``np.int64(100)``)."""
    if isinstance(value, np.generic) and isinstance(value.item(), (bool, int, float)):
        return value.item()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _canonical(payload: Any) -> bytes:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False,
                      default=_plain_number).encode("utf-8")  # fmt: skip


def _non_finite_at(value: Any, where: str = "payload") -> str | None:
    """Where in ``value`` the first NaN or infinite float sits (``payload['weights'][3]``), if anywhere."""
    if isinstance(value, float) and not math.isfinite(value):
        return where
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, (list, tuple)) else ()
    for key, item in items:
        found = _non_finite_at(item, f"{where}[{key!r}]")
        if found:
            return found
    return None


def _file_mode() -> int:
    """What ``open(path, "w")`` would give: 0o666 less the process's umask (read without changing it)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o644


def dump(payload: dict, path: str | os.PathLike, format_name: str = FORMAT) -> None:
    """Write ``payload`` (JSON-able) atomically with its checksum; ``format_name`` tells what the file holds.

    The file gets the permissions a plain ``open(path, "w")`` would give it (not ``mkstemp``'s 0o600),
    or keeps those of the file it replaces (a model kept private stays private). Saving to a symbolic
    link replaces the file it points to (the link stays).
    """
    try:
        body = _canonical(payload)
    except ValueError as exc:  # NaN or infinity: JSON has no such number
        where = _non_finite_at(payload)
        raise ValueError(f"{path}: cannot save {where or 'a value'}: {exc}") from None
    # = _canonical(doc), around the payload text already written (json.dump would encode it again,
    # in pure Python: ~10x slower than json.dumps)
    doc = b'{"format":%s,"payload":%s,"sha256":"%s","version":%d}' % (
        _canonical(format_name), body, hashlib.sha256(body).hexdigest().encode("ascii"), format_version(format_name)
    )
    if not os.fspath(path):  # Path("") is ".", a folder: "is a folder" would be a puzzle
        raise ValueError("the file name is empty")
    path = Path(path)
    if path.is_symlink():  # the link stays and its target gets the new file (a rename would replace the link)
        path = Path(os.path.realpath(path))
    if path.is_dir():  # checked here: the errors of the temp file and the rename would name the temp file
        raise IsADirectoryError(f"{path}: is a folder, not a file")
    if not path.parent.is_dir():
        raise FileNotFoundError(f"{path}: the folder {path.parent} does not exist")
    try:
        mode = path.stat().st_mode & 0o7777
    except OSError:
        mode = _file_mode()
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:_TEMP_STEM]}.", suffix=".tmp")
    except OSError as exc:  # named by the user's path, not by the temp file's
        raise OSError(exc.errno, f"cannot write {path}: {exc.strerror}") from None
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(doc)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _sync_directory(path.parent)


def _sync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (POSIX); without it a power cut can undo the rename."""
    if os.name != "posix":
        return
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # EINVAL on some FUSE, network and bind mounts: the rename stands, only less durable
        pass
    finally:
        os.close(fd)


def load(path: str | os.PathLike, format_name: str = FORMAT) -> dict:
    """Read and verify a file written by :func:`dump`; raises :class:`CorruptModelError`."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as exc:  # json.JSONDecodeError is a ValueError
        raise CorruptModelError(f"{path}: not a {format_name} file ({exc})") from None
    except RecursionError:  # nesting deeper than the parser's recursion limit: dump never writes that
        raise CorruptModelError(f"{path}: not a {format_name} file (nested too deeply)") from None
    if not isinstance(doc, dict) or doc.get("format") != format_name:
        found = doc.get("format") if isinstance(doc, dict) else None
        hint = f": it is a {found} file, which {READERS[found]} reads" if found in READERS else ""
        raise WrongFormatError(f"{path}: not a {format_name} file (format field missing or wrong{hint})")
    version = doc.get("version")
    readable = FORMAT_VERSIONS.get(format_name, (VERSION, (VERSION,)))[1]
    said = f"version {readable[0]}" if len(readable) == 1 else f"versions {', '.join(map(str, readable))}"
    if type(version) is int and version > max(readable):
        raise UnsupportedVersionError(f"{path}: written in version {version} of the {format_name} format, by a "
                                      f"later robustream; this one reads {said}")
    if type(version) is not int or version not in readable:  # not true or 1.0, which compare equal to 1
        raise CorruptModelError(f"{path}: unsupported model file version {version!r} (expected {said})")
    if not isinstance(doc.get("payload"), dict) or not isinstance(doc.get("sha256"), str):
        raise CorruptModelError(f"{path}: not a {format_name} file (payload or sha256 field missing or not "
                                "of its type)")
    try:  # the checksum's text; dump never writes a number beyond floats, which JSON text cannot hold
        body = _canonical(doc["payload"])
    except ValueError:  # a damaged digit (1e999) read as infinity
        where = _non_finite_at(doc["payload"])
        raise CorruptModelError(f"{path}: not a {format_name} file ({where or 'a number'} is beyond floats)") from None
    if hashlib.sha256(body).hexdigest() != doc["sha256"]:
        raise CorruptModelError(f"{path}: checksum mismatch (the file is corrupt or was edited)")
    return doc["payload"]


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")  # dump never writes NaN or Infinity
