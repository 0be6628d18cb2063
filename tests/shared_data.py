"""The one gate of every test that reads ``../shared/datasets``.

Such a test may skip only when the shared folder is absent, and says so. Under CI (``CI`` set), the
folder must be there: CI runs with ``../shared`` beside the clone, so a missing folder fails. When
the folder is there but a file the test names is not, that is a renamed or removed data set, and the
test fails instead of skipping quietly.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from robustream.datasets import shared_datasets_dir


def require_shared(*files: str) -> Path:
    """The shared datasets folder; skip (fail under CI) when it is absent, fail when it lacks ``files``."""
    folder = shared_datasets_dir()
    if not folder.is_dir():
        reason = f"shared datasets folder {folder} is absent (put ../shared beside the repo or set ROBUSTREAM_DATASETS)"
        if os.environ.get("CI"):
            pytest.fail(reason + "; CI runs with ../shared beside the clone")
        pytest.skip(reason)
    missing = [name for name in files if not (folder / name).exists()]
    if missing:
        pytest.fail(f"{folder} is there but lacks {', '.join(missing)}: a data set file was renamed or removed")
    return folder
