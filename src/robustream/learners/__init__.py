"""River learners (one module per family) over a shared window + coreset base."""

from .base import RebuildingLinearClassifier
from .coreset_svm import CoresetSVMClassifier
from .ordi import ORDIFilter
from .ramp import RampSVMClassifier
from .rgd import RGDSVMClassifier

__all__ = ["RebuildingLinearClassifier", "RGDSVMClassifier", "CoresetSVMClassifier", "RampSVMClassifier", "ORDIFilter"]
