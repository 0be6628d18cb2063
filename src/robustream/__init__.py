"""robustream: online linear classification that stays accurate when labels are wrong.

Public API: :class:`RGDSVC` (scikit-learn batch estimator), :class:`RGDSVMClassifier` (River), :mod:`robustream.solver`,
:class:`robustream.sketch.JLSketch`, :mod:`robustream.datasets`.
"""

from .batch import RGDSVC
from .learners import CoresetSVMClassifier, ORDIFilter, RampSVMClassifier, RGDSVMClassifier
from .sketch import JLSketch

__version__ = "0.1.0"
__all__ = ["RGDSVC", "RGDSVMClassifier", "CoresetSVMClassifier", "RampSVMClassifier", "ORDIFilter", "JLSketch", "__version__"]
