"""One place that turns a learner name and ``key=value`` parameters into a River classifier.

Used by ``robustream serve`` and ``robustream replay`` (and the benchmarks), so both accept the
same names: ``rgd``, ``coreset``, ``ramp``, ``ordi`` and ``river:<module>.<Class>`` or
``river:<Class>`` for any River classifier (e.g. ``river:LogisticRegression``,
``river:linear_model.PAClassifier``).

>>> from robustream.learners.registry import make_learner, parse_params
>>> model = make_learner("rgd", parse_params(["rebuild_every=100", "outlier_fraction=0.1"]))
>>> type(model).__name__, model.rebuild_every, model.outlier_fraction
('RGDSVMClassifier', 100, 0.1)
>>> type(make_learner("river:LogisticRegression")).__name__
'LogisticRegression'
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import math
from typing import Any, Callable, Iterable

from river import base

# Modules searched for a bare ``river:<Class>`` name, in order.
_RIVER_MODULES = ("linear_model", "tree", "naive_bayes", "neighbors", "forest", "ensemble", "dummy")


def _robustream_learners() -> dict[str, Callable[..., base.Classifier]]:
    from . import CoresetSVMClassifier, RampSVMClassifier, RGDSVMClassifier

    found: dict[str, Callable[..., base.Classifier]] = {
        "rgd": RGDSVMClassifier,
        "coreset": CoresetSVMClassifier,
        "ramp": RampSVMClassifier,
    }
    try:
        from . import ORDIFilter  # type: ignore[attr-defined]
    except ImportError:  # pragma: no cover - ORDIFilter lands with its own module
        pass
    else:
        found["ordi"] = ORDIFilter
    return found


def learner_names() -> list[str]:
    """The built-in learner names (``river:<Class>`` is accepted besides these)."""
    return sorted(_robustream_learners())


def parse_value(text: str) -> Any:
    """``"3"`` -> 3, ``"0.1"`` -> 0.1, ``"true"`` -> True, ``"null"``/``"none"`` -> None, else the text
    (JSON values, and the numbers a command line writes that JSON does not: ``+1``, ``.2``, ``050``).

    Raises ValueError for a number that is not finite (``Infinity``, ``NaN``, ``1e400``): parameters
    and labels are stored as JSON in checkpoints, which has no such numbers.
    """
    low = text.strip().lower()
    if low in ("none", "null"):
        return None
    if low in ("true", "false"):
        return low == "true"
    if low.lstrip("+-") in ("inf", "infinity", "nan"):
        raise ValueError(f"{text.strip()!r} is not a finite number")
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        number = text.strip()
        if not _NUMBER.fullmatch(number):
            return text
        # what JSON does not write but a command line does: +1 (LIBSVM's labels), .2, 050, 1.
        value = int(number) if number.lstrip("+-").isdigit() else float(number)
    if not _finite(value):
        raise ValueError(f"{text.strip()!r} is not a finite number")
    return value


_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(map(_finite, value))
    if isinstance(value, dict):
        return all(map(_finite, value.values()))
    return True


def parse_params(pairs: Iterable[str], option: str = "--param") -> dict[str, Any]:
    """Parse repeated ``key=value`` options; raises ValueError naming the option and the bad item."""
    params: dict[str, Any] = {}
    for item in pairs:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{option} {item!r}: expected key=value")
        try:
            params[key.strip()] = parse_value(value)
        except ValueError as exc:
            raise ValueError(f"{option} {item!r}: {exc}") from None
    return params


def _river_class(name: str) -> Callable[..., base.Classifier]:
    import river

    if "." in name:
        module, _, cls_name = name.rpartition(".")
        candidates = [f"river.{module}"]
    else:
        cls_name, candidates = name, [f"river.{m}" for m in _RIVER_MODULES]
    for module_name in candidates:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        cls = getattr(module, cls_name, None)
        if isinstance(cls, type) and issubclass(cls, base.Classifier):
            return cls
    raise ValueError(f"no River classifier {name!r} (river {river.__version__})")


def make_learner(name: str, params: dict[str, Any] | None = None, *, multiclass: bool = False) -> base.Classifier:
    """Build the learner ``name`` with ``params``; raises ValueError with a one-line reason.

    With ``multiclass=True`` a binary-only learner comes wrapped in River's
    ``OneVsRestClassifier``, and a robustream learner with a ``noise_model`` parameter the caller
    left alone gets ``noise_model="one_vs_rest"`` (the binary flip model over-trims a rare class).
    """
    params = dict(params or {})
    if name.startswith("river:"):
        cls = _river_class(name[len("river:") :])
    else:
        known = _robustream_learners()
        if name not in known:
            raise ValueError(
                f"unknown learner {name!r} (choose one of {', '.join(sorted(known))} or river:<Class>)"
            )
        cls = known[name]
    accepted = inspect.signature(cls).parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values()):
        for key in params:
            if key not in accepted:
                raise ValueError(f"{cls.__name__} has no parameter {key!r} (its parameters: {', '.join(accepted)})")
    try:
        model = cls(**params)
    except TypeError as exc:
        raise ValueError(f"{cls.__name__}: bad parameter ({exc})") from None
    if not multiclass or model._multiclass:
        return model
    from river.multiclass import OneVsRestClassifier

    if "noise_model" in model._get_params() and "noise_model" not in params:
        model = cls(**params, noise_model="one_vs_rest")
    return OneVsRestClassifier(model)


def learner_flags(name: str, param_texts: Iterable[str]) -> str:
    """``--learner rgd --param a=1``: how a message names the learner the user asked for."""
    return f"--learner {name}" + "".join(f" --param {p}" for p in param_texts)


def trial_learner(name: str, params: dict[str, Any], y: Any, *, multiclass: bool = False) -> base.Classifier:
    """A throwaway copy of learner ``name`` that has learned and predicted one message (label ``y``):
    a parameter of the wrong type that only fails there (``l2="abc"``) raises ValueError (one line)
    now, not on every message later. A ``rebuild_lag`` is set to 0: a trial starts no rebuild worker
    process.

    >>> trial_learner("river:LogisticRegression", {"l2": "abc"}, True)
    Traceback (most recent call last):
    ...
    ValueError: the model fails on a first message (TypeError: VectorDict values must be real numbers)
    """
    params = {**params, "rebuild_lag": 0} if "rebuild_lag" in params else dict(params)
    model = make_learner(name, params, multiclass=multiclass)
    try:
        model.learn_one({"x": 1.0}, y)
        model.predict_proba_one({"x": 1.0})
    except Exception as exc:  # noqa: BLE001 - any failure here is a configuration error
        raise ValueError(f"the model fails on a first message ({type(exc).__name__}: {exc})") from None
    return model
