"""`mx.optimizer.contrib`: where MXNet 1.9 keeps `GroupAdaGrad` (defined with the
other adaptive rules, in `adaptive`)."""
from .adaptive import GroupAdaGrad

__all__ = ["GroupAdaGrad"]
