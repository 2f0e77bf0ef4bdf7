"""Layers in ONNX: convolutions, pooling, normalizations, fully connected, embedding,
resizing, the softmax family and the loss layers (their prediction). BatchNorm's
``fix_gamma`` reads gamma as 1 (MXNet's exporter passed the stored gamma);
SoftmaxOutput is a softmax over the flattened trailing axes, as MXNet computes it;
PReLU's slope is per channel."""
from __future__ import annotations

from math import prod

import numpy as np

from .emitter import Emitter, Site, Unsupported
from .registry import translates


def _window_attrs(s: Site) -> dict:
    nd = len(s.p.kernel)
    return {"kernel_shape": list(s.p.kernel), "strides": list(s.p.stride or (1,) * nd),
            "pads": list(s.p.pad or (0,) * nd) * 2}


def _conv_attrs(s: Site) -> dict:
    nd = len(s.p.kernel)
    return {**_window_attrs(s), "dilations": list(s.p.dilate or (1,) * nd),
            "group": s.p.num_group}


@translates("Convolution")
def _convolution(e: Emitter, s: Site) -> None:
    e.add("Conv", s.inputs, s.outputs[0], **_conv_attrs(s))


@translates("Deconvolution")
def _deconvolution(e: Emitter, s: Site) -> None:
    if s.p.target_shape:
        raise Unsupported("target_shape is not supported; give pad and adj instead")
    nd = len(s.p.kernel)
    e.add("ConvTranspose", s.inputs, s.outputs[0], **_conv_attrs(s),
          output_padding=list(s.p.adj or (0,) * nd))


@translates("FullyConnected")
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


@translates("BatchNorm")
def _batch_norm(e: Emitter, s: Site) -> None:
    if s.p.axis not in (1, 1 - s.ndim):
        raise Unsupported(f"axis={s.p.axis} (ONNX normalizes axis 1)")
    if s.p.output_mean_var:
        raise Unsupported("output_mean_var=True (the batch statistics are training outputs)")
    x, gamma, beta, mean, var = s.inputs
    if s.p.fix_gamma:  # MXNet reads gamma as 1, whatever the parameter holds
        # in gamma's dtype, which ONNX wants beta's: float32 also for float16 data
        gamma = e.const(f"{s.name}_gamma_fixed", np.ones(s.in_shapes[1]), s.in_dtypes[1])
    e.add("BatchNormalization", [x, gamma, beta, mean, var], s.outputs[0],
          epsilon=s.p.eps, momentum=s.p.momentum)


@translates("Pooling")
def _pooling(e: Emitter, s: Site) -> None:
    x, out, kind = s.inputs[0], s.outputs[0], s.p.pool_type
    if kind == "sum" or (kind == "lp" and s.p.p_value != 2):
        _sum_pool(e, s)
        return
    if s.p.global_pool:
        if kind == "lp":
            e.add("GlobalLpPool", [x], out, p=s.p.p_value)
        else:
            e.add({"avg": "GlobalAveragePool", "max": "GlobalMaxPool"}[kind], [x], out)
        return
    if s.p.pooling_convention == "same":
        raise Unsupported("pooling_convention='same'")
    ceil_mode = int(s.p.pooling_convention == "full")
    attrs = _window_attrs(s)
    dropped = _windows_dropped(s) if ceil_mode and kind in ("max", "avg") else []
    if any(dropped):
        _pool_past_input(e, s, dropped, attrs)
    elif kind == "max":
        e.add("MaxPool", [x], out, ceil_mode=ceil_mode, **attrs)
    elif kind == "avg":
        include_pad = s.p.count_include_pad is None or s.p.count_include_pad
        e.add("AveragePool", [x], out, ceil_mode=ceil_mode, count_include_pad=int(include_pad),
              **attrs)
    elif kind == "lp" and not ceil_mode:
        e.add("LpPool", [x], out, p=s.p.p_value, **attrs)
    else:
        raise Unsupported(f"pool_type={kind!r} with pooling_convention='full'")


def _sum_pool(e: Emitter, s: Site) -> None:
    """Sum pooling, and MXNet's lp pooling for p 1 and 3, which sums x^p (not ONNX's
    LpPool's |x|^p) and takes the root with its sign (1: none; 3: cbrt): a mean times
    the window's size, as ONNX has no sum pooling."""
    p = s.p.p_value if s.p.pool_type == "lp" else 1
    x = s.inputs[0]
    if p != 1:
        x = e.add("Pow", [x, e.const(f"{s.name}_p", p, s.dtype)])
    total = s.outputs[0] if p == 1 else None
    if s.p.global_pool:
        mean = e.add("GlobalAveragePool", [x])
        size = prod(s.in_shapes[0][2:])
    elif s.p.pooling_convention == "valid":  # every window is whole
        mean = e.add("AveragePool", [x], count_include_pad=1, **_window_attrs(s))
        size = prod(s.p.kernel)
    else:
        raise Unsupported(f"pool_type={s.p.pool_type!r} with "
                          f"pooling_convention={s.p.pooling_convention!r}")
    summed = e.add("Mul", [mean, e.const(f"{s.name}_size", size, s.dtype)], total)
    if p != 1:
        root = e.add("Pow", [e.add("Abs", [summed]), e.const(f"{s.name}_root", 1 / p, s.dtype)])
        e.add("Mul", [e.add("Sign", [summed]), root], s.outputs[0])


def _pool_past_input(e: Emitter, s: Site, dropped: list[int], attrs: dict) -> None:
    """MXNet's 'full' max or avg pooling whose last windows start past the input and its
    leading pad, which ONNX's ceil_mode leaves out (onnxruntime's kernel drops them, while
    ONNX's shape inference keeps them): the kept windows in floor mode with the trailing
    pads widened, avg's divisors brought back to MXNet's (which count the given pad only),
    then the dropped windows filled as MXNet fills them (float's lowest for max, 0 for avg)."""
    nd = len(s.p.kernel)
    ins, outs = s.in_shapes[0][2:], s.out_shapes[0][2:]
    kept = [o - d for o, d in zip(outs, dropped, strict=True)]
    stride, pad = attrs["strides"], attrs["pads"][:nd]
    ends = [max(p, (n - 1) * st + k - size - p)
            for n, st, k, size, p in zip(kept, stride, s.p.kernel, ins, pad, strict=True)]
    attrs = {**attrs, "pads": pad + ends}
    if s.p.pool_type == "max":
        pooled = e.add("MaxPool", [s.inputs[0]], **attrs)
        fill = np.finfo(s.dtype).min
    else:
        include_pad = s.p.count_include_pad is None or s.p.count_include_pad
        pooled = e.add("AveragePool", [s.inputs[0]], count_include_pad=int(include_pad), **attrs)
        fill = 0
        if include_pad:  # onnxruntime divides by the window within the widened pads
            ratio = np.ones(kept)
            for axis, (n, st, k, size, p, end) in enumerate(
                    zip(kept, stride, s.p.kernel, ins, pad, ends, strict=True)):
                starts = np.arange(n) * st - p
                ours = np.minimum(starts + k, size + end) - starts
                theirs = np.minimum(starts + k, size + p) - starts
                shape = [1] * nd
                shape[axis] = n
                ratio = ratio * (ours / theirs).reshape(shape)
            pooled = e.add("Mul", [pooled, e.const(f"{s.name}_divisors", ratio[None, None],
                                                   s.dtype)])
    pads = [0] * (2 + nd) + [0, 0] + dropped
    e.add("Pad", [pooled, e.ints(f"{s.name}_pads", pads), e.const(f"{s.name}_fill", fill, s.dtype)],
          s.outputs[0], mode="constant")


def _windows_dropped(s: Site) -> list[int]:
    """Per spatial axis, how many of MXNet's 'full' windows onnxruntime's ceil_mode leaves
    out: those starting past the input and its leading pad (ONNX drops them, MXNet keeps
    them). With free input dimensions (dynamic=True) this is unknown: none."""
    if s.dynamic:
        return []
    nd = len(s.p.kernel)
    stride, pad = s.p.stride or (1,) * nd, s.p.pad or (0,) * nd
    dropped = []
    for size, out, st, p in zip(s.in_shapes[0][2:], s.out_shapes[0][2:],
                                stride, pad, strict=True):
        kept = out
        while kept > 1 and (kept - 1) * st >= size + p:
            kept -= 1
        dropped.append(out - kept)
    return dropped


@translates("LayerNorm")
def _layer_norm(e: Emitter, s: Site) -> None:
    if s.p.output_mean_var:
        raise Unsupported("output_mean_var=True")
    axis = s.p.axis % s.ndim
    if axis == s.ndim - 1:
        e.add("LayerNormalization", s.inputs, s.outputs[0], axis=-1, epsilon=s.p.eps)
        return
    # ONNX normalizes every axis from `axis` on together; MXNet the one axis: moved last
    perm = [a for a in range(s.ndim) if a != axis] + [axis]
    moved = e.add("Transpose", [s.inputs[0]], perm=perm)
    normed = e.add("LayerNormalization", [moved, *s.inputs[1:]], axis=-1, epsilon=s.p.eps)
    e.add("Transpose", [normed], s.outputs[0], perm=[perm.index(a) for a in range(s.ndim)])


@translates("InstanceNorm")
def _instance_norm(e: Emitter, s: Site) -> None:
    # the mean and variance outputs have no ONNX form; models read the first only
    e.add("InstanceNormalization", s.inputs, s.outputs[0], epsilon=s.p.eps)


@translates("Embedding")
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


@translates("softmax", "log_softmax")
def _softmax(e: Emitter, s: Site) -> None:
    if s.p.use_length and s.node.op != "softmax":
        raise Unsupported("use_length=True")
    x = s.inputs[0]
    if s.p.temperature is not None and s.p.temperature != 1:
        x = e.add("Div", [x, e.const(f"{s.name}_temperature", s.p.temperature, s.dtype)])
    keep = _within_length(e, s) if s.p.use_length else None
    if keep is not None:  # positions past the length take no part, and give 0
        x = e.add("Where", [keep, x, e.const(f"{s.name}_ninf", -np.inf, s.dtype)])
    # (`is None` first: numpy compares np.dtype('float64') == None as True)
    cast_to = None if s.p.dtype is None or s.p.dtype == s.dtype else s.p.dtype
    last = cast_to is None and keep is None
    op_type = "Softmax" if s.node.op == "softmax" else "LogSoftmax"
    result = e.add(op_type, [x], s.outputs[0] if last else None, axis=s.p.axis)
    if keep is not None:
        zero = e.const(f"{s.name}_zero", 0, s.dtype)
        result = e.add("Where", [keep, result, zero], s.outputs[0] if cast_to is None else None)
    if cast_to is not None:
        e.add("Cast", [result], s.outputs[0], to=cast_to)


def _within_length(e: Emitter, s: Site) -> str:
    """Where positions along the softmax axis are below the length input (bool)."""
    s.needs_fixed_shapes()
    axis = s.p.axis % s.ndim
    shape = [1] * s.ndim
    shape[axis] = s.in_shapes[0][axis]
    positions = e.const(f"{s.name}_positions", np.arange(shape[axis]).reshape(shape), s.dtype)
    lengths = e.add("Unsqueeze", [e.add("Cast", [s.inputs[1]], to=s.dtype),
                                  e.ints(f"{s.name}_axis", [axis])])
    return e.add("Less", [positions, lengths])


@translates("SoftmaxOutput")
def _softmax_output(e: Emitter, s: Site) -> None:
    if s.p.preserve_shape:
        e.add("Softmax", [s.inputs[0]], s.outputs[0], axis=-1)
    elif s.p.multi_output:
        e.add("Softmax", [s.inputs[0]], s.outputs[0], axis=1)
    else:
        _softmax_flat(e, s)


@translates("LogisticRegressionOutput", "LinearRegressionOutput", "MAERegressionOutput",
            "MakeLoss")
def _loss_output(e: Emitter, s: Site) -> None:
    """At inference a loss layer gives its prediction; the label is not read."""
    op_type = "Sigmoid" if s.node.op == "LogisticRegressionOutput" else "Identity"
    e.add(op_type, s.inputs[:1], s.outputs[0])


@translates("SoftmaxActivation")
def _softmax_activation(e: Emitter, s: Site) -> None:
    e.add("Softmax", [s.inputs[0]], s.outputs[0], axis=1 if s.p.mode == "channel" else -1)


@translates("L2Normalization")
def _l2_normalization(e: Emitter, s: Site) -> None:
    axes = {"instance": range(1, s.ndim), "channel": [1], "spatial": range(2, s.ndim)}
    squares = e.add("Mul", [s.inputs[0], s.inputs[0]])
    total = e.add("ReduceSum", [squares, e.ints(f"{s.name}_axes", list(axes[s.p.mode]))],
                  keepdims=1)
    eps = e.const(f"{s.name}_eps", s.p.eps, s.dtype)
    e.add("Div", [s.inputs[0], e.add("Sqrt", [e.add("Add", [total, eps])])], s.outputs[0])


@translates("_contrib_AdaptiveAvgPooling2D")
def _adaptive_avg_pooling(e: Emitter, s: Site) -> None:
    size_in, size_out = s.in_shapes[0][2:], s.out_shapes[0][2:]
    if all(o == 1 for o in size_out):
        e.add("GlobalAveragePool", s.inputs, s.outputs[0])
        return
    if any(i % o for i, o in zip(size_in, size_out, strict=True)):
        raise Unsupported(f"output {size_out} does not divide input {size_in} (MXNet's "
                          "windows then overlap unevenly)")
    s.needs_fixed_shapes()
    kernel = [i // o for i, o in zip(size_in, size_out, strict=True)]
    e.add("AveragePool", s.inputs, s.outputs[0], kernel_shape=kernel, strides=kernel)


@translates("_contrib_BilinearResize2D")
def _bilinear_resize(e: Emitter, s: Site) -> None:
    if s.p.mode != "size":  # the output size follows the input's
        s.needs_fixed_shapes()
    batch_channels = e.add("Slice", [e.add("Shape", [s.inputs[0]]), e.ints(f"{s.name}_0", [0]),
                                     e.ints(f"{s.name}_2", [2])])
    sizes = e.add("Concat", [batch_channels, e.ints(f"{s.name}_hw", s.out_shapes[0][2:])],
                  axis=0)
    mode = "align_corners" if s.p.align_corners else "half_pixel"
    e.add("Resize", [s.inputs[0], "", "", sizes], s.outputs[0], mode="linear",
          coordinate_transformation_mode=mode)


@translates("LRN")
def _lrn(e: Emitter, s: Site) -> None:
    e.add("LRN", s.inputs[:1], s.outputs[0], size=s.p.nsize, alpha=s.p.alpha, beta=s.p.beta,
          bias=s.p.knorm)


@translates("UpSampling")
def _upsampling(e: Emitter, s: Site) -> None:
    """Nearest: every input brought to the output's height and width, then concatenated
    on channels or summed."""
    if s.p.sample_type != "nearest":
        raise Unsupported(f"sample_type={s.p.sample_type!r}")
    n, _, h, w = s.out_shapes[0]
    ups = []
    for k, (x, shape) in enumerate(zip(s.inputs, s.in_shapes, strict=True)):
        scales = e.const(f"{s.name}_scales{k}", [1, 1, h / shape[2], w / shape[3]], np.float32)
        ups.append(e.add("Resize", [x, "", scales], mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor"))
    if len(ups) == 1:
        e.add("Identity", ups, s.outputs[0])
    elif s.p.multi_input_mode == "sum":
        e.add("Sum", ups, s.outputs[0])
    else:
        e.add("Concat", ups, s.outputs[0], axis=1)
