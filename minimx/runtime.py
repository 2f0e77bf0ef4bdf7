"""`mx.runtime`: MXNet's query of the features a build has, answered for minimx.

The names are those MXNet 1.9.1's pip wheel lists, in its order; each says whether
minimx has the thing here. minimx compiles no CPU kernels of its own for a target ISA:
numpy and oneDNN choose theirs when they run, so the ``CPU_*`` and ``F16C`` answers are
this CPU's (as numpy detects it). ``MKLDNN`` and ``OPENMP`` are whether the oneDNN
backend (built with OpenMP) loads; the ``BLAS_*`` answers name numpy's BLAS; ``OPENCV``
is whether image decoding works (Pillow stands in for OpenCV); ``INT64_TENSOR_SIZE`` is
true (numpy indexes with 64 bits); ``PROFILER`` is true (`mx.profiler` records).

>>> import minimx as mx
>>> mx.runtime.Features().is_enabled("CUDA")
False
"""
from __future__ import annotations

import importlib
import importlib.util
from collections import OrderedDict

import numpy as np

from . import onednn
from .base import MinimxError

NAMES = ("CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT", "CPU_SSE", "CPU_SSE2", "CPU_SSE3",
         "CPU_SSE4_1", "CPU_SSE4_2", "CPU_SSE4A", "CPU_AVX", "CPU_AVX2", "OPENMP", "SSE", "F16C",
         "JEMALLOC", "BLAS_OPEN", "BLAS_ATLAS", "BLAS_MKL", "BLAS_APPLE", "LAPACK", "MKLDNN",
         "OPENCV", "CAFFE", "PROFILER", "DIST_KVSTORE", "CXX14", "INT64_TENSOR_SIZE",
         "SIGNAL_HANDLER", "DEBUG", "TVM_OP")

# MXNet's CPU feature names and numpy's for the same extension.
_CPU = {"CPU_SSE": "SSE", "CPU_SSE2": "SSE2", "CPU_SSE3": "SSE3", "CPU_SSE4_1": "SSE41",
        "CPU_SSE4_2": "SSE42", "CPU_AVX": "AVX", "CPU_AVX2": "AVX2", "F16C": "F16C"}
# MXNet's BLAS names and a word of the BLAS's name in numpy's configuration.
_BLAS = {"BLAS_OPEN": "openblas", "BLAS_ATLAS": "atlas", "BLAS_MKL": "mkl",
         "BLAS_APPLE": "accelerate"}


class Feature:
    """One feature: its `name` and whether it is `enabled`."""

    def __init__(self, name: str, enabled: bool) -> None:
        self.name, self.enabled = name, enabled

    def __repr__(self) -> str:
        return f"{'✔' if self.enabled else '✖'} {self.name}"


def _truths() -> dict[str, bool]:
    """Each of NAMES that holds for minimx here."""
    # numpy's detection of this CPU's extensions (no public API gives it)
    cpu = getattr(importlib.import_module("numpy._core._multiarray_umath"), "__cpu_features__",
                  {})
    blas = np.show_config(mode="dicts").get("Build Dependencies", {}).get("blas", {})
    blas_name = str(blas.get("name", "")).lower()
    dnnl = onednn.available()
    true = {"OPENMP": dnnl, "MKLDNN": dnnl, "LAPACK": True, "PROFILER": True,
            "INT64_TENSOR_SIZE": True, "OPENCV": importlib.util.find_spec("PIL") is not None}
    true.update({name: bool(cpu.get(numpy_name)) for name, numpy_name in _CPU.items()})
    true.update({name: word in blas_name for name, word in _BLAS.items()})
    return {name: true.get(name, False) for name in NAMES}


def feature_list() -> list[Feature]:
    """The features, in MXNet's order."""
    return [Feature(name, enabled) for name, enabled in _truths().items()]


class Features(OrderedDict[str, Feature]):
    """The features by name (one instance per process, filled when first made, as MXNet's)."""

    instance: Features | None = None

    def __new__(cls) -> Features:
        if cls.instance is None:
            cls.instance = super().__new__(cls)
            OrderedDict.__init__(cls.instance, [(f.name, f) for f in feature_list()])
        return cls.instance

    def __repr__(self) -> str:
        return str(list(self.values()))

    def is_enabled(self, feature_name: str) -> bool:
        """Whether `feature_name` (any case) holds; MinimxError (a RuntimeError, as MXNet
        raises) for a name not among the features."""
        feature_name = feature_name.upper()
        if feature_name not in self:
            raise MinimxError(f"Feature '{feature_name}' is unknown, known features are: "
                              f"{list(self.keys())}")
        return self[feature_name].enabled


__all__ = ["Feature", "Features", "NAMES", "feature_list"]
