"""How each minimx operator is written in ONNX (opset `OPSET`).

`TRANSLATIONS` maps an operator's canonical name to a function ``(emitter, site)``
that appends the ONNX nodes computing the site's outputs, or raises `Unsupported`
with the reason when the node's parameters have no ONNX form. The one-to-one
operators come from small tables; the rest follow MXNet 1.9's exporter
(``mxnet.onnx``) in what they produce, with what it missed made right:
BatchNorm's ``fix_gamma`` (gamma read as 1), SoftmaxOutput over the flattened
trailing axes, PReLU's per-channel slope, Reshape's special codes.
"""
from __future__ import annotations

from collections.abc import Callable
from math import prod

import numpy as np

from .emitter import Emitter, OnnxNode, Site, Unsupported

OPSET = 17  # LayerNormalization is in ONNX from opset 17

Translation = Callable[[Emitter, Site], None]
TRANSLATIONS: dict[str, Translation] = {}

# Inputs that only feed a loss layer's label: MXNet's exporter leaves them out.
LABEL_INPUTS: dict[str, int] = {"SoftmaxOutput": 1}

_INT64_MAX = 2**63 - 1


def _translates(*ops: str) -> Callable[[Translation], Translation]:
    def register(fn: Translation) -> Translation:
        for op in ops:
            TRANSLATIONS[op] = fn
        return fn
    return register


def _same_op(op_type: str) -> Translation:
    """A translation to one ONNX operator reading the same inputs."""
    def translate(e: Emitter, s: Site) -> None:
        e.add(op_type, s.inputs, s.outputs[0])
    return translate


# -- one-to-one tables ------------------------------------------------------------

_UNARY = {
    "relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp", "log": "Log",
    "sqrt": "Sqrt", "abs": "Abs", "negative": "Neg", "floor": "Floor", "ceil": "Ceil",
    "erf": "Erf", "reciprocal": "Reciprocal", "sign": "Sign", "sin": "Sin", "cos": "Cos",
    "tan": "Tan", "arcsin": "Asin", "arccos": "Acos", "arctan": "Atan", "sinh": "Sinh",
    "cosh": "Cosh", "arcsinh": "Asinh", "arccosh": "Acosh", "arctanh": "Atanh",
    # no-ops at inference
    "_copy": "Identity", "BlockGrad": "Identity", "Dropout": "Identity",
    "Flatten": "Flatten",  # both keep axis 0 and join the rest
}
_BINARY = {
    "elemwise_add": "Add", "broadcast_add": "Add", "elemwise_sub": "Sub", "broadcast_sub": "Sub",
    "elemwise_mul": "Mul", "broadcast_mul": "Mul", "elemwise_div": "Div", "broadcast_div": "Div",
    "_maximum": "Max", "broadcast_maximum": "Max", "_minimum": "Min", "broadcast_minimum": "Min",
    "_power": "Pow", "broadcast_power": "Pow", "add_n": "Sum",
}
# _op_scalar: (ONNX operator, whether the scalar is the left operand)
_SCALAR = {
    "_plus_scalar": ("Add", False), "_minus_scalar": ("Sub", False),
    "_rminus_scalar": ("Sub", True), "_mul_scalar": ("Mul", False),
    "_div_scalar": ("Div", False), "_rdiv_scalar": ("Div", True),
    "_power_scalar": ("Pow", False), "_rpower_scalar": ("Pow", True),
    "_maximum_scalar": ("Max", False), "_minimum_scalar": ("Min", False),
}
_ACTIVATIONS = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "softrelu": "Softplus",
                "softsign": "Softsign"}

for _op, _onnx_op in {**_UNARY, **_BINARY}.items():
    TRANSLATIONS[_op] = _same_op(_onnx_op)


def _scalar_op(op_type: str, scalar_first: bool) -> Translation:
    def translate(e: Emitter, s: Site) -> None:
        scalar = e.const(f"{s.name}_scalar", s.p.scalar, s.dtype)
        operands = [scalar, s.inputs[0]] if scalar_first else [s.inputs[0], scalar]
        e.add(op_type, operands, s.outputs[0])
    return translate


for _op, (_onnx_op, _first) in _SCALAR.items():
    TRANSLATIONS[_op] = _scalar_op(_onnx_op, _first)


@_translates("Activation")
def _activation(e: Emitter, s: Site) -> None:
    e.add(_ACTIVATIONS[s.p.act_type], s.inputs, s.outputs[0])


@_translates("LeakyReLU")
def _leaky_relu(e: Emitter, s: Site) -> None:
    x, out, kind = s.inputs[0], s.outputs[0], s.p.act_type
    if kind == "leaky":
        e.add("LeakyRelu", [x], out, alpha=s.p.slope)
    elif kind == "rrelu":  # at inference the slope is the middle of its range
        e.add("LeakyRelu", [x], out, alpha=(s.p.lower_bound + s.p.upper_bound) / 2)
    elif kind == "elu":
        e.add("Elu", [x], out, alpha=s.p.slope)
    elif kind == "selu":  # ONNX's default alpha and gamma are SELU's constants
        e.add("Selu", [x], out)
    elif kind == "gelu":  # MXNet's gelu is the exact one: x/2 (1 + erf(x / sqrt 2))
        scaled = e.add("Div", [x, e.const(f"{s.name}_sqrt2", np.sqrt(2.0), s.dtype)])
        one_plus = e.add("Add", [e.add("Erf", [scaled]), e.const(f"{s.name}_one", 1, s.dtype)])
        half = e.add("Mul", [x, e.const(f"{s.name}_half", 0.5, s.dtype)])
        e.add("Mul", [half, one_plus], out)
    else:  # prelu: one slope per channel (axis 1), which ONNX broadcasts from the right
        channels = s.in_shapes[1][0]
        slope = e.add("Reshape", [s.inputs[1],
                                  e.ints(f"{s.name}_slope_shape", [channels] + [1] * (s.ndim - 2))])
        e.add("PRelu", [x, slope], out)


@_translates("clip")
def _clip(e: Emitter, s: Site) -> None:
    low = e.const(f"{s.name}_min", s.p.a_min, s.dtype)
    high = e.const(f"{s.name}_max", s.p.a_max, s.dtype)
    e.add("Clip", [s.inputs[0], low, high], s.outputs[0])


# -- layers ---------------------------------------------------------------------

def _window_attrs(s: Site) -> dict:
    nd = len(s.p.kernel)
    return {"kernel_shape": list(s.p.kernel), "strides": list(s.p.stride or (1,) * nd),
            "pads": list(s.p.pad or (0,) * nd) * 2}


def _conv_attrs(s: Site) -> dict:
    nd = len(s.p.kernel)
    return {**_window_attrs(s), "dilations": list(s.p.dilate or (1,) * nd),
            "group": s.p.num_group}


@_translates("Convolution")
def _convolution(e: Emitter, s: Site) -> None:
    e.add("Conv", s.inputs, s.outputs[0], **_conv_attrs(s))


@_translates("Deconvolution")
def _deconvolution(e: Emitter, s: Site) -> None:
    if s.p.target_shape:
        raise Unsupported("target_shape is not supported; give pad and adj instead")
    nd = len(s.p.kernel)
    e.add("ConvTranspose", s.inputs, s.outputs[0], **_conv_attrs(s),
          output_padding=list(s.p.adj or (0,) * nd))


@_translates("FullyConnected")
def _fully_connected(e: Emitter, s: Site) -> None:
    x, weight, out = s.inputs[0], s.inputs[1], s.outputs[0]
    bias = [] if s.p.no_bias else [s.inputs[2]]
    if s.p.flatten:
        flat = e.add("Flatten", [x], hint=f"{s.name}_data_flattened")
        e.add("Gemm", [flat, weight, *bias], out, alpha=1.0, beta=1.0, transA=0, transB=1)
        return
    product = e.add("MatMul", [x, e.add("Transpose", [weight], perm=[1, 0])])
    if bias:
        e.add("Add", [product, bias[0]], out)
    else:
        e.add("Identity", [product], out)


@_translates("BatchNorm")
def _batch_norm(e: Emitter, s: Site) -> None:
    if s.p.axis not in (1, 1 - s.ndim):
        raise Unsupported(f"axis={s.p.axis} (ONNX normalizes axis 1)")
    if s.p.output_mean_var:
        raise Unsupported("output_mean_var=True (the batch statistics are training outputs)")
    x, gamma, beta, mean, var = s.inputs
    if s.p.fix_gamma:  # MXNet reads gamma as 1, whatever the parameter holds
        gamma = e.const(f"{s.name}_gamma_fixed", np.ones(s.in_shapes[1]), s.dtype)
    e.add("BatchNormalization", [x, gamma, beta, mean, var], s.outputs[0],
          epsilon=s.p.eps, momentum=s.p.momentum)


@_translates("Pooling")
def _pooling(e: Emitter, s: Site) -> None:
    x, out, kind = s.inputs[0], s.outputs[0], s.p.pool_type
    if kind == "lp" and s.p.p_value != 2:
        raise Unsupported(f"p_value={s.p.p_value}: MXNet sums x^p, ONNX's LpPool |x|^p")
    if s.p.global_pool:
        if kind == "sum":
            mean = e.add("GlobalAveragePool", [x])
            size = e.const(f"{s.name}_size", prod(s.in_shapes[0][2:]), s.dtype)
            e.add("Mul", [mean, size], out)
        elif kind == "lp":
            e.add("GlobalLpPool", [x], out, p=s.p.p_value)
        else:
            e.add({"avg": "GlobalAveragePool", "max": "GlobalMaxPool"}[kind], [x], out)
        return
    if s.p.pooling_convention == "same":
        raise Unsupported("pooling_convention='same'")
    ceil_mode = int(s.p.pooling_convention == "full")
    attrs = _window_attrs(s)
    if kind == "max":
        e.add("MaxPool", [x], out, ceil_mode=ceil_mode, **attrs)
    elif kind == "avg":
        include_pad = s.p.count_include_pad is None or s.p.count_include_pad
        e.add("AveragePool", [x], out, ceil_mode=ceil_mode, count_include_pad=int(include_pad),
              **attrs)
    elif kind == "lp" and not ceil_mode:
        e.add("LpPool", [x], out, p=s.p.p_value, **attrs)
    elif kind == "sum" and not ceil_mode:  # every window is whole: the mean times its size
        mean = e.add("AveragePool", [x], count_include_pad=1, **attrs)
        e.add("Mul", [mean, e.const(f"{s.name}_size", prod(s.p.kernel), s.dtype)], out)
    else:
        raise Unsupported(f"pool_type={kind!r} with pooling_convention='full'")


@_translates("LayerNorm")
def _layer_norm(e: Emitter, s: Site) -> None:
    if s.p.axis not in (-1, s.ndim - 1):
        raise Unsupported(f"axis={s.p.axis} (ONNX normalizes the trailing axes together)")
    if s.p.output_mean_var:
        raise Unsupported("output_mean_var=True")
    e.add("LayerNormalization", s.inputs, s.outputs[0], axis=-1, epsilon=s.p.eps)


@_translates("Embedding")
def _embedding(e: Emitter, s: Site) -> None:
    indices = e.add("Cast", [s.inputs[0]], to=np.dtype(np.int64))
    e.add("Gather", [s.inputs[1], indices], s.outputs[0], axis=0)


# -- softmax family ----------------------------------------------------------------

def _softmax_flat(e: Emitter, s: Site, op_type: str = "Softmax") -> None:
    """`op_type` over all axes but the first, as MXNet's instance-wise softmax layers do."""
    x, out = s.inputs[0], s.outputs[0]
    if s.ndim <= 2:
        e.add(op_type, [x], out, axis=-1)
        return
    flat = e.add(op_type, [e.add("Flatten", [x], axis=1)], axis=1)
    e.add("Reshape", [flat, e.add("Shape", [x])], out)


@_translates("softmax", "log_softmax")
def _softmax(e: Emitter, s: Site) -> None:
    if s.p.use_length:
        raise Unsupported("use_length=True")
    x = s.inputs[0]
    if s.p.temperature is not None and s.p.temperature != 1:
        x = e.add("Div", [x, e.const(f"{s.name}_temperature", s.p.temperature, s.dtype)])
    op_type = "Softmax" if s.node.op == "softmax" else "LogSoftmax"
    out_dtype = s.p.dtype
    if out_dtype is None or out_dtype == s.dtype:
        e.add(op_type, [x], s.outputs[0], axis=s.p.axis)
    else:
        e.add("Cast", [e.add(op_type, [x], axis=s.p.axis)], s.outputs[0], to=out_dtype)


@_translates("SoftmaxOutput")
def _softmax_output(e: Emitter, s: Site) -> None:
    if s.p.preserve_shape:
        e.add("Softmax", [s.inputs[0]], s.outputs[0], axis=-1)
    elif s.p.multi_output:
        e.add("Softmax", [s.inputs[0]], s.outputs[0], axis=1)
    else:
        _softmax_flat(e, s)


@_translates("SoftmaxActivation")
def _softmax_activation(e: Emitter, s: Site) -> None:
    if s.p.mode == "channel":
        e.add("Softmax", [s.inputs[0]], s.outputs[0], axis=1)
    else:
        _softmax_flat(e, s)


# -- shapes and axes -----------------------------------------------------------------



@_translates("Concat")
def _concat(e: Emitter, s: Site) -> None:
    e.add("Concat", s.inputs, s.outputs[0], axis=s.p.dim)


@_translates("Cast")
def _cast(e: Emitter, s: Site) -> None:
    e.add("Cast", s.inputs, s.outputs[0], to=s.p.dtype)


def _plain_reshape(shape: tuple[int, ...]) -> bool:
    """Whether a Reshape `shape` means the same to ONNX: only sizes, 0 (copy the
    dimension at that position) and one -1."""
    return all(d >= -1 for d in shape) and list(shape).count(-1) <= 1


@_translates("Reshape")
def _reshape(e: Emitter, s: Site) -> None:
    spec = s.p.shape or s.p.target_shape
    if not s.dynamic:  # the shape inference resolved every special code
        target = list(s.out_shapes[0])
    elif not s.p.reverse and s.p.shape and _plain_reshape(spec):
        target = list(spec)
    else:
        raise Unsupported(f"shape={spec} with reverse={s.p.reverse} needs fixed input shapes "
                          "(dynamic=True)")
    e.add("Reshape", [s.inputs[0], e.ints(f"{s.name}_shape", target)], s.outputs[0])


@_translates("transpose")
def _transpose(e: Emitter, s: Site) -> None:
    perm = list(s.p.axes) if s.p.axes else list(range(s.ndim))[::-1]
    e.add("Transpose", s.inputs, s.outputs[0], perm=[a % s.ndim for a in perm])


@_translates("SwapAxis")
def _swap_axis(e: Emitter, s: Site) -> None:
    perm = list(range(s.ndim))
    a, b = s.p.dim1 % s.ndim, s.p.dim2 % s.ndim
    perm[a], perm[b] = perm[b], perm[a]
    e.add("Transpose", s.inputs, s.outputs[0], perm=perm)


@_translates("expand_dims")
def _expand_dims(e: Emitter, s: Site) -> None:
    e.add("Unsqueeze", [s.inputs[0], e.ints(f"{s.name}_axes", [s.p.axis])], s.outputs[0])


@_translates("slice_axis")
def _slice_axis(e: Emitter, s: Site) -> None:
    end = _INT64_MAX if s.p.end is None else s.p.end
    e.add("Slice", [s.inputs[0], e.ints(f"{s.name}_begin", [s.p.begin]),
                    e.ints(f"{s.name}_end", [end]), e.ints(f"{s.name}_axis", [s.p.axis])],
          s.outputs[0])


# reductions: (ONNX operator); ReduceSum takes its axes as an input from opset 13,
# the others as an attribute until opset 18
_REDUCTIONS = {"sum": "ReduceSum", "mean": "ReduceMean", "max": "ReduceMax", "min": "ReduceMin"}


def _reduced_axes(s: Site) -> list[int]:
    axis = s.p.axis
    given = () if axis is None else (axis,) if isinstance(axis, int) else tuple(axis)
    chosen = {a % s.ndim for a in given} if given else set(range(s.ndim))
    if s.p.exclude:
        chosen = set(range(s.ndim)) - chosen if given else set()
    return sorted(chosen)


@_translates(*_REDUCTIONS)
def _reduce(e: Emitter, s: Site) -> None:
    op_type, axes = _REDUCTIONS[str(s.node.op)], _reduced_axes(s)
    if not axes:
        e.add("Identity", s.inputs, s.outputs[0])
        return
    # MXNet keeps one dimension when every axis goes; ONNX would give a scalar.
    to_scalar = len(axes) == s.ndim and not s.p.keepdims
    out = None if to_scalar else s.outputs[0]
    keepdims = int(s.p.keepdims or to_scalar)
    if op_type == "ReduceSum":
        reduced = e.add(op_type, [s.inputs[0], e.ints(f"{s.name}_axes", axes)], out,
                        keepdims=keepdims)
    else:
        reduced = e.add(op_type, s.inputs, out, axes=axes, keepdims=keepdims)
    if to_scalar:
        e.add("Reshape", [reduced, e.ints(f"{s.name}_shape", [1])], s.outputs[0])


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


# -- comparisons, creation, resizing, splitting (issue 15's families) -------------------

_COMPARISONS = {"greater": "Greater", "greater_equal": "GreaterOrEqual", "lesser": "Less",
                "lesser_equal": "LessOrEqual", "equal": "Equal", "not_equal": "Equal"}


def _comparison(op_type: str, negate: bool, scalar: bool) -> Translation:
    """MXNet's comparisons give 1 or 0 in the inputs' dtype; ONNX's give booleans."""
    def translate(e: Emitter, s: Site) -> None:
        rhs = e.const(f"{s.name}_scalar", s.p.scalar, s.dtype) if scalar else s.inputs[1]
        result = e.add(op_type, [s.inputs[0], rhs])
        if negate:
            result = e.add("Not", [result])
        e.add("Cast", [result], s.outputs[0], to=s.dtype)
    return translate


for _name, _onnx_op in _COMPARISONS.items():
    for _op, _scalar in ((f"_{_name}", False), (f"broadcast_{_name}", False),
                         (f"_{_name}_scalar", True)):
        TRANSLATIONS[_op] = _comparison(_onnx_op, _name == "not_equal", _scalar)


@_translates("where")
def _where(e: Emitter, s: Site) -> None:
    if len(s.in_shapes[0]) != len(s.in_shapes[1]):
        raise Unsupported("a condition of lower rank than x (MXNet picks whole rows)")
    condition = e.add("Cast", [s.inputs[0]], to=np.dtype(bool))
    e.add("Where", [condition, s.inputs[1], s.inputs[2]], s.outputs[0])


@_translates("zeros_like", "ones_like")
def _fill_like(e: Emitter, s: Site) -> None:
    value = e.const(f"{s.name}_value", 0 if s.node.op == "zeros_like" else 1, s.dtype)
    e.add("Expand", [value, e.add("Shape", s.inputs)], s.outputs[0])


def _constant_output(e: Emitter, s: Site, value: np.ndarray) -> None:
    e.add("Identity", [e.const(f"{s.name}_value", value)], s.outputs[0])


@_translates("_zeros", "_ones", "_full")
def _filled(e: Emitter, s: Site) -> None:
    fill = {"_zeros": 0, "_ones": 1}.get(str(s.node.op), getattr(s.p, "value", 0))
    _constant_output(e, s, np.full(s.out_shapes[0], fill, s.p.dtype))


@_translates("_arange")
def _arange(e: Emitter, s: Site) -> None:
    if s.p.infer_range:
        raise Unsupported("infer_range=True")
    start, stop = (0, s.p.start) if s.p.stop is None else (s.p.start, s.p.stop)
    values = np.repeat(np.arange(start, stop, s.p.step), s.p.repeat)
    _constant_output(e, s, values.astype(s.p.dtype))


@_translates("shape_array")
def _shape_array(e: Emitter, s: Site) -> None:
    e.add("Shape", s.inputs, s.outputs[0])


@_translates("L2Normalization")
def _l2_normalization(e: Emitter, s: Site) -> None:
    axes = {"instance": range(1, s.ndim), "channel": [1], "spatial": range(2, s.ndim)}
    squares = e.add("Mul", [s.inputs[0], s.inputs[0]])
    total = e.add("ReduceSum", [squares, e.ints(f"{s.name}_axes", list(axes[s.p.mode]))],
                  keepdims=1)
    eps = e.const(f"{s.name}_eps", s.p.eps, s.dtype)
    e.add("Div", [s.inputs[0], e.add("Sqrt", [e.add("Add", [total, eps])])], s.outputs[0])


@_translates("_contrib_AdaptiveAvgPooling2D")
def _adaptive_avg_pooling(e: Emitter, s: Site) -> None:
    size_in, size_out = s.in_shapes[0][2:], s.out_shapes[0][2:]
    if all(o == 1 for o in size_out):
        e.add("GlobalAveragePool", s.inputs, s.outputs[0])
        return
    if any(i % o for i, o in zip(size_in, size_out, strict=True)):
        raise Unsupported(f"output {size_out} does not divide input {size_in} (MXNet's "
                          "windows then overlap unevenly)")
    kernel = [i // o for i, o in zip(size_in, size_out, strict=True)]
    e.add("AveragePool", s.inputs, s.outputs[0], kernel_shape=kernel, strides=kernel)


@_translates("_contrib_BilinearResize2D")
def _bilinear_resize(e: Emitter, s: Site) -> None:
    batch_channels = e.add("Slice", [e.add("Shape", [s.inputs[0]]), e.ints(f"{s.name}_0", [0]),
                                     e.ints(f"{s.name}_2", [2])])
    sizes = e.add("Concat", [batch_channels, e.ints(f"{s.name}_hw", s.out_shapes[0][2:])],
                  axis=0)
    mode = "align_corners" if s.p.align_corners else "half_pixel"
    e.add("Resize", [s.inputs[0], "", "", sizes], s.outputs[0], mode="linear",
          coordinate_transformation_mode=mode)


@_translates("SliceChannel")
def _slice_channel(e: Emitter, s: Site) -> None:
    if not s.p.squeeze_axis:
        e.nodes.append(OnnxNode("Split", s.inputs, s.outputs, {"axis": s.p.axis}, s.outputs[0]))
        return
    parts = [e.fresh(f"{o}_unsqueezed") for o in s.outputs]
    e.nodes.append(OnnxNode("Split", s.inputs, parts, {"axis": s.p.axis}, parts[0]))
    axes = e.ints(f"{s.name}_axes", [s.p.axis])
    for part, out in zip(parts, s.outputs, strict=True):
        e.add("Squeeze", [part, axes], out)


@_translates("stack")
def _stack(e: Emitter, s: Site) -> None:
    axes = e.ints(f"{s.name}_axes", [s.p.axis])
    e.add("Concat", [e.add("Unsqueeze", [x, axes]) for x in s.inputs], s.outputs[0],
          axis=s.p.axis)


@_translates("tile")
def _tile(e: Emitter, s: Site) -> None:
    x, reps = s.inputs[0], list(s.p.reps)
    if len(reps) > s.ndim:  # MXNet prepends dimensions to the data
        x = e.add("Unsqueeze", [x, e.ints(f"{s.name}_new_axes", list(range(len(reps) - s.ndim)))])
    reps = [1] * (s.ndim - len(reps)) + reps
    e.add("Tile", [x, e.ints(f"{s.name}_reps", reps)], s.outputs[0])


@_translates("broadcast_axis", "broadcast_to")
def _broadcast(e: Emitter, s: Site) -> None:
    if s.node.op == "broadcast_to":  # 0 keeps the dimension, as 1 does to Expand
        target = [d or 1 for d in s.p.shape]
    else:
        target = [1] * s.ndim
        axes = (s.p.axis,) if isinstance(s.p.axis, int) else s.p.axis
        sizes = (s.p.size,) if isinstance(s.p.size, int) else s.p.size
        for axis, size in zip(axes, sizes, strict=True):
            target[axis % s.ndim] = size
    e.add("Expand", [s.inputs[0], e.ints(f"{s.name}_shape", target)], s.outputs[0])


@_translates("slice_like")
def _slice_like(e: Emitter, s: Site) -> None:
    axes = sorted(a % s.ndim for a in s.p.axes) if s.p.axes else list(range(s.ndim))
    axes_name = e.ints(f"{s.name}_axes", axes)
    ends = e.add("Gather", [e.add("Shape", [s.inputs[1]]), axes_name], axis=0)
    e.add("Slice", [s.inputs[0], e.ints(f"{s.name}_starts", [0] * len(axes)), ends, axes_name],
          s.outputs[0])
