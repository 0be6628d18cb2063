"""Checkpoints: the model state and the next input offsets, written together.

Each checkpoint is one file ``checkpoint-<sequence>.json`` in the robustream file format
(:mod:`robustream.persist`: versioned, SHA-256 checksummed, atomic temp file + rename; no pickle).
The last ``keep`` files are kept. :meth:`CheckpointStore.load_latest` walks from the newest to
the oldest and skips (and reports) any damaged file (it fails its checksum or is not a checkpoint);
the daemon's store renames such a file to ``checkpoint-<sequence>.json.corrupt``, so it no longer
counts among the kept ones. An intact file this robustream cannot resume from (written by a later
version, or holding a state it cannot rebuild: another robustream or river version) or cannot read
(permissions) raises :class:`CheckpointUnreadable` and is left as it is: falling back past it would
drop the model it holds, and every checkpoint that version wrote, without a word.
A daemon opens its folder with ``exclusive=True``: a lock (``flock`` on ``daemon.lock``, let go when
the process ends, even by ``kill -9``) keeps a second daemon out, whose checkpoints would otherwise
overwrite and delete the first one's; only that store changes the folder beyond writing checkpoints
(removing stale temp files, setting damaged files aside), so a reader never disturbs the daemon.

>>> import tempfile
>>> from river import linear_model
>>> store = CheckpointStore(tempfile.mkdtemp(), keep=2)
>>> path = store.save(linear_model.LogisticRegression(), {("in", 0): 42}, {"learner": "river:LogisticRegression"})
>>> store.load_latest().offsets
{('in', 0): 42}
"""

from __future__ import annotations

import logging
import os
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .. import persist
from .state import StateError, decode_state, encode_state

try:
    import fcntl
except ImportError:  # Windows: no flock; one daemon per folder is then up to the user
    fcntl = None

CHECKPOINT_FORMAT = "robustream-checkpoint"
COMMITS_FORMAT = "robustream-commits"
COMMITS_FILE = "committed-offsets.json"
LOCK_FILE = "daemon.lock"
_NAME = re.compile(r"^checkpoint-(\d{12})\.json$")

log = logging.getLogger("robustream.daemon")


@dataclass
class Checkpoint:
    model: Any
    offsets: dict[tuple[str, int], int]
    meta: dict = field(default_factory=dict)
    path: Path | None = None


class FolderInUse(ValueError):
    """Another process holds the folder's lock."""


class CheckpointUnreadable(ValueError):
    """An intact checkpoint this robustream cannot resume from, or a checkpoint file it cannot read."""


class CheckpointStore:
    """A directory of numbered checkpoints; the newest readable one wins.

    ``exclusive``: hold the folder's lock until :meth:`release` (FolderInUse if another process
    holds it); readers that only look at a folder leave it False.
    """

    def __init__(self, directory: str | os.PathLike, keep: int = 3, exclusive: bool = False):
        if keep < 1:
            raise ValueError(f"keep must be at least 1, got {keep!r}")
        self.directory = Path(directory)
        self.keep = keep
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock = _lock_folder(self.directory) if exclusive else None
        if self._lock is not None:  # a reader's store must not remove the temp file of a daemon's write
            # temp files of writes cut short (kill -9 between the write and the rename): never read, so removed
            for pattern in (".checkpoint-*.tmp", f".{COMMITS_FILE}.*.tmp"):
                for stale in self.directory.glob(pattern):
                    stale.unlink(missing_ok=True)

    def release(self) -> None:
        """Let go of the folder's lock (closing the file does)."""
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def paths(self) -> list[Path]:
        """Checkpoint files, oldest first."""
        found = [(int(m.group(1)), p) for p in self.directory.iterdir() if (m := _NAME.match(p.name))]
        return [p for _, p in sorted(found)]

    def save(self, model: Any, offsets: dict[tuple[str, int], int], meta: dict | None = None) -> Path:
        """Write a new checkpoint atomically, then delete all but the newest ``keep``."""
        existing = self.paths()
        seq = int(_NAME.match(existing[-1].name).group(1)) + 1 if existing else 1
        path = self.directory / f"checkpoint-{seq:012d}.json"
        payload = {
            "model": encode_state(model),
            "offsets": sorted([topic, partition, offset] for (topic, partition), offset in offsets.items()),
            "meta": meta or {},
        }
        persist.dump(payload, path, format_name=CHECKPOINT_FORMAT)
        for old in self.paths()[: -self.keep]:
            old.unlink(missing_ok=True)
        return path

    def save_commits(self, offsets: dict[tuple[str, int], int]) -> None:
        """Record the offsets this daemon last committed (atomically, beside the checkpoints): after a
        fallback they tell its own commits from another member's, whatever the broker keeps."""
        payload = {"offsets": sorted([topic, partition, offset] for (topic, partition), offset in offsets.items())}
        persist.dump(payload, self.directory / COMMITS_FILE, format_name=COMMITS_FORMAT)

    def load_commits(self) -> dict[tuple[str, int], int]:
        """The offsets of :meth:`save_commits`; empty when there are none or they cannot be read."""
        path = self.directory / COMMITS_FILE
        if not path.exists():
            return {}
        try:
            payload = persist.load(path, format_name=COMMITS_FORMAT)
            return {(str(t), int(p)): int(o) for t, p, o in payload["offsets"]}
        except (persist.CorruptModelError, KeyError, TypeError, ValueError, OSError) as exc:
            log.error("ignoring %s: %s", path, exc)
            return {}

    def load_latest(self, on_corrupt: Callable[[Path, str], None] | None = None) -> Checkpoint | None:
        """The newest checkpoint that loads, or None; ``on_corrupt(path, reason)`` for each damaged one
        skipped. :class:`CheckpointUnreadable` for an intact one this robustream cannot resume from, or
        a file it cannot read (see the module's docstring)."""
        for path in reversed(self.paths()):
            try:
                payload = persist.load(path, format_name=CHECKPOINT_FORMAT)
            except persist.UnsupportedVersionError as exc:
                raise CheckpointUnreadable(f"{exc}: run that robustream, or start afresh with another checkpoint "
                                           "folder (the file is left as it is)") from None
            except persist.CorruptModelError as exc:  # damaged: fails its checksum, or not a checkpoint at all
                self._set_aside(path, str(exc), on_corrupt)
                continue
            except OSError as exc:  # permissions, an I/O error: the file may be intact
                raise CheckpointUnreadable(f"{path}: cannot read it ({exc.strerror or exc}); the file is left as "
                                           "it is") from None
            try:
                model = decode_state(payload["model"])
                offsets = {(str(t), int(p)): int(o) for t, p, o in payload["offsets"]}
                meta = dict(payload.get("meta") or {})
            except (StateError, KeyError, TypeError, ValueError) as exc:  # intact (its checksum holds): skew
                raise CheckpointUnreadable(
                    f"{path}: an intact checkpoint this robustream cannot resume from ({exc}); it was written "
                    "by another version of robustream or river: run that version, or start afresh with another "
                    "checkpoint folder (the file is left as it is)"
                ) from None
            return Checkpoint(model, offsets, meta, path)
        return None

    def _set_aside(self, path: Path, reason: str, on_corrupt: Callable[[Path, str], None] | None) -> None:
        """Skip a damaged checkpoint; the daemon's store (the lock holder) renames it so that it is kept for
        inspection but no longer counted among the last ``keep`` (the next saves would otherwise delete
        the good checkpoints older than it first)."""
        aside = path
        if self._lock is not None:
            aside = path.with_name(path.name + ".corrupt")
            n = 1
            while aside.exists():  # sequence numbers are reused once a corrupt newest is set aside
                n += 1
                aside = path.with_name(f"{path.name}.corrupt{n}")
            try:
                path.replace(aside)
            except OSError:
                aside = path
        log.error("skipping checkpoint %s: %s (kept as %s)", path, reason, aside.name)
        if on_corrupt is not None:
            on_corrupt(path, reason)


def _lock_folder(directory: Path):
    """The open lock file of ``directory``, locked; FolderInUse naming the holder if another process has it."""
    lock = open(directory / LOCK_FILE, "a+", encoding="utf-8")  # noqa: SIM115 - held open until release
    if fcntl is None:
        return lock
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.seek(0)
        holder = lock.read().strip() or "a process that wrote no pid yet"
        lock.close()
        raise FolderInUse(f"in use by another robustream daemon ({holder}); give each daemon its own "
                          f"folder") from None
    except BaseException:
        lock.close()
        raise
    lock.seek(0)
    lock.truncate()
    lock.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
    lock.flush()
    return lock
