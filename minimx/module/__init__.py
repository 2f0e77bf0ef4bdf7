"""`mx.mod`: MXNet 1.x's Module API - bind a symbol, set or initialize its
parameters, run batches, train with `fit`, save and load checkpoints."""
from .base_module import BaseModule
from .bucketing_module import BucketingModule
from .module import Module
from .python_module import PythonLossModule, PythonModule
from .sequential_module import SequentialModule

__all__ = ["BaseModule", "BucketingModule", "Module", "PythonLossModule", "PythonModule",
           "SequentialModule"]
