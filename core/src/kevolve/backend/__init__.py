"""The contract a backend implements: small ABCs, one module each."""

from kevolve.backend.base import Backend, TimingLanes
from kevolve.backend.classifier import Classifier, RooflineClassifier
from kevolve.backend.estimator import Estimator
from kevolve.backend.profiler import Profiler, RooflineProfiler
from kevolve.backend.runner import KernelFn, Runner
from kevolve.backend.toolchain import BuildResult, LanguageForm, Toolchain

__all__ = ["Backend", "BuildResult", "Classifier", "Estimator", "KernelFn", "LanguageForm", "Profiler",
           "RooflineClassifier", "RooflineProfiler", "Runner", "Toolchain"]
