"""MXNet's elementwise activations as oneDNN eltwise algorithms.

One table serves both the standalone eltwise primitive and the post-ops of
fused convolutions, fully connected layers and deconvolutions, so that an
activation means the same thing wherever it is lowered. Only activations
whose oneDNN results on NaN and +-inf are the numpy path's are here: not gelu
(gelu_erf gives NaN for +inf) nor exp (NaN becomes inf). clip's NaN gives
a_min on both paths (see `ops.elemwise`).
"""
from __future__ import annotations

from typing import NamedTuple

from ...base import BackendError
from ...graph import Node
from .config import Support


class Eltwise(NamedTuple):
    """A oneDNN eltwise algorithm and its alpha / beta."""

    alg: str
    alpha: float | None = None
    beta: float | None = None


class _Algorithm(NamedTuple):
    """A oneDNN algorithm and the operator parameters giving its alpha / beta."""

    alg: str
    alpha: str | None = None
    beta: str | None = None


# Operator -> algorithm, or act_type -> algorithm for operators with an
# act_type. Keys and act_types are those configs/dnnl.yaml accepts with
# `lower: eltwise` (`check_config`).
ALGORITHMS: dict[str, _Algorithm | dict[str, _Algorithm]] = {
    "Activation": {"relu": _Algorithm("relu"), "sigmoid": _Algorithm("logistic"),
                   "tanh": _Algorithm("tanh"), "softrelu": _Algorithm("soft_relu")},
    # relu's alpha is the negative slope
    "LeakyReLU": {"leaky": _Algorithm("relu", "slope"), "elu": _Algorithm("elu", "slope")},
    "clip": _Algorithm("clip", "a_min", "a_max"),
    # relu of int8 / uint8 data: exact, and the range passes through
    "_contrib_quantized_act": {"relu": _Algorithm("relu")},
    "relu": _Algorithm("relu"), "sigmoid": _Algorithm("logistic"), "tanh": _Algorithm("tanh"),
    "sqrt": _Algorithm("sqrt"), "square": _Algorithm("square"), "abs": _Algorithm("abs"),
}


def eltwise_of(node: Node) -> Eltwise | None:
    """The eltwise algorithm computing `node`, or None if it is not one."""
    found = ALGORITHMS.get(node.op or "")
    p = node.params
    if isinstance(found, dict) and p is not None:
        found = found.get(p.act_type)
    if not isinstance(found, _Algorithm) or p is None:
        return None
    return Eltwise(found.alg, None if found.alpha is None else p[found.alpha],
                   None if found.beta is None else p[found.beta])


def check_config(support: Support) -> None:
    """Raise BackendError unless `ALGORITHMS` covers exactly the operators (and
    act_types) `support` lowers as eltwise."""
    listed = set(support.lowered_as("eltwise"))
    if listed != set(ALGORITHMS):
        raise BackendError(f"DNNL config: eltwise operators {sorted(listed)} differ from "
                           f"eltwise.ALGORITHMS {sorted(ALGORITHMS)}")
    for op, found in ALGORITHMS.items():
        allowed = support.ops[op]["params"].get("act_type")
        if isinstance(found, dict) and allowed != set(found):
            raise BackendError(f"DNNL config: {op} act_types {sorted(allowed or ['any'])} "
                               f"differ from eltwise.ALGORITHMS {sorted(found)}")
