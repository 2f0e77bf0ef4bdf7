"""The table of ONNX translations: which function writes each minimx operator in ONNX.

A translation is a function ``(emitter, site)`` that appends the ONNX nodes
computing the site's outputs, or raises `Unsupported` with the reason when the
node cannot be expressed in ONNX. The modules `elementwise`, `layers`, `products`,
`attention`, `tensors`, `reductions`, `ordering`, `detection` and `recurrent` fill
`TRANSLATIONS` when imported; they follow MXNet 1.9's exporter (``mxnet.onnx``) in what they
produce, with what it missed made right.
"""
from __future__ import annotations

from collections.abc import Callable

from .emitter import Emitter, Site

OPSET = 17  # LayerNormalization is in ONNX from opset 17

Translation = Callable[[Emitter, Site], None]
TRANSLATIONS: dict[str, Translation] = {}

# Inputs that only feed a loss layer's label: MXNet's exporter leaves them out.
LABEL_INPUTS: dict[str, int] = {"SoftmaxOutput": 1, "LogisticRegressionOutput": 1,
                                "LinearRegressionOutput": 1, "MAERegressionOutput": 1}


def translates(*ops: str) -> Callable[[Translation], Translation]:
    """Register the decorated function as the translation of `ops` (canonical names)."""
    def register(fn: Translation) -> Translation:
        for op in ops:
            TRANSLATIONS[op] = fn
        return fn
    return register


def same_op(op_type: str) -> Translation:
    """A translation to one ONNX operator reading the same inputs."""
    def translate(e: Emitter, s: Site) -> None:
        e.add(op_type, s.inputs, s.outputs[0])
    return translate


# -- graphs that cannot be exported as they are ----------------------------------------

def refusal(op: str) -> str | None:
    """Why a whole kind of graph cannot be exported, for an operator of it; None if
    the operator is simply not translated."""
    if "quantize" in op or op.startswith("_contrib_requantize"):
        return ("a quantized graph: ONNX export takes the float32 model (export before "
                "mx.contrib.quantization.quantize_model)")
    if op.startswith("_sg_") or op == "_subgraph_op":
        return "a partitioned graph: export the symbol before partitioning or optimize_for"
    return None
