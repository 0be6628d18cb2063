"""Model state as plain JSON, for any River model, without pickle.

The daemon must checkpoint whatever River classifier it runs (robustream's learners, a River
``LogisticRegression``, a ``OneVsRestClassifier``, a pipeline) and load it back at start-up. Pickle
would run arbitrary code from a file on disk, so the object graph is walked with Python's own
reduce protocol (``__reduce_ex__``) and written as JSON; loading rebuilds only classes and
functions from an allowlist (River, robustream and a few standard containers). Shared references
and cycles are kept (each object is written once and referred to by number), floats round-trip
exactly, NumPy arrays are stored as base64 of their bytes.

>>> from river import linear_model
>>> model = linear_model.LogisticRegression()
>>> model.learn_one({"a": 1.0, "b": -2.0}, True)
>>> copy = decode_state(json.loads(json.dumps(encode_state(model))))
>>> copy.predict_proba_one({"a": 0.5}) == model.predict_proba_one({"a": 0.5})
True
"""

from __future__ import annotations

import base64
import copyreg
import enum
import importlib
import json  # noqa: F401 - used by the docstring example
import math
import os
import types
from typing import Any

import numpy as np

from ..persist import MODEL_STATE_FORMAT
from ..validation import finite_floats

# 2: robustream's River learners write their buffered rows as one table (RebuildingLinearClassifier.__getstate__);
# a robustream that reads only 1 would load such a learner without its rows, so it refuses 2 instead
STATE_FORMAT = 2
READABLE_STATE_FORMATS = (1, 2)

# Whole module trees whose classes and functions may be rebuilt.
ALLOWED_PREFIXES = ("river.", "robustream.")
# Single globals outside them (module, qualified name).
ALLOWED_GLOBALS = frozenset(
    [("builtins", n) for n in ("object", "float", "int", "str", "bool", "complex", "list", "dict", "set",
                               "frozenset", "tuple", "bytes", "bytearray", "slice", "range")]
    + [("copyreg", "__newobj__"), ("copyreg", "__newobj_ex__"), ("copyreg", "_reconstructor")]
    + [("collections", n) for n in ("OrderedDict", "defaultdict", "deque", "Counter")]
    + [("functools", "partial"), ("random", "Random"), ("operator", "itemgetter"), ("operator", "attrgetter")]
    + [("numpy", "dtype"), ("numpy.random", "default_rng"), ("numpy.random", "Generator"),
       ("numpy.random", "PCG64"), ("numpy.random._pickle", "__generator_ctor"),
       ("numpy.random._pickle", "__bit_generator_ctor")]
)  # fmt: skip


class StateError(ValueError):
    """The model cannot be written as JSON state, or a state document is not one we may rebuild."""


def _global_name(obj: Any) -> tuple[str, str]:
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if module is None or qualname is None:
        raise StateError(f"cannot name {obj!r}")
    # compiled classes report a private module path; use the first path that gives the same object back
    for candidate in (module, module.rsplit(".", 1)[0], "river.utils"):
        try:
            found: Any = importlib.import_module(candidate)
            for part in qualname.split("."):
                found = getattr(found, part)
        except (ImportError, AttributeError):
            continue
        if found is obj:
            return candidate, qualname
    raise StateError(f"cannot name {module}.{qualname}: it is not reachable by that name")


def _allowed(module: str, qualname: str) -> bool:
    return (module, qualname) in ALLOWED_GLOBALS or module.startswith(ALLOWED_PREFIXES) or module in (
        "river",
        "robustream",
    )


def _resolve(module: str, qualname: str) -> Any:
    """The allowlisted class or function ``module.qualname``; never a module or anything reached through one."""
    if not _allowed(module, qualname) or "<" in qualname:
        raise StateError(f"state refers to {module}.{qualname}, which is not on the allowlist")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None or isinstance(obj, types.ModuleType):
            raise StateError(f"state refers to {module}.{qualname}, which is not on the allowlist")
    if (module, qualname) not in ALLOWED_GLOBALS:
        # e.g. robustream.persist.os.system: the object must itself live in an allowlisted module
        home = getattr(obj, "__module__", None) or ""
        if home == "river._river_rust.vectordict":
            home = "river.utils"
        if not (home.startswith(ALLOWED_PREFIXES) or home in ("river", "robustream")):
            raise StateError(f"state refers to {module}.{qualname}, defined in {home or '?'}, not on the allowlist")
    return obj


def _check_constructor(func: Any, args: Any) -> None:
    """What a reduce node may call at load time: an allowlisted class, or an allowlisted constructor helper
    (copyreg's, functools.partial, NumPy's) whose class arguments are allowlisted too."""
    if func in (copyreg.__newobj__, copyreg.__newobj_ex__, copyreg._reconstructor):
        classes = [args[0]] + ([args[1]] if func is copyreg._reconstructor else [])
        for cls in classes:
            if not isinstance(cls, type) or not _allowed(*_global_name(cls)):
                raise StateError(f"state builds a {cls!r}, which is not on the allowlist")
        return
    if isinstance(func, type) or (getattr(func, "__module__", None), getattr(func, "__qualname__", None)) in (
        ALLOWED_GLOBALS
    ):
        return
    raise StateError(f"state calls {func!r} at load time; only allowlisted classes may be built")


_STR_ONLY = frozenset([str])


def _finite_floats(items: Any) -> list | None:
    """``list(items)`` when every item is a finite plain float (which ref() writes as itself), else None.

    Model state is mostly rows of floats: this writes them without one ref() call per number."""
    if items and finite_floats(items):
        return list(items)
    return None


class _Encoder:
    def __init__(self) -> None:
        self.memo: dict[int, int] = {}
        self.keepalive: list[Any] = []  # temporaries must outlive the walk or their ids get reused
        self.building: set[int] = set()  # tuples and sets whose items are being written
        # id(class or function) -> its name: a model's rows share one class, named once, not per row
        self.names: dict[int, tuple[str, str]] = {}

    def name(self, obj: Any) -> tuple[str, str]:
        """:func:`_global_name`, once per object (every object named is an object the walk reached, or
        part of a reduce value it keeps, so ``keepalive`` holds it and its id stays its own)."""
        key = id(obj)
        found = self.names.get(key)
        if found is None:
            found = self.names[key] = _global_name(obj)
        return found

    def ref(self, obj: Any) -> Any:
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if type(obj) is int:
            return obj
        if isinstance(obj, float) and type(obj) in (float, np.float64):
            return obj if math.isfinite(obj) else {"t": "float", "v": repr(float(obj))}
        if isinstance(obj, np.generic):
            return {"t": "npscalar", "dtype": obj.dtype.str, "v": base64.b64encode(obj.tobytes()).decode()}
        key = id(obj)
        if key in self.memo:
            if key in self.building:
                # a tuple or set is rebuilt only after its items, so a cycle through one cannot be loaded
                raise StateError(f"cannot write a cycle through a {type(obj).__name__}")
            return {"t": "ref", "id": self.memo[key]}
        self.keepalive.append(obj)
        n = self.memo[key] = len(self.memo)
        if type(obj) in (tuple, set, frozenset):
            self.building.add(key)
            try:
                return self.encode(obj, n)
            finally:
                self.building.discard(key)
        return self.encode(obj, n)

    def global_node(self, obj: Any, n: int, module: str | None = None, qualname: str | None = None) -> dict:
        """A class or function, by name: only one that loading may rebuild (see :func:`_resolve`)."""
        if module is None:
            module, qualname = self.name(obj)
        if "<lambda>" in qualname or "<locals>" in qualname:
            raise StateError(f"cannot write {qualname} (a lambda or local function); use a named function")
        if not _allowed(module, qualname):
            # it would be written, and refused by every load: fail now, where the model is known
            raise StateError(f"cannot write {module}.{qualname}: not on the allowlist of what a checkpoint may rebuild")
        return {"t": "global", "id": n, "module": module, "name": qualname}

    def encode(self, obj: Any, n: int) -> dict:
        t = type(obj)
        if t is list:
            return {"t": "list", "id": n, "v": _finite_floats(obj) or [self.ref(v) for v in obj]}
        if t is tuple:
            return {"t": "tuple", "id": n, "v": _finite_floats(obj) or [self.ref(v) for v in obj]}
        if t is dict:
            if _STR_ONLY.issuperset(map(type, obj)) and _finite_floats(obj.values()):
                return {"t": "dict", "id": n, "v": list(map(list, obj.items()))}  # what ref() makes of each
            return {"t": "dict", "id": n, "v": [[self.ref(k), self.ref(v)] for k, v in obj.items()]}
        if t in (set, frozenset):
            return {"t": t.__name__, "id": n, "v": [self.ref(v) for v in obj]}
        if t is bytes:
            return {"t": "bytes", "id": n, "v": base64.b64encode(obj).decode()}
        if t is np.ndarray:
            if obj.dtype.hasobject:
                raise StateError("cannot write a NumPy array of Python objects")
            data = np.ascontiguousarray(obj)
            return {"t": "ndarray", "id": n, "dtype": obj.dtype.str, "shape": list(obj.shape),
                    "v": base64.b64encode(data.tobytes()).decode()}  # fmt: skip
        if isinstance(obj, type) or callable(obj) and hasattr(obj, "__qualname__") and not hasattr(obj, "__dict__"):
            return self.global_node(obj, n)
        if hasattr(obj, "__code__") or type(obj).__name__ in ("builtin_function_or_method", "method"):
            owner = getattr(obj, "__self__", None)
            if owner is not None and not isinstance(owner, type) and type(owner).__name__ != "module":
                return {"t": "method", "id": n, "self": self.ref(owner), "name": obj.__name__}
            return self.global_node(obj, n)
        try:
            rv = obj.__reduce_ex__(4)
        except Exception as exc:  # noqa: BLE001 - any failure means: not writable
            raise StateError(f"cannot write a {t.__module__}.{t.__qualname__} ({exc})") from None
        if isinstance(rv, str):
            module, _ = self.name(obj)
            return self.global_node(obj, n, module, rv)
        rv = tuple(rv) + (None,) * (5 - len(rv))
        func, args, state, listitems, dictitems = rv[:5]
        self.keepalive.append(rv)
        module, qualname = self.name(func)
        if not _allowed(module, qualname):
            raise StateError(f"cannot write a {t.__module__}.{t.__qualname__}: it is rebuilt by {module}.{qualname}")
        if func is copyreg.__newobj__ and not _allowed(*self.name(args[0])):
            raise StateError(f"cannot write a {t.__module__}.{t.__qualname__}: the class is not on the allowlist")
        return {
            "t": "reduce",
            "id": n,
            "func": [module, qualname],
            "args": self.ref(tuple(args)),
            "state": self.ref(state),
            "listitems": self.ref(list(listitems)) if listitems is not None else None,
            "dictitems": self.ref(list(dictitems)) if dictitems is not None else None,
        }


def encode_state(model: Any) -> dict:
    """The JSON-able state of ``model``; raises :class:`StateError` naming what cannot be written."""
    return {"format": STATE_FORMAT, "root": _Encoder().ref(model)}


class _Decoder:
    def __init__(self) -> None:
        self.memo: dict[int, Any] = {}
        self.resolved: dict[tuple[str, str], Any] = {}  # (module, name) -> object: a model's rows share one class

    def resolve(self, module: Any, qualname: Any) -> Any:
        """:func:`_resolve`, once per name."""
        key = (module, qualname)
        try:
            return self.resolved[key]
        except TypeError:  # not a pair of strings (a list from a malformed file): _resolve says what is wrong
            return _resolve(module, qualname)
        except KeyError:
            found = self.resolved[key] = _resolve(module, qualname)
            return found

    def value(self, doc: Any) -> Any:
        if doc is None or isinstance(doc, (bool, int, float, str)):
            return doc
        if not isinstance(doc, dict) or "t" not in doc:
            raise StateError(f"malformed state node {str(doc)[:60]!r}")
        t = doc["t"]
        if t == "float":
            return float(doc["v"])
        if t == "npscalar":
            return np.frombuffer(base64.b64decode(doc["v"]), dtype=np.dtype(doc["dtype"]))[0]
        if t == "ref":
            try:
                return self.memo[doc["id"]]
            except KeyError:
                raise StateError(f"state refers to object {doc['id']} before it is defined") from None
        n = doc["id"]
        if t == "list":
            out: Any = []
            self.memo[n] = out
            out.extend(self.value(v) for v in doc["v"])
        elif t == "dict":
            out = {}
            self.memo[n] = out
            for k, v in doc["v"]:
                out[self.value(k)] = self.value(v)
        elif t == "tuple":
            out = self.memo[n] = tuple(self.value(v) for v in doc["v"])
        elif t in ("set", "frozenset"):
            out = self.memo[n] = (set if t == "set" else frozenset)(self.value(v) for v in doc["v"])
        elif t == "bytes":
            out = self.memo[n] = base64.b64decode(doc["v"])
        elif t == "ndarray":
            flat = np.frombuffer(base64.b64decode(doc["v"]), dtype=np.dtype(doc["dtype"]))
            out = self.memo[n] = flat.reshape(doc["shape"]).copy()
        elif t == "method":
            owner, name = self.value(doc["self"]), doc["name"]
            # a bound method of the object and nothing else: an attribute such as a function's
            # __globals__ would hand the state the daemon's own module dictionaries
            out = getattr(owner, name, None) if isinstance(name, str) and not name.startswith("__") else None
            if not callable(out) or getattr(out, "__self__", None) is not owner:
                raise StateError(f"state refers to {name!r} of a {type(owner).__name__}: not one of its methods")
            self.memo[n] = out
        elif t == "global":
            out = self.memo[n] = self.resolve(doc["module"], doc["name"])
        elif t == "reduce":
            func = self.resolve(*doc["func"])
            args = self.value(doc["args"])
            _check_constructor(func, args)
            out = self.memo[n] = func(*args)
            if any(doc.get(k) is not None for k in ("state", "listitems", "dictitems")) and isinstance(
                out, (type, types.ModuleType, types.FunctionType, enum.Enum)
            ):  # not a new object (an enum member, a class a call handed back): changed for the whole process
                raise StateError(f"state changes {out!r}, built by {doc['func'][0]}.{doc['func'][1]}: not a new object")
            state = self.value(doc["state"])
            if state is not None:
                _set_state(out, state)
            if doc.get("listitems") is not None:
                for item in self.value(doc["listitems"]):
                    out.append(item)
            if doc.get("dictitems") is not None:
                for k, v in self.value(doc["dictitems"]):
                    out[k] = v
        else:
            raise StateError(f"unknown state node type {t!r}")
        return out


def _set_state(obj: Any, state: Any) -> None:
    setstate = getattr(type(obj), "__setstate__", None)
    if setstate is not None and setstate is not getattr(object, "__setstate__", None):
        obj.__setstate__(state)
        return
    slots = None
    if isinstance(state, tuple) and len(state) == 2:
        state, slots = state
    if state:
        obj.__dict__.update(state)
    if slots:
        for k, v in slots.items():
            setattr(obj, k, v)


def decode_state(doc: dict) -> Any:
    """Rebuild the model written by :func:`encode_state`; raises :class:`StateError`."""
    if not isinstance(doc, dict) or doc.get("format") not in READABLE_STATE_FORMATS or type(doc["format"]) is not int:
        raise StateError(f"unsupported model state format {doc.get('format') if isinstance(doc, dict) else doc!r}")
    try:
        return _Decoder().value(doc["root"])
    except StateError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, ImportError, OverflowError,
            RecursionError) as exc:
        raise StateError(f"malformed model state ({type(exc).__name__}: {exc})") from None


def save_model(model: Any, path: str | os.PathLike) -> None:
    """Write any River model (a pipeline with its scaler, a one-vs-rest model, a robustream learner) to
    ``path`` as a versioned, checksummed JSON file, atomically; no pickle. Raises :class:`StateError`
    naming what cannot be written. ``RGDSVMClassifier.save`` writes that learner alone.

    >>> import tempfile, pathlib
    >>> from river import linear_model, preprocessing
    >>> model = preprocessing.StandardScaler() | linear_model.LogisticRegression()
    >>> model.learn_one({"a": 1.0, "b": 20.0}, True)
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "model.json"
    >>> save_model(model, path)
    >>> load_model(path).predict_proba_one({"a": 0.5, "b": 10.0}) == model.predict_proba_one({"a": 0.5, "b": 10.0})
    True
    """
    from .. import persist

    persist.dump(encode_state(model), path, format_name=MODEL_STATE_FORMAT)


def load_model(path: str | os.PathLike) -> Any:
    """The model :func:`save_model` wrote, or the learner a robustream learner's own ``save`` wrote;
    ``persist.CorruptModelError`` on a damaged file, :class:`StateError` on a state this version
    cannot rebuild (only River and robustream classes are rebuilt)."""
    from .. import learners, persist

    try:
        doc = persist.load(path, format_name=MODEL_STATE_FORMAT)
    except persist.WrongFormatError as exc:
        try:  # RGDSVMClassifier.save and its peers write the learner alone, in their own format
            payload = persist.load(path)
        except persist.WrongFormatError:  # neither format; a damaged learner file says what is wrong with it
            raise exc from None
        cls = getattr(learners, str(payload.get("class")), None)
        if not (isinstance(cls, type) and hasattr(cls, "load")):
            raise exc from None
        return cls.load(path)
    return decode_state(doc)
