"""Which nodes the DNNL backend supports: `minimx/configs/dnnl.yaml`, applied.

Needs: the YAML file shipped as package data (see its header for the
format). Guarantees: `Support.accepts(node)` is true only for an operator
listed there whose parameters, data dims and dtypes are allowed and whose
named shape check (CHECKS below) passes, and `Support.refusal(node)` says
why not otherwise (for the partition summary and the logs); `Support.lowering(op)`
is how the file says to lower it. The file is the one list of the backend's operators
(data a user can read and edit in one place, as the support table of any
backend is); the Python tables keyed by operator are checked against it.
Facts that inference has not found (shapes or dtypes of a graph partitioned
without them) do not reject a node; the subgraph operator checks dtypes
again when it runs.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
import yaml

from ...base import BackendError
from ...graph import Node
from ...onednn import pool_output_size
from ...subgraph.selector import SelectorNode
from ...subgraph.subgraph_op import inner_graph

CONFIG = ("minimx", "configs/dnnl.yaml")


def _normal(value: Any) -> Any:
    """A parameter value in a form comparable with YAML's."""
    if isinstance(value, (list, tuple)):
        return tuple(_normal(v) for v in value)
    if isinstance(value, (np.dtype, type)):
        return np.dtype(value).name
    return value


def _known(shape: Any) -> bool:
    return shape is not None and all(d > 0 for d in shape)


# Each check returns why oneDNN cannot run the node (the node is not named:
# the reason is shared by every node it refuses), or None.
def _same_shapes(node: SelectorNode) -> str | None:
    shapes = [s for s in node.input_shapes if _known(s)]
    if all(s == shapes[0] for s in shapes):
        return None
    return f"inputs of different shapes {', '.join(map(str, shapes))}"


def _broadcasts(a: Any, b: Any) -> bool:
    """Whether shape `b` broadcasts to `a` over size-1 dims (oneDNN's rule)."""
    return len(a) == len(b) and all(y in (x, 1) for x, y in zip(a, b, strict=True))


def _broadcast_to_first(node: SelectorNode) -> str | None:
    # oneDNN's binary broadcasts its second operand only, over size-1 dims.
    a, b = node.input_shapes
    if not (_known(a) and _known(b)) or _broadcasts(a, b):
        return None
    return f"broadcasts its first operand ({a} with {b}; oneDNN broadcasts the second only)"


def _broadcast_either(node: SelectorNode) -> str | None:
    # Commutative: the lowering swaps the operands when the first one broadcasts.
    a, b = node.input_shapes
    if not (_known(a) and _known(b)) or _broadcasts(a, b) or _broadcasts(b, a):
        return None
    return f"broadcasts both operands ({a} with {b}; oneDNN broadcasts one only)"


def _pool_geometry(p, size: tuple) -> tuple[tuple, tuple, tuple]:
    n = len(size)
    kernel, stride, pad = (tuple(v) or (dflt,) * n
                           for v, dflt in ((p.kernel, 1), (p.stride, 1), (p.pad, 0)))
    return kernel, stride, pad


def pool_include_pad(p, size: tuple) -> bool | None:
    """The count_include_pad oneDNN must use for MXNet's avg Pooling `p` over
    spatial `size`, or None when oneDNN cannot match MXNet. MXNet's divisor
    counts the symmetric padding (when count_include_pad, its default) but
    never the part of a 'full'-convention window past it; oneDNN counts both
    or neither."""
    include = p.count_include_pad is None or p.count_include_pad
    if p.global_pool or not include:
        return include
    kernel, stride, pad = _pool_geometry(p, size)
    past = any((pool_output_size(x, k, s, pp, p.pooling_convention) - 1) * s + k > x + 2 * pp
               for x, k, s, pp in zip(size, kernel, stride, pad, strict=True))
    if not past:
        return True
    return False if not any(pad) else None


def _pooling_window(node: SelectorNode) -> str | None:
    p = node.params
    shape = node.input_shapes[0]
    if p.pooling_convention == "same":
        # oneDNN's pooling primitive takes valid or full only (even with global_pool).
        return "pooling_convention 'same' (oneDNN's Pooling takes valid, full)"
    if p.global_pool or not _known(shape):
        return None
    size = shape[2:]
    kernel, stride, pad = _pool_geometry(p, size)
    if len(kernel) != len(size):
        return f"a {len(kernel)}-d kernel over {len(size)}-d data"
    if any(pp >= k for pp, k in zip(pad, kernel, strict=True)):
        return f"pad {pad} not smaller than the kernel {kernel}"
    for x, k, s, pp in zip(size, kernel, stride, pad, strict=True):
        out = pool_output_size(x, k, s, pp, p.pooling_convention)
        # oneDNN refuses a last window lying wholly in the padding.
        if out < 1 or (out - 1) * s - pp >= x:
            return f"a window lies wholly in the padding (kernel {kernel}, stride {stride}, " \
                   f"pad {pad}, {p.pooling_convention} convention, input {size})"
    if p.pool_type == "avg" and pool_include_pad(p, size) is None:
        return "avg with full convention and padding (oneDNN's divisor cannot match MXNet's)"
    return None


def _deconv_adj(node: SelectorNode) -> str | None:
    p = node.params
    if all(a <= pp for a, pp in zip(p.adj, p.pad or (0,) * len(p.adj), strict=False)):
        return None
    return f"adj {tuple(p.adj)} larger than pad {tuple(p.pad or ())}"


# The operators whose range outputs a subgraph knows when it compiles: calibrated,
# or passing their input's range on.
RANGE_MAKERS = frozenset({"_contrib_quantize_v2", "_contrib_quantize_asym", "_sg_mkldnn_conv",
                          "_sg_mkldnn_fully_connected", "_contrib_quantized_pooling",
                          "_contrib_quantized_flatten", "_contrib_quantized_elemwise_add",
                          "_contrib_quantized_concat", "_contrib_quantized_act",
                          "_contrib_quantized_batch_norm", "_contrib_requantize"})
# Those whose output range follows from their inputs' (known when theirs are): a sum
# without calibration is int32 over both operands' ranges.
RANGE_KEEPERS = frozenset({"_contrib_quantized_pooling", "_contrib_quantized_flatten",
                           "_contrib_quantized_concat", "_contrib_quantized_act",
                           "_contrib_quantized_elemwise_add"})


# Those whose range the DNNL backend can find at run time, without calibration
# (`quantized.py`: a reduction of the data, then the scale in plan steps).
RUN_TIME_RANGES = frozenset({"_contrib_quantize_v2", "_contrib_requantize"})


def calibrated(params: Any, op: str | None) -> bool:
    """Whether a quantized node's output range is fixed by its calibration (an FC
    with float output has none to fix)."""
    if op == "_sg_mkldnn_fully_connected" and params.get("enable_float_output"):
        return True
    return params.min_calib_range is not None and params.max_calib_range is not None


# Operators whose primitives are made for their weights' values (an INT8 LSTM's
# per-gate weight scales are attributes of oneDNN's primitives): a plan holding one
# compiles at its first run, with the weights.
COMPILED_FOR_WEIGHTS = frozenset({"_contrib_quantized_rnn"})


def range_inputs(node: Node) -> list[int]:
    """The positions of the min/max inputs whose values scale the node (the
    lowering reads them when it compiles)."""
    if node.op == "_contrib_dequantize" or (
            node.op == "_contrib_requantize" and not calibrated(node.operator()[1], node.op)):
        return []  # read at run time when not known (`quantized.py`)
    if node.op == "_contrib_requantize":
        return [1, 2]
    if node.op == "_contrib_quantized_elemwise_add":
        return [2, 3, 4, 5]
    if node.op == "_contrib_quantized_concat":
        n = node.operator()[1].num_args
        return list(range(n, 3 * n))
    if node.op == "_contrib_quantized_batch_norm":
        return [5, 6]
    if node.op == "_contrib_quantized_rnn":
        return [4, 5]   # data_scale, data_shift
    if node.op not in ("_sg_mkldnn_conv", "_sg_mkldnn_fully_connected"):
        return []
    if _fused_at_run_time(node.op, node.operator()[1]):
        return []  # read at run time (`quantized.py`)
    names = node.input_names()
    return [i for i, n in enumerate(names) if n in ("data_min", "data_max", "min_data",
                                                    "max_data", "sum_min", "sum_max")]


def _fused_at_run_time(op: str | None, p: Any) -> bool:
    """Whether a node is an uncalibrated quantized FC or convolution the DNNL backend
    runs, finding its ranges at run time: a convolution without a sum (oneDNN's sum
    post-op takes its scale when the primitive is made; MXNet remakes it, minimx
    leaves it on numpy)."""
    if op not in ("_sg_mkldnn_conv", "_sg_mkldnn_fully_connected") or not p.quantized:
        return False
    return not calibrated(p, op) and not p.get("with_sum")


def _range_at_run_time(node: Node) -> bool:
    """Whether the range outputs of `node` are found when a plan runs: an uncalibrated
    quantize, requantize, FC or convolution (in the DNNL backend), or an operator
    passing one on. A range from outside the subgraph is given: the plan compiles
    for its values."""
    if node.is_variable:
        return False
    if node.op in RUN_TIME_RANGES or _fused_at_run_time(node.op, node.operator()[1]):
        return not calibrated(node.operator()[1], node.op)
    if node.op in ("_contrib_quantized_pooling", "_contrib_quantized_flatten",
                   "_contrib_quantized_act"):
        return _range_at_run_time(node.inputs[1].node)
    return False


def _calibrated(node: SelectorNode) -> str | None:
    # An INT8 primitive's scales are fixed when it compiles: from calibrated
    # ranges, except those RUN_TIME_RANGES computes in the plan (calib_mode none).
    # MXNet's fused nodes also need a chain the table takes.
    p = node.params
    if node.op in ("_sg_mkldnn_conv", "_sg_mkldnn_fully_connected") and not p.quantized:
        return _chain_refusal(node)  # float32: lowered as minimx's own fused chains
    if _fused_at_run_time(node.op, p):
        if node.op == "_sg_mkldnn_conv" and node.input_dtypes and \
                node.input_dtypes[0] is not None and np.dtype(node.input_dtypes[0]) == np.uint8:
            return "uint8 data at a range found at run time (calib_mode none): MXNet refuses " \
                   "a range below 0 there, which a plan cannot check, the numpy kernel does"
        return _chain_refusal(node)
    if node.op == "_sg_mkldnn_conv" and not calibrated(p, node.op):
        return "a sum at a scale found at run time (calib_mode none; oneDNN's sum " \
               "post-op takes its scale when the primitive is made)"
    if node.op not in ("_contrib_dequantize", "_contrib_quantized_concat",
                       "_contrib_quantized_elemwise_add", *RUN_TIME_RANGES) \
            and not calibrated(p, node.op):
        return "no calibrated range (calib_mode none: ranges found at run time)"
    if node.op == "_contrib_quantize_v2" and node.input_dtypes and \
            node.input_dtypes[0] is not None and np.dtype(node.input_dtypes[0]) != np.float32:
        return f"{np.dtype(node.input_dtypes[0]).name} data (passed through, not quantized)"
    for i in range_inputs(node.node):
        producer = node.inputs[i].node
        if producer.is_variable:  # given: a subgraph compiles for its values
            continue
        if producer.op not in RANGE_MAKERS or _range_at_run_time(producer) or (
                producer.op not in RANGE_KEEPERS
                and not calibrated(producer.operator()[1], producer.op)):
            return f"its input {i} range is found at run time ({producer.name})"
    if node.op in ("_sg_mkldnn_conv", "_sg_mkldnn_fully_connected"):
        return _chain_refusal(node)
    return None


def _chain_refusal(node: SelectorNode) -> str | None:
    """Why the chain of MXNet's fused node cannot be lowered: a member the table
    refuses, or a clip before a sum (MXNet's oneDNN path refuses it too)."""
    for n in inner_graph(node.params).nodes:
        if n.is_variable:
            continue
        if n.op == "clip" and node.params.quantized and node.params.get("with_sum"):
            return "a clip before a sum (MXNet's oneDNN path refuses it too)"
        why = default_support().op_refusal(SelectorNode(
            n, (None,) * len(n.inputs), (None,) * n.num_outputs(), (), ()))
        if why is not None:
            return f"it fuses {n.label}: {why}"
    return None


CHECKS: dict[str, Callable[[SelectorNode], str | None]] = {
    "calibrated": _calibrated,
    "same_shapes": _same_shapes,
    "broadcast_to_first": _broadcast_to_first,
    "broadcast_either": _broadcast_either,
    "pooling_window": _pooling_window,
    "deconv_adj": _deconv_adj,
}


class Support:
    """The supported-operator table of one configuration (a parsed YAML mapping)."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        try:
            self.dtypes = frozenset(np.dtype(t) for t in config["dtypes"])
            self.ops: dict[str, dict[str, Any]] = {
                op: dict(rule or {}) for op, rule in config["ops"].items()}
        except (KeyError, TypeError, AttributeError) as exc:
            raise BackendError(f"DNNL config: malformed ({exc!r})") from None
        for op, rule in self.ops.items():
            unknown = set(rule) - {"lower", "ndim", "params", "check", "dtypes", "dtypes_of"}
            if unknown or "lower" not in rule or rule.get("check", "same_shapes") not in CHECKS:
                raise BackendError(f"DNNL config: bad rule for {op}: {rule}")
            rule["params"] = {k: {_normal(v) for v in vs}
                              for k, vs in (rule.get("params") or {}).items()}
            rule["dtypes"] = frozenset(np.dtype(t) for t in rule.get("dtypes", ())) or self.dtypes
            rule["dtypes_of"] = {name: frozenset(np.dtype(t) for t in types)
                                 for name, types in rule.get("dtypes_of", {}).items()}

    def lowering(self, op: str | None) -> str | None:
        """How the operator `op` is lowered (a key of `lower.LOWERINGS`), or None
        if the table does not list it."""
        rule = self.ops.get(op) if op else None
        return None if rule is None else rule["lower"]

    def lowered_as(self, kind: str) -> tuple[str, ...]:
        """The operators lowered as `kind`."""
        return tuple(op for op, rule in self.ops.items() if rule["lower"] == kind)

    def accepts(self, node: SelectorNode) -> bool:
        """Whether oneDNN can run this node (see the module docstring). The
        selector's question: no message is made for a node accepted."""
        return self.refusal(node) is None

    def refusal(self, node: SelectorNode) -> str | None:
        """Why oneDNN cannot run this node (``float16 (oneDNN runs float32)``,
        ``act_type=softsign (oneDNN runs relu, ...)``), or None if it can. The
        reason does not name the node: it is shared by every node it refuses."""
        foreign = self.foreign_dtypes(node)
        if foreign:
            names = ", ".join(sorted(t.name for t in self._dtypes(node)))
            return f"{', '.join(sorted(foreign))} (oneDNN runs {names})"
        return self.op_refusal(node)

    @property
    def dtype_names(self) -> str:
        return ", ".join(sorted(t.name for t in self.dtypes))

    def _dtypes(self, node: SelectorNode) -> frozenset[np.dtype]:
        """The dtypes of the node's row (the table's, where the row lists none)."""
        rule = self.ops.get(node.op) if node.op else None
        return self.dtypes if rule is None else rule["dtypes"]

    def foreign_dtypes(self, node: SelectorNode) -> set[str]:
        """The names of the node's known dtypes (inputs, outputs) not in its row's
        (for an input its row's `dtypes_of` names: not in those)."""
        allowed = self._dtypes(node)
        rule = self.ops.get(node.op) if node.op else None
        by_name = rule["dtypes_of"] if rule else {}
        names = node.node.input_names() if by_name else [""] * len(node.input_dtypes)
        checked = [(t, by_name.get(name, allowed))
                   for name, t in zip(names, node.input_dtypes, strict=False)]
        checked += [(t, allowed) for t in node.output_dtypes]
        return {np.dtype(t).name for t, ok in checked if t is not None and np.dtype(t) not in ok}

    def op_refusal(self, node: SelectorNode) -> str | None:
        """`refusal`, whatever the node's dtypes."""
        rule = self.ops.get(node.op) if node.op else None
        if rule is None:
            return f"{node.op} is not in the DNNL operator table (configs/dnnl.yaml)"
        data = node.input_shapes[0] if node.input_shapes else None
        if "ndim" in rule and data is not None and len(data) not in rule["ndim"]:
            return f"{len(data)}-d data (oneDNN's {node.op} takes {_listed(rule['ndim'])}-d)"
        for name, allowed in rule["params"].items():
            value = _normal(node.params[name])
            if value not in allowed:
                return f"{name}={value} (oneDNN's {node.op} takes {_listed(allowed)})"
        return CHECKS[rule["check"]](node) if "check" in rule else None


def _listed(values: Any) -> str:
    """Allowed values in a stable order (None, parameters left unset, first)."""
    return ", ".join(str(v) for v in sorted(values, key=lambda v: (v is not None, str(v))))


@cache
def default_support() -> Support:
    """The table from the packaged `configs/dnnl.yaml` (read once)."""
    text = resources.files(CONFIG[0]).joinpath(CONFIG[1]).read_text()
    return Support(yaml.safe_load(text))
