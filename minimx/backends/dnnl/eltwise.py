"""MXNet's elementwise activations as oneDNN eltwise algorithms.

One table serves both the standalone eltwise primitive and the post-ops of
fused convolutions, fully connected layers and deconvolutions, so that an
activation means the same thing wherever it is lowered. Only activations
whose oneDNN results on NaN and +-inf are the numpy path's are here (not exp:
NaN becomes inf), but for gelu, whose +inf gives NaN in oneDNN (inf on numpy):
it is here because MXNet's backend fuses FullyConnected + GELU. clip's NaN gives
a_min on both paths (see `ops.elemwise`).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from ... import onednn
from ...base import BackendError
from ...graph import Node
from .config import Support


class Eltwise(NamedTuple):
    """A oneDNN eltwise algorithm and its alpha / beta."""

    alg: str
    alpha: float | None = None
    beta: float | None = None


# An alpha or beta: the name of the parameter holding it, or how to compute it
# from the parameters (None: the algorithm's default).
Coefficient = str | Callable[[Any], float] | None


class _Algorithm(NamedTuple):
    """A oneDNN algorithm and where its alpha / beta come from."""

    alg: str
    alpha: Coefficient = None
    beta: Coefficient = None


def _reciprocal(p: Any) -> float:
    # In float32, as MXNet divides; x * (1/s) may differ from x / s in the last bit.
    with np.errstate(divide="ignore"):
        return float(np.float32(1) / np.float32(p.scalar))


# Operator -> algorithm, or act_type -> algorithm for operators with an
# act_type. Keys and act_types are those configs/dnnl.yaml accepts with
# `lower: eltwise` (`check_config`).
ALGORITHMS: dict[str, _Algorithm | dict[str, _Algorithm]] = {
    "Activation": {"relu": _Algorithm("relu"), "sigmoid": _Algorithm("logistic"),
                   "tanh": _Algorithm("tanh"), "softrelu": _Algorithm("soft_relu")},
    # relu's alpha is the negative slope
    "LeakyReLU": {"leaky": _Algorithm("relu", "slope"), "elu": _Algorithm("elu", "slope"),
                  "gelu": _Algorithm("gelu_erf")},
    "clip": _Algorithm("clip", "a_min", "a_max"),
    # relu of int8 / uint8 data: exact, and the range passes through
    "_contrib_quantized_act": {"relu": _Algorithm("relu")},
    "relu": _Algorithm("relu"), "sigmoid": _Algorithm("logistic"), "tanh": _Algorithm("tanh"),
    "sqrt": _Algorithm("sqrt"), "square": _Algorithm("square"), "abs": _Algorithm("abs"),
    # The scalar arithmetic, as alpha * x + beta.
    "_plus_scalar": _Algorithm("linear", None, "scalar"),
    "_minus_scalar": _Algorithm("linear", None, lambda p: -p.scalar),
    "_rminus_scalar": _Algorithm("linear", lambda p: -1.0, "scalar"),
    "_mul_scalar": _Algorithm("linear", "scalar"),
    "_div_scalar": _Algorithm("linear", _reciprocal),
}


def _coefficient(source: Coefficient, p: Any) -> float | None:
    if source is None:
        return None
    return p[source] if isinstance(source, str) else source(p)


def eltwise_of(node: Node) -> Eltwise | None:
    """The eltwise algorithm computing `node`, or None if it is not one."""
    found = ALGORITHMS.get(node.op or "")
    p = node.params
    if isinstance(found, dict) and p is not None:
        found = found.get(p.act_type)
    if not isinstance(found, _Algorithm) or p is None:
        return None
    return Eltwise(found.alg, _coefficient(found.alpha, p), _coefficient(found.beta, p))


def is_relu(op: onednn.PostOp) -> bool:
    """Whether post-op `op` is a plain relu (no negative slope)."""
    return op.kind == "eltwise" and op.alg == "relu" and op.alpha == 0


def clamp_bounds(post: Sequence[onednn.PostOp]) -> tuple[float, float] | None:
    """The bounds post-ops `post` clamp to, for the kernels of minimx's own
    that take an activation as bounds: none (``(-inf, inf)``, NaN kept), relu or
    clip (NaN becoming the lower bound); None for others, and for a clip to
    ``(-inf, inf)``, whose NaN the kernels would keep."""
    if not post:
        return -np.inf, np.inf
    if len(post) == 1 and is_relu(post[0]):
        return 0.0, np.inf
    if len(post) == 1 and post[0].kind == "eltwise" and post[0].alg == "clip" \
            and (post[0].alpha, post[0].beta) != (-np.inf, np.inf):
        return post[0].alpha, post[0].beta
    return None


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
