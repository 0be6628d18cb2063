"""robustream: online linear classification that stays accurate when labels are wrong.

Public API: :class:`RGDSVC` (scikit-learn batch estimator); the River learners :class:`RGDSVMClassifier`,
:class:`CoresetSVMClassifier`, :class:`RampSVMClassifier` and :class:`ORDIFilter`; :mod:`robustream.solver`,
:class:`robustream.sketch.JLSketch`, :mod:`robustream.datasets`, :mod:`robustream.evaluate` (label-noise streams,
prequential and holdout scores); :func:`save_model` / :func:`load_model` (River models, pipelines included, as
checksummed JSON).
"""

from __future__ import annotations

import os
from typing import Any

from .batch import RGDSVC
from .learners import CoresetSVMClassifier, ORDIFilter, RampSVMClassifier, RGDSVMClassifier
from .sketch import JLSketch


def save_model(model: Any, path: str | os.PathLike) -> None:
    """Write any River model, pipelines included, as checksummed JSON (see :func:`robustream.daemon.state.save_model`).

    >>> import tempfile, pathlib
    >>> from river import preprocessing
    >>> from robustream import RGDSVMClassifier, load_model, save_model
    >>> model = preprocessing.StandardScaler() | RGDSVMClassifier(rebuild_every=20)
    >>> for i in range(40):
    ...     model.learn_one({"a": float(i % 2), "b": (i % 5) / 5}, i % 2 == 1)
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "model.json"
    >>> save_model(model, path)
    >>> load_model(path).predict_proba_one({"a": 1.0, "b": 0.2}) == model.predict_proba_one({"a": 1.0, "b": 0.2})
    True
    """
    from .daemon.state import save_model as save

    save(model, path)


def load_model(path: str | os.PathLike) -> Any:
    """The model :func:`save_model` wrote (see :func:`robustream.daemon.state.load_model`); the example of
    :func:`save_model` loads one."""
    from .daemon.state import load_model as load

    return load(path)


__version__ = "0.1.0"
__all__ = ["RGDSVC", "RGDSVMClassifier", "CoresetSVMClassifier", "RampSVMClassifier", "ORDIFilter", "JLSketch", "save_model",
           "load_model", "__version__"]
