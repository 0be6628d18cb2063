"""Benchmark data sets, file readers and the label-noise protocol.

This module gives robustream one place for everything that touches data:

* :func:`shared_datasets_dir` finds the shared benchmark folder
  (``ROBUSTREAM_DATASETS`` or ``<repo>/../shared/datasets``);
* readers for the on-disk formats used there, each opening ``.xz``, ``.gz``
  and ``.bz2`` files transparently (:func:`read_svmlight`,
  :func:`read_csv`, :func:`read_dense`, :func:`read_idx`);
* the registry :data:`DATASETS` and :func:`load`, which returns a
  :class:`Dataset` with binary labels mapped to ``{-1.0, +1.0}``;
* :func:`noisy_split`, the label-noise protocol used in every experiment
  (random 40/30/30 train/validation/test split, uniform or adversarial label
  flips in train and validation, clean test labels);
* :func:`make_gaussian_classes`, the two-Gaussian synthetic generator of the
  RGD-tree paper.

Runtime dependencies are numpy and scipy only.

Label conventions of the registered sets (original label -> ``+1``):

=====================  =======================================================
name                   original label mapped to ``+1`` (the rest -> ``-1``)
=====================  =======================================================
australian             ``+1`` (as in the LIBSVM file)
german.numer(_scale)   ``+1`` (as in the LIBSVM file)
svmguide1, svmguide1.t ``1`` (``0`` -> ``-1``)
breast-cancer          ``1`` = malignant (this copy codes benign as ``-1``)
wdbc                   ``M`` = malignant (``B`` = benign -> ``-1``)
mushrooms              ``1`` = poisonous (3916 rows; ``2`` = edible -> ``-1``)
w8a                    ``+1`` (as in the LIBSVM file)
splice                 ``1`` (as in the LIBSVM file)
diabetes               ``+1`` (as in the LIBSVM file; 500 rows)
heart                  ``+1`` (as in the LIBSVM file; presence of disease)
ionosphere             ``1`` = UCI ``g`` (good radar return)
mnist-0-vs-1           digit ``1`` (digit ``0`` -> ``-1``)
mnist                  10 classes, ids 0..9 = digits 0..9
=====================  =======================================================

For mushrooms the LIBSVM coding ``1``/``2`` is mapped so that label ``1``
(3916 rows, the poisonous class of the UCI data by its count) is ``+1``: the
"harmful" class is positive, as for the two breast-cancer sets.  This is the
one registered set where the positive class is the *smaller* original value.
"""

from __future__ import annotations

import bz2
import collections
import csv
import gzip
import lzma
import math
import operator
import os
import re
import warnings
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence, Union

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.special import ndtr, ndtri

from .validation import check_seed, is_plain_real

__all__ = [
    "ALIASES",
    "DATASETS",
    "Dataset",
    "DatasetSpec",
    "GaussianClassesParams",
    "NoisySplit",
    "fit_reference_boundary",
    "load",
    "make_gaussian_classes",
    "noisy_split",
    "read_csv",
    "read_dense",
    "read_idx",
    "read_svmlight",
    "shared_datasets_dir",
    "UnknownDataset",
]

Matrix = Union[np.ndarray, sp.csr_matrix]
PathLike = Union[str, "os.PathLike[str]"]

ENV_VAR = "ROBUSTREAM_DATASETS"


class UnknownDataset(ValueError):
    """A name that is neither a registered data set nor a file (the message lists the known names)."""

#: ``load(..., dense=None)`` densifies svmlight data up to this many cells.
DENSE_CELL_LIMIT = 50_000_000

_COMPRESSED_SUFFIXES = {".xz": lzma.open, ".lzma": lzma.open, ".gz": gzip.open, ".bz2": bz2.open}


# --------------------------------------------------------------------------
# locating the shared folder and opening files
# --------------------------------------------------------------------------
def shared_datasets_dir() -> Path:
    """Return the folder holding the shared benchmark data sets.

    The folder is, in order of preference:

    1. the value of the environment variable ``ROBUSTREAM_DATASETS`` when it
       is set (returned even if it does not exist, so that errors name it);
    2. ``<repo root>/../shared/datasets``, where the repo root is
       ``Path(__file__).resolve().parents[2]`` (src layout, editable install);
    3. ``Path.cwd() / "../shared/datasets"``.

    The first of 2. and 3. that exists is returned; if neither exists the
    repo-relative path is returned so that error messages can name it.

    Returns
    -------
    pathlib.Path
        Absolute path of the data folder (it may not exist).

    Examples
    --------
    >>> import os
    >>> old = os.environ.get("ROBUSTREAM_DATASETS")
    >>> os.environ["ROBUSTREAM_DATASETS"] = "/tmp/my-data"
    >>> str(shared_datasets_dir())
    '/tmp/my-data'
    >>> _ = os.environ.pop("ROBUSTREAM_DATASETS") if old is None else os.environ.update(ROBUSTREAM_DATASETS=old)
    """
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser().resolve()
    repo_relative = (Path(__file__).resolve().parents[2] / ".." / "shared" / "datasets").resolve()
    cwd_relative = (Path.cwd() / ".." / "shared" / "datasets").resolve()
    for candidate in (repo_relative, cwd_relative):
        if candidate.is_dir():
            return candidate
    return repo_relative


def _read_bytes(path: PathLike) -> bytes:
    """Read a whole file, decompressing ``.xz``/``.lzma``/``.gz``/``.bz2``."""
    p = Path(path)
    opener = _COMPRESSED_SUFFIXES.get(p.suffix.lower())
    if not p.is_file():
        raise FileNotFoundError(f"no such file: {p}")
    if opener is None:
        return p.read_bytes()
    if p.stat().st_size == 0:  # gzip reads b"" from an empty file; xz and bz2 call it corrupt
        raise ValueError(f"{p}: cannot decompress ({p.suffix} file): the file is empty")
    try:
        with opener(p, "rb") as fh:
            return fh.read()
    except (OSError, EOFError, lzma.LZMAError, zlib.error) as exc:  # zlib.error: a corrupt gzip stream
        raise ValueError(f"{p}: cannot decompress ({p.suffix} file): {exc}") from exc


def _read_text(path: PathLike) -> str:
    return _decode_text(_read_bytes(path))


def _decode_text(raw: bytes) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    return text[1:] if text.startswith("\ufeff") else text  # a byte-order mark (Excel's "CSV UTF-8")


def _lines(text: str) -> list[str]:
    """Lines split at ``\n``, ``\r\n`` and ``\r`` (classic Mac OS and old Excel "CSV (Macintosh)" files)
    only: ``str.splitlines`` also breaks at characters such as NEL (0x85 in cp1252 text read as
    latin-1) or form feed, which would turn a comment into rows."""
    return _LINE_BREAK.split(text)


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def _base_suffix(path: PathLike) -> str:
    """Suffix of a file name once a compression suffix is removed."""
    p = Path(path)
    if p.suffix.lower() in _COMPRESSED_SUFFIXES:
        p = p.with_suffix("")
    return p.suffix.lower()


# --------------------------------------------------------------------------
# readers
# --------------------------------------------------------------------------
def read_svmlight(
    path: PathLike, n_features: int | None = None, *, zero_based: bool | str = "auto"
) -> tuple[sp.csr_matrix, np.ndarray]:
    """Read a svmlight / LIBSVM text file.

    Each line is ``label [qid:q] idx:val idx:val ...``.  Text after ``#`` is
    a comment; blank lines are skipped; ``qid`` tokens are ignored; indices
    need not be sorted but must be unique within a line.  Explicitly stored
    zeros are dropped from the result.

    Parameters
    ----------
    path : str or os.PathLike
        File name; ``.xz``, ``.lzma``, ``.gz`` and ``.bz2`` files are
        decompressed on the fly.
    n_features : int, optional
        Number of columns.  Default: the largest index in the file.  An index
        beyond ``n_features`` columns is an error.
    zero_based : bool or "auto", default "auto"
        Whether the first feature index is 0 (as scikit-learn's
        ``dump_svmlight_file`` writes by default) or 1 (LIBSVM).  ``"auto"``,
        as in scikit-learn: 0-based if the file holds an index 0, else 1-based
        (a 0-based file whose first column is all zeros then reads shifted by
        one column: pass ``zero_based=True`` for such files).

    Returns
    -------
    X : scipy.sparse.csr_matrix of float64, shape (n_samples, n_features)
    y : numpy.ndarray of float64, shape (n_samples,)

    Raises
    ------
    ValueError
        On malformed input; the message names the file, the line number and
        the problem.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "tiny.svm"
    >>> _ = f.write_text("+1 1:0.5 3:2  # first row\\n-1 qid:7 2:-1\\n")
    >>> X, y = read_svmlight(f)
    >>> X.toarray()
    array([[ 0.5,  0. ,  2. ],
           [ 0. , -1. ,  0. ]])
    >>> y
    array([ 1., -1.])
    """
    text = _read_text(path)
    labels: list[str] = []
    label_lines: list[int] = []
    idx_tok: list[str] = []
    val_tok: list[str] = []
    counts: list[int] = []
    for lineno, line in enumerate(_lines(text), 1):
        if "#" in line:
            line = line[: line.index("#")]
        toks = line.split()
        if not toks:
            continue
        labels.append(toks[0])
        label_lines.append(lineno)
        feats = toks[1:]
        if "qid:" in line:
            bad = next((t for t in feats if t.startswith("qid:") and not t[4:].isdigit()), None)
            if bad is not None:  # a query id is a non-negative integer
                _svm_error(path, lineno, f"expected 'qid:<integer>', got {bad!r}")
            feats = [t for t in feats if not t.startswith("qid:")]
        n_tok = len(feats)
        if n_tok:
            pieces = " ".join(feats).replace(":", " ").split()
            if len(pieces) != 2 * n_tok or not all(t.count(":") == 1 for t in feats):
                for t in feats:
                    i, sep, v = t.partition(":")
                    if not sep or not i or not v or ":" in v:
                        _svm_error(path, lineno, f"expected 'index:value', got {t!r}")
                _svm_error(path, lineno, "malformed 'index:value' pairs")  # pragma: no cover
            idx_tok.extend(pieces[0::2])
            val_tok.extend(pieces[1::2])
        counts.append(n_tok)

    n_samples = len(labels)
    try:
        y = np.array(labels, dtype=np.float64)
    except ValueError:
        for lab, ln in zip(labels, label_lines):
            try:
                float(lab)
            except ValueError:
                _svm_error(path, ln, f"label {lab!r} is not a number")
        raise  # pragma: no cover
    _check_finite(path, y, label_lines.__getitem__, "the label")
    row_of_tok = np.repeat(np.arange(n_samples), counts)
    try:
        indices = np.array(idx_tok, dtype=np.int64)
    except (ValueError, OverflowError):
        for k, tok in enumerate(idx_tok):
            try:
                int(tok)
            except ValueError:
                _svm_error(path, label_lines[row_of_tok[k]], f"feature index {tok!r} is not an integer")
            if abs(int(tok)) > np.iinfo(np.int64).max:
                _svm_error(path, label_lines[row_of_tok[k]], f"feature index {tok} is too large")
        raise  # pragma: no cover
    try:
        data = np.array(val_tok, dtype=np.float64)
    except ValueError:
        for k, tok in enumerate(val_tok):
            try:
                float(tok)
            except ValueError:
                _svm_error(path, label_lines[row_of_tok[k]], f"feature value {tok!r} is not a number")
        raise  # pragma: no cover
    _check_finite(path, data, lambda k: label_lines[row_of_tok[k]], "a feature value")

    if zero_based not in (True, False, "auto"):
        raise ValueError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    if zero_based == "auto":
        zero_based = bool(indices.size) and int(indices.min()) == 0
    first = 0 if zero_based else 1
    if indices.size:
        bad = np.flatnonzero(indices < first)
        if bad.size:
            k = bad[0]
            _svm_error(path, label_lines[row_of_tok[k]],
                       f"feature index {indices[k]} < {first} (zero_based={zero_based})")
        max_index = int(indices.max()) + 1 - first  # columns needed
    else:
        max_index = 0
    if n_features is None:
        n_features = max_index
    else:
        n_features = int(n_features)
        if n_features < 0:
            raise ValueError(f"n_features must be >= 0, got {n_features}")
        if max_index > n_features:
            k = int(np.flatnonzero(indices + 1 - first > n_features)[0])
            _svm_error(path, label_lines[row_of_tok[k]],
                       f"feature index {indices[k]} is beyond n_features={n_features} (zero_based={zero_based})")
    indices -= first

    if indices.size:
        order = np.lexsort((indices, row_of_tok))
        r_s, c_s = row_of_tok[order], indices[order]
        dup = np.flatnonzero((r_s[1:] == r_s[:-1]) & (c_s[1:] == c_s[:-1]))
        if dup.size:
            k = dup[0]
            _svm_error(path, label_lines[r_s[k]], f"feature index {c_s[k] + first} appears twice")
    indptr = np.zeros(n_samples + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    X = sp.csr_matrix((data, indices, indptr), shape=(n_samples, n_features))
    X.sort_indices()
    X.eliminate_zeros()
    return X, y


def _svm_error(path: PathLike, lineno: int, problem: str) -> None:
    raise ValueError(f"{path}, line {lineno}: {problem}")


def _check_finite(path: PathLike, values: np.ndarray, line_of: Callable[[int], int], what: str) -> None:
    """A "file, line N" error at the first NaN or infinite entry of ``values``; ``line_of`` maps the
    index of an entry along the first axis to its line number."""
    bad = ~np.isfinite(values)
    if bad.any():
        first = int(np.flatnonzero(bad.reshape(bad.shape[0], -1).any(axis=1))[0])
        raise ValueError(f"{path}, line {line_of(first)}: {what} is not a finite number")


def _is_float(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


# what data files write for a missing value (Excel: its error values): such a field on the first line is
# data (left to the "not a number" error), not a column name
_MISSING_TOKENS = frozenset(["?", "na", "n/a", "n.a.", "nan", "null", "none", "missing", "-", ".",
                             "#n/a", "#na", "#value!", "#div/0!", "#num!", "#ref!", "#name?", "#null!"])
# a mistyped number ("1.2.3", "1,5" quoted): data, not a column name
_NUMBER_LIKE = re.compile(r"[+-]?\d[\d.,]*(?:[eE][+-]?\d+)?")


def _is_text(field: str) -> bool:
    """A CSV field that can be a column name: neither empty, a number, a mistyped one, nor a missing value."""
    return (bool(field) and not _is_float(field) and field.lower() not in _MISSING_TOKENS
            and not _NUMBER_LIKE.fullmatch(field))


def _looks_like_header(first: Sequence[str], second: Sequence[str] | None) -> bool:
    """Guess whether the first CSV line is a header: it is if it holds text (a field that is neither
    empty nor a number) and no number at all, or text in a column that holds a number on the second
    line (a string label column does not count). A line of numbers is data: a header of numbers (the
    column numbering pandas writes for an unnamed frame) needs ``header=True``; an empty field is
    left to the "not a number" error."""
    text = [_is_text(f) for f in first]
    if not any(text):
        return False
    if not any(_is_float(f) for f in first):
        return True
    return second is not None and len(second) == len(first) and any(t and _is_float(b) for t, b in zip(text, second))


# what files write for a missing label ("-", "." or "none" may well be class names)
_MISSING_LABELS = frozenset(["?", "na", "n/a", "nan", "null"])


def _column_number(name: str, value: Any) -> int:
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}: a column number is an int, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name}: a column number is an int, got {type(value).__name__} {value!r}") from None


def _refuse_numbered_header(path: PathLike, lineno: int, rows: list[list[str]], lab: int) -> None:
    """ValueError when the first line read as data looks like a header of column numbers under a
    named label column (pandas writes ``diagnosis,0,1`` for such a frame): its features count 0, 1, ...
    (or 1, 2, ...) and its text label occurs on no other line. Read as data it would be one more row,
    and one more class."""
    first = [f for c, f in enumerate(rows[0]) if c != lab]
    label = rows[0][lab]
    if len(rows) < 2 or _is_float(label) or any(r[lab] == label for r in rows[1:]):
        return
    try:
        numbers = [float(f) for f in first]
    except ValueError:
        return
    if numbers in ([float(i) for i in range(len(first))], [float(i) for i in range(1, len(first) + 1)]):
        raise ValueError(f"{path}, line {lineno}: {','.join(rows[0])!r} looks like a header of column numbers "
                         "(its label occurs on no other line); pass header=True, or header=False if it is data")


def read_csv(
    path: PathLike,
    label_column: int = 0,
    header: bool | None = None,
    *,
    delimiter: str | None = ",",
    drop_columns: Sequence[int] = (),
) -> tuple[np.ndarray, np.ndarray]:
    """Read a dense delimited text file with one label column.

    Parameters
    ----------
    path : str or os.PathLike
        File name; compressed files are opened transparently.
    label_column : int, default 0
        Column holding the label; negative values count from the end
        (``-1`` = last column).
    header : bool or None, default None
        Whether the first line is a header.  ``None`` detects it: the first
        line is a header if it holds text and no number, or if a column holds
        text on the first line and a number on the second.  A first line of
        numbers is read as data (pass ``True`` for a header of column numbers).
    delimiter : str or None, default ","
        Field separator (``None``: ``;`` or a tab when every one of the
        first 20 lines holds as many of them, else ``,``, as :func:`load`
        reads a CSV file).  Fields are stripped of spaces; a field in double
        quotes may hold the separator (``"1,250.5"`` is one field, which is then
        not a number).
    drop_columns : sequence of int, default ()
        Columns to ignore (for example an id column); each must exist and
        must not be the label column.

    Returns
    -------
    X : numpy.ndarray of float64, shape (n_samples, n_features)
    y : numpy.ndarray
        float64 when every label is a number, otherwise an array of str.

    Raises
    ------
    ValueError
        On a wrong number of fields or a non-numeric feature (the message
        names the file, line and column).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "tiny.csv"
    >>> _ = f.write_text("label,a,b\\n1,0.5,2\\n0,1.5,-1\\n")
    >>> X, y = read_csv(f)
    >>> X
    array([[ 0.5,  2. ],
           [ 1.5, -1. ]])
    >>> y
    array([1., 0.])
    """
    label_column = _column_number("label_column", label_column)
    drop_columns = [_column_number("drop_columns", c) for c in drop_columns]
    text = _read_text(path)
    if delimiter is None:
        delimiter = _sniff_delimiter(text)
    lines = [(i, ln) for i, ln in enumerate(_lines(text), 1) if ln.strip()]
    if not lines:
        return np.zeros((0, 0)), np.zeros(0)
    # one line at a time: a quote left open must not swallow the next lines (and their line numbers)
    rows = []
    for lineno, ln in lines:
        try:
            rows.append([f.strip() for f in next(csv.reader([ln], delimiter=delimiter, skipinitialspace=True))])
        except csv.Error as exc:  # a field beyond csv's size limit, a NUL byte
            raise ValueError(f"{path}, line {lineno}: {exc}") from None
    detected = header is None
    if detected:
        header = _looks_like_header(rows[0], rows[1] if len(rows) > 1 else None)
    head = rows[0] if header else None
    if header:
        head_line, lines, rows = lines[0][0], lines[1:], rows[1:]
    if not rows:
        return np.zeros((0, 0)), np.zeros(0)
    n_cols = len(rows[0])
    for (lineno, _), r in zip(lines, rows):
        if len(r) != n_cols:
            raise ValueError(f"{path}, line {lineno}: {len(r)} fields, but line {lines[0][0]} has {n_cols}")
    if head is not None and len(head) != n_cols:  # e.g. R's write.table: no name for the row names
        raise ValueError(f"{path}, line {head_line}: the header has {len(head)} fields, but line {lines[0][0]} "
                         f"has {n_cols}")
    lab = label_column + n_cols if label_column < 0 else label_column
    if not 0 <= lab < n_cols:
        raise ValueError(f"label_column={label_column} is out of range for {n_cols} columns in {path}")
    if detected and not header:
        _refuse_numbered_header(path, lines[0][0], rows, lab)
    drop = {c + n_cols if c < 0 else c for c in drop_columns}
    if any(not 0 <= c < n_cols for c in drop) or lab in drop:
        raise ValueError(f"drop_columns={tuple(drop_columns)!r}: columns must be in range for {n_cols} columns "
                         f"and must not include label_column={label_column} in {path}")
    if n_cols - 1 - len(drop) < 1:
        raise ValueError(f"{path}: no feature column with delimiter {delimiter!r} ({n_cols} columns, "
                         f"label_column={label_column}, drop_columns={tuple(drop_columns)!r})")
    feat_cols = [c for c in range(n_cols) if c != lab and c not in drop]
    labels = [r[lab] for r in rows]
    feats = [[r[c] for c in feat_cols] for r in rows]
    try:
        X = np.array(feats, dtype=np.float64).reshape(len(rows), len(feat_cols))
    except ValueError:
        for (lineno, _), r in zip(lines, feats):
            for c, f in zip(feat_cols, r):
                if not _is_float(f):
                    raise ValueError(f"{path}, line {lineno}, column {c}: value {f!r} is not a number") from None
        raise  # pragma: no cover
    line_numbers = [lineno for lineno, _ in lines]
    _check_finite(path, X, line_numbers.__getitem__, "a feature value")
    for lineno, label in zip(line_numbers, labels):
        if not label or label.lower() in _MISSING_LABELS:
            what = "empty" if not label else f"missing ({label!r})"
            raise ValueError(f"{path}, line {lineno}, column {lab}: the label is {what}")
    try:
        y = np.array(labels, dtype=np.float64)
    except ValueError:
        # text labels are classes by name; numbers mixed with text are a file error ("1" next to "?"
        # would silently become one more class, and "1" and "1.0" two classes)
        numeric = [_is_float(label) for label in labels]
        if any(numeric):
            first = next(i for i, is_number in enumerate(numeric) if not is_number)
            raise ValueError(f"{path}, line {line_numbers[first]}, column {lab}: label {labels[first]!r} is not a "
                             f"number, but line {line_numbers[numeric.index(True)]}'s label is") from None
        y = np.array(labels, dtype=str)
    else:
        _check_finite(path, y, line_numbers.__getitem__, "the label")
    return X, y


def read_dense(path: PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Read the dense whitespace format: ``label v1 v2 ... vd`` per line.

    Used by the shared ``splice_scale.dense.xz``.  Any amount of spaces or
    tabs separates fields; blank lines and text after ``#`` are ignored.

    Parameters
    ----------
    path : str or os.PathLike
        File name; compressed files are opened transparently.

    Returns
    -------
    X : numpy.ndarray of float64, shape (n_samples, n_features)
    y : numpy.ndarray of float64, shape (n_samples,)

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "tiny.dense"
    >>> _ = f.write_text("1  0.5  -1\\n-1  2  0\\n")
    >>> X, y = read_dense(f)
    >>> X.shape, y.tolist()
    ((2, 2), [1.0, -1.0])
    """
    text = _read_text(path)
    tokens: list[str] = []
    lines: list[int] = []
    n_cols = None
    for lineno, line in enumerate(_lines(text), 1):
        if "#" in line:
            line = line[: line.index("#")]
        toks = line.split()
        if not toks:
            continue
        if n_cols is None:
            n_cols = len(toks)
        elif len(toks) != n_cols:
            raise ValueError(f"{path}, line {lineno}: {len(toks)} fields, but line {lines[0]} has {n_cols}")
        tokens.extend(toks)
        lines.append(lineno)
    if n_cols is None:
        return np.zeros((0, 0)), np.zeros(0)
    try:
        arr = np.array(tokens, dtype=np.float64).reshape(len(lines), n_cols)
    except ValueError:
        for k, tok in enumerate(tokens):
            if not _is_float(tok):
                raise ValueError(f"{path}, line {lines[k // n_cols]}: value {tok!r} is not a number") from None
        raise  # pragma: no cover
    _check_finite(path, arr[:, 0], lines.__getitem__, "the label")
    _check_finite(path, arr[:, 1:], lines.__getitem__, "a feature value")
    return np.ascontiguousarray(arr[:, 1:]), arr[:, 0].copy()


_IDX_DTYPES = {
    0x08: np.dtype(np.uint8),
    0x09: np.dtype(np.int8),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


def read_idx(path: PathLike) -> np.ndarray:
    """Read an IDX file (the MNIST format), gzip-compressed or not.

    Parameters
    ----------
    path : str or os.PathLike
        File name; ``.gz`` (and ``.xz``, ``.bz2``) files are decompressed.

    Returns
    -------
    numpy.ndarray
        Array with the file's shape and element type (``uint8`` for MNIST;
        multi-byte types are converted to native byte order).

    Examples
    --------
    >>> import gzip, tempfile, pathlib, struct
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "tiny-idx1-ubyte.gz"
    >>> with gzip.open(f, "wb") as fh:
    ...     _ = fh.write(struct.pack(">BBBBI", 0, 0, 0x08, 1, 3) + bytes([7, 0, 9]))
    >>> read_idx(f)
    array([7, 0, 9], dtype=uint8)
    """
    raw = _read_bytes(path)
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise ValueError(f"{path}: not an IDX file (bad magic number)")
    code, ndim = raw[2], raw[3]
    if code not in _IDX_DTYPES:
        raise ValueError(f"{path}: unknown IDX element type 0x{code:02x}")
    dtype = _IDX_DTYPES[code]
    header_end = 4 + 4 * ndim
    if len(raw) < header_end:
        raise ValueError(f"{path}: truncated IDX header")
    shape = tuple(int(v) for v in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    n_items = math.prod(shape)  # Python ints: a forged header cannot wrap around
    expected = header_end + n_items * dtype.itemsize
    if len(raw) != expected:
        raise ValueError(f"{path}: IDX size mismatch: header says {expected} bytes, file has {len(raw)}")
    arr = np.frombuffer(raw, dtype=dtype, count=n_items, offset=header_end).reshape(shape)
    return arr.astype(dtype.newbyteorder("="), copy=True)


# --------------------------------------------------------------------------
# registry and load()
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class DatasetSpec:
    """Description of one registered shared data set.

    Attributes
    ----------
    name : str
        Name passed to :func:`load`.
    files : tuple of str
        File name(s) inside :func:`shared_datasets_dir`; for ``idx`` the
        images file then the labels file.
    format : str
        ``"svmlight"``, ``"csv"``, ``"dense"`` or ``"idx"``.
    positive_label : float, str or None
        Original label value that becomes ``+1`` (``None``: more than two
        classes).
    n_samples, n_features : int
        Expected shape (from the shared MANIFEST.md).
    label_counts : tuple of (label, count)
        Expected counts of the original label values.
    description : str
        One line on source, coding and the label mapping.
    label_column, header, drop_columns
        CSV options (ignored for other formats).
    keep_labels : tuple or None
        Keep only rows with these original labels (``mnist-0-vs-1``).
    divisor : float
        Divide the features by this (``255.0`` for MNIST).
    """

    name: str
    files: tuple[str, ...]
    format: str
    positive_label: float | str | None
    n_samples: int
    n_features: int
    label_counts: tuple[tuple[Any, int], ...]
    description: str = ""
    label_column: int = 0
    header: bool | None = None
    drop_columns: tuple[int, ...] = ()
    keep_labels: tuple[Any, ...] | None = None
    divisor: float = 1.0


_MNIST_COUNTS = ((0, 980), (1, 1135), (2, 1032), (3, 1010), (4, 982), (5, 892), (6, 958), (7, 1028), (8, 974), (9, 1009))
_MNIST_FILES = ("mnist-t10k-images-idx3-ubyte.gz", "mnist-t10k-labels-idx1-ubyte.gz")

#: Registered shared data sets, by the name passed to :func:`load`.
DATASETS: dict[str, DatasetSpec] = {
    s.name: s
    for s in [
        DatasetSpec("australian", ("australian.xz",), "svmlight", 1.0, 690, 14, ((1.0, 307), (-1.0, 383)),
                    "LIBSVM australian (Statlog credit approval), unscaled; +1 -> +1."),
        DatasetSpec("german.numer", ("german.numer.xz",), "svmlight", 1.0, 1000, 24, ((1.0, 300), (-1.0, 700)),
                    "LIBSVM german.numer (Statlog German credit), unscaled; +1 -> +1."),
        DatasetSpec("german.numer_scale", ("german.numer_scale.xz",), "svmlight", 1.0, 1000, 24,
                    ((1.0, 300), (-1.0, 700)),
                    "LIBSVM german.numer_scale, features scaled to [-1, 1]; +1 -> +1."),
        DatasetSpec("svmguide1", ("svmguide1.xz",), "svmlight", 1.0, 3089, 4, ((1.0, 2000), (0.0, 1089)),
                    "LIBSVM svmguide1 training file; label 1 -> +1, 0 -> -1."),
        DatasetSpec("svmguide1.t", ("svmguide1.t.csv.xz",), "csv", 1.0, 4000, 4, ((1.0, 2000), (0.0, 2000)),
                    "LIBSVM svmguide1 test file (dense CSV copy); label 1 -> +1, 0 -> -1.",
                    label_column=0, header=True),
        DatasetSpec("breast-cancer", ("breast-cancer_scale.xz",), "svmlight", 1.0, 683, 10,
                    ((1.0, 239), (-1.0, 444)),
                    "LIBSVM breast-cancer_scale (Wisconsin original); this copy codes malignant as 1 "
                    "(-> +1) and benign as -1. Feature 1 is the scaled sample id."),
        DatasetSpec("wdbc", ("wdbc.data.xz",), "csv", "M", 569, 30, (("M", 212), ("B", 357)),
                    "UCI Breast Cancer Wisconsin (Diagnostic); id column dropped; M (malignant) -> +1, "
                    "B (benign) -> -1.",
                    label_column=1, header=False, drop_columns=(0,)),
        DatasetSpec("mushrooms", ("mushrooms.xz",), "svmlight", 1.0, 8124, 112, ((1.0, 3916), (2.0, 4208)),
                    "LIBSVM mushrooms (UCI agaricus-lepiota, one-hot); label 1 (poisonous, 3916) -> +1, "
                    "label 2 (edible, 4208) -> -1."),
        DatasetSpec("w8a", ("w8a.xz",), "svmlight", 1.0, 49749, 300, ((1.0, 1479), (-1.0, 48270)),
                    "LIBSVM w8a (web page classification, 300 binary features); +1 -> +1. Stand-in for w5a: "
                    "use noisy_split(..., max_samples=9888)."),
        DatasetSpec("splice", ("splice_scale.dense.xz",), "dense", 1.0, 1000, 60, ((1.0, 517), (-1.0, 483)),
                    "LIBSVM splice_scale training file (dense rendering); 1 -> +1."),
        DatasetSpec("diabetes", ("diabetes_scale.xz",), "svmlight", 1.0, 768, 8, ((1.0, 500), (-1.0, 268)),
                    "LIBSVM diabetes_scale (Pima Indians); +1 (500 rows) -> +1, as coded in the file."),
        DatasetSpec("heart", ("heart_scale.xz",), "svmlight", 1.0, 270, 13, ((1.0, 120), (-1.0, 150)),
                    "LIBSVM heart_scale (Statlog heart); +1 (presence of disease, 120 rows) -> +1."),
        DatasetSpec("ionosphere", ("ionosphere.csv.xz",), "csv", 1.0, 351, 34, ((1.0, 225), (-1.0, 126)),
                    "UCI ionosphere (CSV, label last); 1 (= UCI 'g', good) -> +1, -1 (= 'b') -> -1.",
                    label_column=-1, header=False),
        DatasetSpec("mnist", _MNIST_FILES, "idx", None, 10000, 784, _MNIST_COUNTS,
                    "MNIST t10k test set, 10 classes; pixels / 255.0 as float64; class id k = digit k.",
                    divisor=255.0),
        DatasetSpec("mnist-0-vs-1", _MNIST_FILES, "idx", 1, 2115, 784, ((1, 1135), (0, 980)),
                    "Digits 0 and 1 of the MNIST t10k set; pixels / 255.0; digit 1 -> +1, digit 0 -> -1.",
                    keep_labels=(0, 1), divisor=255.0),
    ]
}

#: Other spellings accepted by :func:`load`.
ALIASES: dict[str, str] = {
    "breast-cancer_scale": "breast-cancer",
    "diabetes_scale": "diabetes",
    "heart_scale": "heart",
    "splice_scale": "splice",
    "german_scale": "german.numer_scale",
    "mnist01": "mnist-0-vs-1",
}


@dataclass(frozen=True)
class Dataset:
    """A loaded data set.

    Attributes
    ----------
    X : numpy.ndarray or scipy.sparse.csr_matrix, float64
        Features, shape ``(n_samples, n_features)``.
    y : numpy.ndarray
        Binary: float64 in ``{-1.0, +1.0}``; otherwise int64 class ids
        ``0..K-1``.
    name : str
        Registered name or the file path.
    classes : tuple
        Original label values in the order of the class ids; for binary data
        ``classes[0]`` became ``-1`` and ``classes[1]`` became ``+1``.
    n_samples, n_features : int
        Shape of ``X`` (computed).

    Examples
    --------
    >>> import numpy as np
    >>> ds = Dataset(np.zeros((3, 2)), np.array([1.0, -1.0, 1.0]), "toy", ("no", "yes"))
    >>> ds.n_samples, ds.n_features
    (3, 2)
    """

    X: Matrix
    y: np.ndarray
    name: str
    classes: tuple
    n_samples: int = field(init=False)
    n_features: int = field(init=False)

    def __post_init__(self) -> None:
        if self.X.ndim != 2 or np.ndim(self.y) != 1 or self.X.shape[0] != len(self.y):
            raise ValueError(f"Dataset {self.name!r}: X shape {self.X.shape} and y shape {np.shape(self.y)} disagree")
        object.__setattr__(self, "n_samples", int(self.X.shape[0]))
        object.__setattr__(self, "n_features", int(self.X.shape[1]))


def _encode_labels(y_raw: np.ndarray, positive: Any, binary: bool) -> tuple[np.ndarray, tuple]:
    """Map original labels to {-1, +1} (binary) or class ids 0..K-1."""
    sorted_vals = np.unique(y_raw)
    order = np.arange(len(sorted_vals))  # class id k <- sorted_vals[order[k]]
    if positive is not None and len(sorted_vals) == 2:
        hits = np.flatnonzero(sorted_vals == positive)
        if hits.size == 0:
            raise ValueError(f"positive label {positive!r} is not among the labels {sorted_vals.tolist()}")
        order = np.array([1 - hits[0], hits[0]])
    id_of_sorted = np.empty_like(order)
    id_of_sorted[order] = np.arange(len(order))
    ids = id_of_sorted[np.searchsorted(sorted_vals, y_raw)]
    values = sorted_vals[order]
    classes = tuple(v.item() if isinstance(v, np.generic) else v for v in values)
    if binary and len(values) == 2:
        return np.where(ids == 1, 1.0, -1.0), classes
    if binary and len(values) == 1:
        v = classes[0]
        sign = 1.0 if (v == positive or (isinstance(v, (int, float)) and v > 0)) else -1.0
        return np.full(len(y_raw), sign), classes
    return ids.astype(np.int64), classes


def _format_matrix(X: Matrix, dense: bool | None, sparse_source: bool) -> Matrix:
    if dense is None:
        dense = (not sparse_source) or X.shape[0] * X.shape[1] <= DENSE_CELL_LIMIT
    if dense:
        return np.ascontiguousarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
    return sp.csr_matrix(X, dtype=np.float64)


def _load_spec(spec: DatasetSpec, dense: bool | None, binary: bool, folder: Path | None = None) -> Dataset:
    """The registered data set ``spec``, from the shared folder (or ``folder``: a file of the set given
    by its path; the registry's checks then say the file was read as that set because of its name)."""
    root = shared_datasets_dir() if folder is None else folder
    paths = [root / f for f in spec.files]
    as_named = "" if folder is None else (f" (a file named {spec.files[0]} is read as the shared data set "
                                          f"{spec.name!r}; rename it to load it as a plain file)")
    for p in paths:
        if not p.is_file():
            raise FileNotFoundError(
                f"data set {spec.name!r}: file {p} not found; set the environment variable {ENV_VAR} "
                f"to the folder holding the shared data sets"
            )
    sparse_source = False
    if spec.format == "svmlight":
        X, y_raw = read_svmlight(paths[0], n_features=spec.n_features)
        sparse_source = True
    elif spec.format == "csv":
        X, y_raw = read_csv(paths[0], label_column=spec.label_column, header=spec.header,
                            drop_columns=spec.drop_columns)
    elif spec.format == "dense":
        X, y_raw = read_dense(paths[0])
    elif spec.format == "idx":
        X, y_raw = _read_idx_files(*paths)
    else:  # pragma: no cover - registry is static
        raise ValueError(f"unknown format {spec.format!r}")
    if spec.keep_labels is not None:
        keep = np.isin(y_raw, np.asarray(spec.keep_labels))
        X, y_raw = X[keep], y_raw[keep]
    if X.shape != (spec.n_samples, spec.n_features):  # a truncated, replaced or re-exported file
        raise ValueError(f"data set {spec.name!r}: {paths[0]} gives {X.shape[0]} rows of {X.shape[1]} features, "
                         f"the registry (MANIFEST.md) says {spec.n_samples} of {spec.n_features}{as_named}")
    found = collections.Counter(y_raw.tolist())
    if found != dict(spec.label_counts):  # a relabelled copy (classes swapped) has the right shape
        def counts(pairs) -> str:
            return ", ".join(f"{label!r}: {n}" for label, n in sorted(pairs, key=lambda p: repr(p[0])))

        raise ValueError(f"data set {spec.name!r}: {paths[-1]} gives the label counts {{{counts(found.items())}}}, "
                         f"the registry (MANIFEST.md) says {{{counts(spec.label_counts)}}}{as_named}")
    if spec.divisor != 1.0:
        X = X / spec.divisor
    y, classes = _encode_labels(y_raw, spec.positive_label, binary)
    return Dataset(_format_matrix(X, dense, sparse_source), y, spec.name, classes)


def _is_idx(raw: bytes) -> bool:
    """Whether ``raw`` starts with an IDX magic number (two zero bytes, an element type, a rank); no
    text file starts with two NUL bytes."""
    return len(raw) >= 4 and raw[0] == 0 and raw[1] == 0 and raw[2] in _IDX_DTYPES and 1 <= raw[3] <= 8


def _sniff_format(path: Path) -> str:
    suffix = _base_suffix(path)
    if suffix in (".csv", ".tsv"):
        return "csv"
    if suffix == ".dense":
        return "dense"
    raw = _read_bytes(path)
    if _is_idx(raw):
        return "idx"
    text = _decode_text(raw)
    for line in _lines(text):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        toks = line.split()
        if any(":" in t for t in toks[1:]):
            return "svmlight"
        if "," in line or ";" in line:
            return "csv"
        return "svmlight" if len(toks) == 1 else "dense"
    return "svmlight"


def _registered_file(path: Path) -> DatasetSpec | None:
    """The registered data set a file given by its path belongs to, by the file's name (a shared file,
    wherever the shared folder is, or a copy of it): its reading options (header, label column, label
    mapping) are not in the file. The first set listing the name (``mnist``, not ``mnist-0-vs-1``); for
    a set of several files (MNIST's images and labels) only when all of them are in the same folder."""
    for spec in DATASETS.values():
        if path.name in spec.files and all((path.parent / f).is_file() for f in spec.files):
            return spec
    return None


# the file names of an IDX pair (MNIST's, and the original distribution's: train-images-idx3-ubyte)
_IDX_PAIR = ("images-idx3", "labels-idx1")


def _read_idx_pair(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Images (one row each) and labels of an IDX pair, given either file of it: the other one is the
    file beside it named with ``labels-idx1`` for ``images-idx3`` (or the reverse)."""
    images_name, labels_name = _IDX_PAIR
    if images_name in path.name:
        images, labels = path, path.with_name(path.name.replace(images_name, labels_name))
    elif labels_name in path.name:
        images, labels = path.with_name(path.name.replace(labels_name, images_name)), path
    else:
        raise ValueError(f"{path}: an IDX file holds images or labels alone, and its name says neither "
                         f"({images_name!r} or {labels_name!r}) so its pair cannot be found; read it with "
                         "robustream.datasets.read_idx")
    if not images.is_file() or not labels.is_file():
        missing = labels if not labels.is_file() else images
        raise FileNotFoundError(f"{path}: an IDX file of {'images' if missing is labels else 'labels'}; "
                                f"its pair {missing.name} is not beside it (load needs both)")
    return _read_idx_files(images, labels)


def _read_idx_files(images: Path, labels: Path) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)``: the images of an IDX file as float64 rows, and the int64 labels of another."""
    X, y = read_idx(images), read_idx(labels)
    if y.ndim != 1 or X.ndim < 2 or y.shape[0] != X.shape[0]:
        raise ValueError(f"{images} holds images of shape {X.shape} and {labels} labels of shape {y.shape}: one "
                         "label per image expected")
    return X.reshape(X.shape[0], -1).astype(np.float64), y.astype(np.int64)


def _load_path(path: Path, dense: bool | None, binary: bool, label_column: int, header: bool | None) -> Dataset:
    fmt = _sniff_format(path)
    sparse_source = False
    if fmt == "svmlight":
        X, y_raw = read_svmlight(path)
        sparse_source = True
    elif fmt == "csv":
        delimiter = "\t" if _base_suffix(path) == ".tsv" else None  # None: sniffed from the text read_csv reads
        X, y_raw = read_csv(path, label_column=label_column, header=header, delimiter=delimiter)
    elif fmt == "idx":
        X, y_raw = _read_idx_pair(path)
    else:
        X, y_raw = read_dense(path)
    if X.shape[0] == 0:  # an empty or comment-only file (a cut download): say so here, not as "a single class" later
        raise ValueError(f"{path}: no data rows")
    y, classes = _encode_labels(y_raw, None, binary)
    return Dataset(_format_matrix(X, dense, sparse_source), y, str(path), classes)


def _sniff_delimiter(text: str) -> str:
    """The field separator of a CSV text: ``;`` or a tab when every one of its first 20 lines holds
    the same number of them (``;`` files often write decimal commas), else ``,``."""
    sample = [ln for ln in _lines(text) if ln.strip()][:20]
    for candidate in (";", "\t"):
        counts = {ln.count(candidate) for ln in sample}
        if len(counts) == 1 and counts.pop() > 0:
            return candidate
    return ","


def load(
    name_or_path: PathLike,
    *,
    dense: bool | None = None,
    binary: bool = True,
    label_column: int = 0,
    header: bool | None = None,
) -> Dataset:
    """Load a registered shared data set or a data file.

    Parameters
    ----------
    name_or_path : str or os.PathLike
        A name from :data:`DATASETS` (or :data:`ALIASES`; a name wins over a
        file of that name in the current folder: pass ``./heart`` for the
        file), or the path of a svmlight, CSV or dense whitespace file, optionally
        ``.xz``/``.gz``/``.bz2`` compressed.  The format of a path is taken
        from its suffix (``.csv``/``.tsv``, ``.dense``) or else sniffed from
        the first data line (``idx:val`` -> svmlight, commas -> CSV, else
        dense); an IDX file (MNIST's format) is read with the file of its
        pair beside it (``...labels-idx1...`` for ``...images-idx3...``).  A
        file named as a registered shared file (``heart_scale.xz``) loads that
        data set, wherever it is, as its name does (its label column, header
        and label mapping, and the registry's checks of its shape and labels).
    dense : bool or None, default None
        ``None``: svmlight data are returned dense when
        ``n_samples * n_features <= 5e7`` and as CSR otherwise; other formats
        are dense.  ``True``/``False`` force a dense array / CSR matrix.
    binary : bool, default True
        Map two-class labels to float ``{-1.0, +1.0}`` (registered sets: per
        the spec's ``positive_label``; files: the larger original label ->
        ``+1``).  ``False``, or data with more than two classes, give int64
        class ids ``0..K-1`` in the order of ``Dataset.classes``.
    label_column, header : int, bool or None, default 0, None
        A CSV file's label column (``-1``: the last one) and header (``None``:
        detected), as in :func:`read_csv`; other formats hold the label first.

    Returns
    -------
    Dataset

    Raises
    ------
    ValueError
        Unknown name (the message lists the known names) or malformed file.
    FileNotFoundError
        Missing file (the message names the path and ``ROBUSTREAM_DATASETS``).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "toy.svm"
    >>> _ = f.write_text("2 1:1\\n1 2:1\\n2 1:3 2:1\\n")
    >>> ds = load(f)
    >>> ds.X
    array([[1., 0.],
           [0., 1.],
           [3., 1.]])
    >>> ds.y, ds.classes
    (array([ 1., -1.,  1.]), (1.0, 2.0))
    >>> load(f, binary=False, dense=False).y
    array([1, 0, 1])

    A registered set (needs the shared folder): ``load("australian")``.
    """
    if isinstance(name_or_path, str):
        key = ALIASES.get(name_or_path, name_or_path)
        if key in DATASETS:
            return _load_spec(DATASETS[key], dense, binary)
    path = Path(name_or_path).expanduser()
    if path.is_file():
        spec = _registered_file(path)
        if spec is not None:
            return _load_spec(spec, dense, binary, folder=path.parent)
        return _load_path(path, dense, binary, label_column, header)
    if path.is_dir():  # "no such data file" would send the user looking for a path that is there
        raise IsADirectoryError(f"{path.resolve()} is a folder, not a data file")
    text = str(name_or_path)
    looks_like_path = (
        not isinstance(name_or_path, str)
        or os.sep in text
        or "/" in text
        or path.suffix.lower() in {*_COMPRESSED_SUFFIXES, ".csv", ".tsv", ".txt", ".svm", ".libsvm", ".dense", ".data"}
    )
    if looks_like_path:
        raise FileNotFoundError(
            f"no such data file: {path.resolve()} (for the shared benchmark sets, set the environment "
            f"variable {ENV_VAR} to their folder and load them by name)"
        )
    raise UnknownDataset(f"unknown data set {text!r}; known names: {', '.join(sorted(DATASETS))}")


# --------------------------------------------------------------------------
# label-noise protocol
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class NoisySplit:
    """Result of :func:`noisy_split`.

    ``y_train``/``y_val`` carry the noisy labels, ``y_*_clean`` the true
    ones, ``flipped_*`` the boolean masks ``y_* != y_*_clean``.  Test labels
    are clean.  ``index_*`` are row indices into the ``X`` given to
    :func:`noisy_split`.
    """

    X_train: Matrix
    y_train: np.ndarray
    y_train_clean: np.ndarray
    flipped_train: np.ndarray
    X_val: Matrix
    y_val: np.ndarray
    y_val_clean: np.ndarray
    flipped_val: np.ndarray
    X_test: Matrix
    y_test: np.ndarray
    index_train: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    index_val: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    index_test: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


def _check_flip(flip: float, name: str = "flip") -> float:
    try:
        flip = float(flip)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in [0, 0.5), got {flip!r}") from None
    if not (0.0 <= flip < 0.5):
        raise ValueError(f"{name} must be in [0, 0.5), got {flip!r}")
    return flip


def _as_matrix(X: Any) -> Matrix:
    if sp.issparse(X):
        X = sp.csr_matrix(X)
    else:
        X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}")
    return X


def _check_finite_matrix(X: Matrix, name: str) -> None:
    """ValueError naming the row and column of the first NaN or infinite value of ``X`` (float64)."""
    values = X.data if sp.issparse(X) else X
    bad = ~np.isfinite(values)
    if not bad.any():
        return
    if sp.issparse(X):
        k = int(np.flatnonzero(bad)[0])
        row, col = int(np.searchsorted(X.indptr, k, side="right")) - 1, int(X.indices[k])
    else:
        row, col = (int(i) for i in np.argwhere(bad)[0])
    raise ValueError(f"{name}[{row}, {col}] is {float(X[row, col])!r}: the features must be finite numbers")


def fit_reference_boundary(X: Matrix, y: np.ndarray, *, reg: float = 1e-3) -> tuple[np.ndarray, float]:
    """Ridge least-squares linear boundary ``f(x) = x @ w + b`` (no sklearn).

    Minimises ``||X w + b - y||^2 + lam ||w||^2`` with an unpenalised
    intercept, where ``lam = reg * trace(Xc.T @ Xc) / d`` (``Xc`` = centred
    ``X``; i.e. ``reg`` times the mean eigenvalue of the centred Gram
    matrix).  This is the clean reference used by adversarial noise in
    :func:`noisy_split`.  Dense and sparse ``X`` are accepted; for more than
    4000 features an iterative solver (LSQR) is used.

    Parameters
    ----------
    X : array or sparse matrix, shape (n, d)
    y : array, shape (n,)
        Targets, normally in ``{-1, +1}``.
    reg : float, default 1e-3
        Relative ridge strength.

    Returns
    -------
    w : numpy.ndarray, shape (d,)
    b : float

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> w, b = fit_reference_boundary(X, np.array([-1.0, -1.0, 1.0, 1.0]))
    >>> np.sign(X @ w + b)
    array([-1., -1.,  1.,  1.])
    """
    X = _as_matrix(X)
    if X.dtype != np.float64:  # integer pixels (read_idx gives uint8) or bools overflow or saturate in X.T @ X
        X = X.astype(np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, d = X.shape
    if n == 0:
        raise ValueError("cannot fit a reference boundary on 0 rows")
    _check_finite_matrix(X, "X")
    mu = np.asarray(X.mean(axis=0)).ravel()
    y_mean = float(y.mean())
    yc = y - y_mean
    if sp.issparse(X):
        sq = float(X.multiply(X).sum())
    else:
        sq = float(np.einsum("ij,ij->", X, X))
    trace = max(sq - n * float(mu @ mu), 0.0)
    lam = reg * trace / d if trace > 0 else reg
    if d <= 4000:
        if sp.issparse(X):
            gram = (X.T @ X).toarray() - n * np.outer(mu, mu)
            rhs = np.asarray(X.T @ yc).ravel()
        else:
            Xc = X - mu
            gram = Xc.T @ Xc
            rhs = Xc.T @ yc
        gram[np.diag_indices(d)] += lam
        try:
            w = scipy.linalg.solve(gram, rhs, assume_a="pos")
        except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):  # pragma: no cover
            w = scipy.linalg.lstsq(gram, rhs)[0]
    else:
        from scipy.sparse.linalg import LinearOperator, lsqr

        op = LinearOperator(
            (n, d),
            matvec=lambda v: np.asarray(X @ v).ravel() - float(mu @ v),
            rmatvec=lambda u: np.asarray(X.T @ u).ravel() - mu * float(np.sum(u)),
            dtype=np.float64,
        )
        w = lsqr(op, yc, damp=math.sqrt(lam), atol=1e-10, btol=1e-10)[0]
    b = y_mean - float(mu @ w)
    return np.asarray(w, dtype=np.float64), b


def farthest_on_correct_side(X: Matrix, w: np.ndarray, b: float, label: int, n: int) -> np.ndarray:
    """Positions of the ``n`` rows of ``X`` (all labelled ``label``, +1 or -1) that lie farthest on the
    correct side of the boundary ``x @ w + b`` (largest ``label * f(x)``; ties by position): the rows
    adversarial noise flips (:func:`noisy_split`, :func:`robustream.evaluate.noisy_stream`).

    >>> farthest_on_correct_side(np.array([[1.0], [3.0], [2.0]]), np.array([1.0]), 0.0, 1, 2)
    array([1, 2])
    """
    margins = label * (np.asarray(X @ w).ravel() + b)
    return np.argsort(-margins, kind="stable")[:n]


def _is_positive_whole(value: Any) -> bool:
    """An integer >= 1, or a float equal to one; not a bool, NaN or infinity."""
    if isinstance(value, bool):
        return False
    try:
        return int(value) == value and value >= 1
    except (TypeError, ValueError, OverflowError):  # int() of NaN, of infinity, of a non-number
        return False


def _uniform_flips(y: np.ndarray, n_flip: int, classes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Flip exactly n_flip labels of y (a copy) to a random other class."""
    y = y.copy()
    if n_flip == 0:
        return y
    idx = rng.choice(len(y), size=n_flip, replace=False)
    k = len(classes)
    pos = np.searchsorted(classes, y[idx])
    shift = rng.integers(1, k, size=n_flip) if k > 2 else np.ones(n_flip, dtype=np.int64)
    y[idx] = classes[(pos + shift) % k]
    return y


def noisy_split(
    X: Any,
    y: Any,
    *,
    flip: float = 0.15,
    noise: str = "uniform",
    split: Sequence[float] = (0.4, 0.3, 0.3),
    seed: int | None = 0,
    max_samples: int | None = None,
    adversarial_class: int = 1,
    reference_reg: float = 1e-3,
) -> NoisySplit:
    """Split a data set into train/validation/test and corrupt labels.

    Protocol (identical in every experiment):

    1. ``rng = np.random.default_rng(seed)``; a random permutation of the
       rows; with ``max_samples`` only its first ``max_samples`` entries are
       kept (a uniform random subsample, e.g. 9888 rows of w8a as a stand-in
       for w5a; larger values keep all rows).
    2. Consecutive blocks of ``round(split[0] * n)`` train and
       ``round(split[1] * n)`` validation rows; the rest is test (every row
       is used).
    3. In train and in validation *separately*, ``round(flip * n_split)``
       labels are flipped (Python ``round``):

       * ``noise="uniform"``: rows chosen uniformly without replacement;
         binary ``{-1, +1}`` labels become ``-y``, other labels a uniformly
         random *other* class (among the classes present in ``y``);
       * ``noise="adversarial"`` (labels in ``{-1, +1}`` only): a clean
         reference boundary ``f`` is fitted by :func:`fit_reference_boundary`
         on the clean train+validation rows; among the rows of class
         ``adversarial_class`` the ones farthest on the correct side
         (largest ``y * f(x)``, ties by position) are flipped.  If the class
         has too few rows, all of them are flipped and a ``RuntimeWarning``
         says so.

    Test labels are never flipped.  ``flip=0`` leaves all labels clean.

    Parameters
    ----------
    X : array or sparse matrix, shape (n, d)
        Sparse input is returned as CSR, dense as numpy arrays.
    y : array, shape (n,)
        Labels; ``{-1, +1}`` for binary problems, any values otherwise.
    flip : float in [0, 0.5), default 0.15
    noise : {"uniform", "adversarial"}, default "uniform"
    split : three floats summing to 1, default (0.4, 0.3, 0.3)
    seed : int or None, default 0
    max_samples : int, optional
    adversarial_class : {1, -1}, default 1
        Class whose points are flipped by adversarial noise.
    reference_reg : float, default 1e-3
        ``reg`` of the reference ridge fit.

    Returns
    -------
    NoisySplit

    Raises
    ------
    ValueError
        Invalid argument (the message names it).

    Examples
    --------
    >>> import numpy as np
    >>> X, y = make_gaussian_classes(100, d=5, seed=1)
    >>> s = noisy_split(X, y, flip=0.1, seed=0)
    >>> len(s.y_train), len(s.y_val), len(s.y_test)
    (80, 60, 60)
    >>> int(s.flipped_train.sum()), int(s.flipped_val.sum())
    (8, 6)
    >>> bool(np.all(s.y_train[s.flipped_train] == -s.y_train_clean[s.flipped_train]))
    True
    """
    X = _as_matrix(X)
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {y.shape}")
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X and y disagree: X has {X.shape[0]} rows, y has {y.shape[0]} labels")
    if y.shape[0] == 0:
        raise ValueError("X and y have no rows")
    if y.dtype.kind in "fc" and not np.all(np.isfinite(y)):  # NaN would be a class of its own, never equal to itself
        first = int(np.flatnonzero(~np.isfinite(y))[0])
        raise ValueError(f"y[{first}] is {y[first].item()!r}: labels must be finite (drop or fill the rows without "
                         "a label)")
    flip = _check_flip(flip)
    check_seed(seed, allow_none=True)
    if noise not in ("uniform", "adversarial"):
        raise ValueError(f"noise must be 'uniform' or 'adversarial', got {noise!r}")
    try:
        fractions = [float(s) for s in split]
    except (TypeError, ValueError):
        raise ValueError(f"split must be three fractions summing to 1, got {split!r}") from None
    if len(fractions) != 3 or any(not (f >= 0.0) for f in fractions) or abs(sum(fractions) - 1.0) > 1e-6:
        raise ValueError(f"split must be three non-negative fractions summing to 1, got {split!r}")
    if max_samples is not None and not _is_positive_whole(max_samples):
        raise ValueError(f"max_samples must be a positive integer or None, got {max_samples!r}")
    if isinstance(adversarial_class, bool) or adversarial_class not in (1, -1):
        raise ValueError(f"adversarial_class must be 1 or -1, got {adversarial_class!r}")
    adversarial_class = int(adversarial_class)
    if not (is_plain_real(reference_reg) and 0.0 <= reference_reg < math.inf):
        raise ValueError(f"reference_reg must be a finite number >= 0, got {reference_reg!r}")

    values = np.unique(y)
    in_pm1 = bool(np.all(np.isin(values, [-1, 1])))
    # -y is the other class only where both are present, in a dtype that holds -1 (not bool, not unsigned)
    is_pm1 = in_pm1 and values.size == 2 and y.dtype.kind not in "bu"
    classes = np.array([-1, 1], dtype=y.dtype) if is_pm1 else values
    if noise == "adversarial" and not in_pm1:
        raise ValueError(f"noise='adversarial' needs binary labels in {{-1, +1}}, got {values.tolist()[:10]}")
    if flip > 0 and len(classes) < 2:
        raise ValueError("y has a single class, so labels cannot be flipped (flip must be 0)")

    rng = np.random.default_rng(seed)
    n_all = X.shape[0]
    perm = rng.permutation(n_all)
    if max_samples is not None:
        perm = perm[: int(max_samples)]
    n = len(perm)
    n_train = int(round(fractions[0] * n))
    n_val = min(int(round(fractions[1] * n)), n - n_train)
    idx_train, idx_val, idx_test = perm[:n_train], perm[n_train: n_train + n_val], perm[n_train + n_val:]
    yc_train, yc_val = y[idx_train].copy(), y[idx_val].copy()
    nf_train, nf_val = int(round(flip * n_train)), int(round(flip * n_val))

    if noise == "uniform":
        y_train = _uniform_flips(yc_train, nf_train, classes, rng)
        y_val = _uniform_flips(yc_val, nf_val, classes, rng)
    else:
        y_train, y_val = yc_train.copy(), yc_val.copy()
        if nf_train + nf_val > 0:
            idx_fit = np.concatenate([idx_train, idx_val])
            w, b = fit_reference_boundary(X[idx_fit], y[idx_fit].astype(np.float64), reg=reference_reg)
            for name, idx, ys, n_flip in (("train", idx_train, y_train, nf_train), ("validation", idx_val, y_val, nf_val)):
                if n_flip == 0:
                    continue
                cand = np.flatnonzero(ys == adversarial_class)
                if len(cand) < n_flip:
                    warnings.warn(
                        f"noisy_split: the {name} split has only {len(cand)} points of class "
                        f"{adversarial_class:+d} but {n_flip} flips were asked for; flipping all of them",
                        RuntimeWarning,
                        stacklevel=2,
                    )
                chosen = farthest_on_correct_side(X[idx[cand]], w, b, adversarial_class, n_flip)
                ys[cand[chosen]] = -ys[cand[chosen]]

    return NoisySplit(
        X_train=X[idx_train], y_train=y_train, y_train_clean=yc_train, flipped_train=y_train != yc_train,
        X_val=X[idx_val], y_val=y_val, y_val_clean=yc_val, flipped_val=y_val != yc_val,
        X_test=X[idx_test], y_test=y[idx_test].copy(),
        index_train=idx_train, index_val=idx_val, index_test=idx_test,
    )


# --------------------------------------------------------------------------
# synthetic data
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class GaussianClassesParams:
    """Parameters behind :func:`make_gaussian_classes`.

    Attributes
    ----------
    mean : numpy.ndarray, shape (d,)
        Mean ``m`` of class ``+1`` (class ``-1`` has mean ``-m``).
    cov : numpy.ndarray, shape (d, d)
        Shared covariance ``Q diag(eigenvalues) Q.T``.
    eigenvalues : numpy.ndarray, shape (d,)
        Diagonal before rotation, in ``[1, 10]`` with max/min exactly 10.
    rotation : numpy.ndarray, shape (d, d)
        Random orthogonal ``Q``.
    separation : float
        Mahalanobis distance ``Delta`` between the two means.
    bayes_error : float
        ``Phi(-Delta / 2)``, the error of the optimal rule for equal priors
        (also the per-class error of ``sign(x @ inv(cov) @ mean)``).
    n_pos, n_neg : int
        Class sizes.
    """

    mean: np.ndarray
    cov: np.ndarray
    eigenvalues: np.ndarray
    rotation: np.ndarray
    separation: float
    bayes_error: float
    n_pos: int
    n_neg: int

    def bayes_direction(self) -> np.ndarray:
        """``inv(cov) @ mean``: ``sign(x @ w)`` is the equal-prior Bayes rule."""
        return np.linalg.solve(self.cov, self.mean)


def make_gaussian_classes(
    n_per_class: int | tuple[int, int] = (1000, 3000),
    *,
    d: int = 100,
    flip: float = 0.0,
    seed: int | None = 0,
    separation: float | None = None,
    return_params: bool = False,
) -> tuple[np.ndarray, np.ndarray] | tuple[np.ndarray, np.ndarray, GaussianClassesParams]:
    """Two Gaussian classes with a shared random covariance (RGD-tree paper).

    Each class size is drawn uniformly from the integers in ``n_per_class``
    (inclusive range; an int fixes both sizes).  The shared covariance is
    ``Q diag(lambda) Q.T`` with ``Q`` a random orthogonal matrix (QR of a
    Gaussian matrix, sign-fixed) and ``lambda`` uniform in ``[1, 10]`` with
    one entry set to 1 and one to 10, so ``max/min == 10`` exactly.  The
    class means are ``+m`` (label ``+1``) and ``-m`` (label ``-1``) with
    ``m`` along a random unit direction.

    The paper does not state the means.  Our choice: ``m`` is scaled so that
    the Mahalanobis distance between the means is
    ``Delta = 2 * ndtri(0.99) ~= 4.65``, which makes the Bayes error of the
    clean problem ``Phi(-Delta/2) = 1%`` (exact for equal priors; it is also
    the per-class error of the linear rule ``sign(x @ inv(cov) @ m)``).
    Pass ``separation`` to use another ``Delta``.

    Parameters
    ----------
    n_per_class : int or (int, int), default (1000, 3000)
    d : int, default 100
        Dimension (at least 2).
    flip : float in [0, 0.5), default 0.0
        Flip exactly ``round(flip * n)`` labels chosen uniformly at random.
    seed : int or None, default 0
    separation : float, optional
        Mahalanobis distance between the class means (default ~4.65).
    return_params : bool, default False
        Also return a :class:`GaussianClassesParams`.

    Returns
    -------
    X : numpy.ndarray of float64, shape (n, d)
        Rows in random order.
    y : numpy.ndarray of float64 in {-1, +1}
    params : GaussianClassesParams
        Only when ``return_params`` is true.

    Examples
    --------
    >>> X, y, p = make_gaussian_classes((50, 80), d=10, seed=3, return_params=True)
    >>> X.shape[1], sorted(set(y.tolist())), round(p.bayes_error, 4)
    (10, [-1.0, 1.0], 0.01)
    >>> bool(50 <= p.n_pos <= 80 and len(y) == p.n_pos + p.n_neg)
    True
    """
    whole = lambda v: isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))  # noqa: E731
    if whole(n_per_class):
        lo = hi = int(n_per_class)
    else:
        try:
            lo, hi = n_per_class
        except (TypeError, ValueError):
            lo = hi = None
        if not (whole(lo) and whole(hi)):  # 1.9 would silently become 1, True a size of 1
            raise ValueError(f"n_per_class must be an int or a (low, high) pair of ints, got {n_per_class!r}")
        lo, hi = int(lo), int(hi)
    if lo < 1 or hi < lo:
        raise ValueError(f"n_per_class must satisfy 1 <= low <= high, got {n_per_class!r}")
    if int(d) != d or d < 2:
        raise ValueError(f"d must be an integer >= 2 (the covariance needs max/min = 10), got {d!r}")
    d = int(d)
    flip = _check_flip(flip)
    check_seed(seed, allow_none=True)
    if separation is None:
        separation = 2.0 * float(ndtri(0.99))
    separation = float(separation)
    if not 0.0 < separation < math.inf:
        raise ValueError(f"separation must be a finite number > 0, got {separation!r}")

    rng = np.random.default_rng(seed)
    n_pos, n_neg = (int(v) for v in rng.integers(lo, hi + 1, size=2))
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    q = q * np.sign(np.diag(r))
    eig = rng.uniform(1.0, 10.0, size=d)
    ends = rng.choice(d, size=2, replace=False)
    eig[ends[0]], eig[ends[1]] = 1.0, 10.0
    cov = (q * eig) @ q.T
    cov = (cov + cov.T) / 2.0
    u = rng.standard_normal(d)
    u /= np.linalg.norm(u)
    # Mahalanobis norm of u: u' inv(cov) u = sum((q' u)^2 / eig)
    maha_u = math.sqrt(float(np.sum((q.T @ u) ** 2 / eig)))
    mean = u * (separation / (2.0 * maha_u))

    root = q * np.sqrt(eig)  # cov = root @ root.T
    n = n_pos + n_neg
    y = np.concatenate([np.ones(n_pos), -np.ones(n_neg)])
    X = rng.standard_normal((n, d)) @ root.T + y[:, None] * mean
    order = rng.permutation(n)
    X, y = np.ascontiguousarray(X[order]), y[order]
    n_flip = int(round(flip * n))
    if n_flip:
        idx = rng.choice(n, size=n_flip, replace=False)
        y[idx] = -y[idx]
    if not return_params:
        return X, y
    params = GaussianClassesParams(
        mean=mean, cov=cov, eigenvalues=eig, rotation=q, separation=separation,
        bayes_error=float(ndtr(-separation / 2.0)), n_pos=n_pos, n_neg=n_neg,
    )
    return X, y, params
