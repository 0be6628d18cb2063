"""River learners (one module per family)."""

from .rgd import RGDSVMClassifier

__all__ = ["RGDSVMClassifier"]
