"""MXNet 1.9.1's image operators, `mx.nd.image` / `mx.sym.image` (src/operator/image/
image_random-inl.h, resize-inl.h, crop-inl.h): images are height x width x channels
(HWC), and `to_tensor`, `normalize`, `resize` and `crop` also take batches (NHWC; NCHW
for `normalize`, which follows `to_tensor`).

Arithmetic is MXNet's CPU kernels': float32 (float64 for float64 data in `to_tensor` and
`normalize`, and float16's rounding at each step there), results cast to the data's dtype
as C casts them (integers truncated and wrapped; the colour operators clamp uint8 to
[0, 255] first; on float16 data they round once, where mshadow rounds every step).
bfloat16 data runs in float32, as MXNet's type switch takes it, but for `resize`; bool
data has no kernel. `resize` is OpenCV's `cv::resize` (formats/image_resize.py). The
random operators draw their factors from `GENERATOR` (`mx.random.seed`): MXNet's
distributions, not its numbers. Gradients: `normalize` divides by std and `crop`
scatters into zeros, as MXNet's; the flips flip the output gradient back and `to_tensor`
moves its axes back and divides by 255 (MXNet sends back the output gradient as it is,
which leaves a flip's unflipped and fails for `to_tensor`); every other operator sends back
a copy of the output gradient, as MXNet's `_copy` gradient does (`resize` fails unless the
output's shape is the input's).

Where MXNet leaves output memory unwritten (the middle row or column of an odd-sized
flip, `random_hue` / lighting on one channel, `random_color_jitter` with every factor
0), minimx writes what the operator means: the flip's middle line, the input.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from ..base import DTypeError, OperatorError, ShapeError
from ..formats.image_resize import resize
from .elemwise import c_truncate
from .infer import merge, merge_dtype, same_dtype
from .params import Params
from .registry import GradReads, OpContext, OpDef, Param, register

Array = np.ndarray
Factor = float | np.floating
F32 = np.float32
_GRAY = np.array([0.299, 0.587, 0.114], F32)   # MXNet's luma coefficients (R, G, B)


def _c_cast(values: Array, dtype: np.dtype) -> Array:
    """Float results stored in `dtype` as C stores them (`c_truncate` for integers)."""
    dtype = np.dtype(dtype)
    return c_truncate(values, dtype) if dtype.kind in "ui" else values.astype(dtype)


def _saturate(values: Array, dtype: np.dtype) -> Array:
    """MXNet's saturate_cast: uint8 clamped to [0, 255], then the C cast."""
    if np.dtype(dtype) == np.uint8:
        values = np.clip(values, F32(0), F32(255))
    return _c_cast(values, dtype)


def _work_dtype(dtype: np.dtype) -> type:
    return np.float64 if dtype == np.float64 else F32


def _as_mshadow(values: Array, dtype: np.dtype) -> Array:
    """A step of MXNet's arithmetic on `dtype` data: mshadow's float16 operators round
    each result to float16."""
    return values.astype(np.float16).astype(F32) if dtype == np.float16 else values


# -- dtypes and gradients ------------------------------------------------------------------------

def _any_dtype(op: str, p: Params, in_types: list, out_types: list) -> tuple[list, list]:
    """MXNet's ElemwiseType over the dtypes its kernels switch on (all but bool)."""
    ins, outs = same_dtype(p, in_types, out_types)
    if ins[0] is not None and ins[0] == np.bool_:
        raise DTypeError(f"{op}: data of dtype bool has no kernel (MXNet's type switch "
                         "takes float and integer types)")
    return ins, outs


def _copy_gradient(p: Params, ctx: OpContext, inputs: list, outputs: list,
                   out_grads: list) -> list:
    """MXNet's ``ElemwiseGradUseNone{"_copy"}``: the output gradient as it is, which must
    have the input's shape."""
    grad, data = out_grads[0], inputs[0]
    if grad.shape != data.shape:
        raise ShapeError(f"{p.label}: MXNet 1.9.1's gradient of this operator copies the "
                         f"output gradient, of shape {grad.shape}, which is not the input's "
                         f"{data.shape}")
    return [grad.astype(data.dtype, copy=True)]


def _image_shape(op: str, check: Callable[[str, Params], object] | None, p: Params,
                 in_shapes: list, out_shapes: list) -> tuple[list, list]:
    """MXNet's ImageShape: one height x width x channels image of 1 or 3 channels; `check`
    checks the parameters (MXNet's parameter parser)."""
    if check is not None:
        check(op, p)
    shape = merge(in_shapes[0], out_shapes[0])
    if shape is not None:
        if len(shape) != 3:
            raise ShapeError(f"{op}: Input image must have shape (height, width, channels), "
                             f"but got {shape}")
        if shape[2] not in (0, 1, 3):
            raise ShapeError(f"{op}: The last dimension of input image must be the channel "
                             "dimension with either 1 or 3 elements, but got input with "
                             f"shape {shape}")
    return [shape], [shape]


def _register_image_op(name: str, forward: Callable[..., Array], params: tuple = (),
                       check: Callable[[str, Params], object] | None = None,
                       draws: bool = False, doc: str = "",
                       backward: Callable[..., list] = _copy_gradient) -> None:
    """One of MXNet's MXNET_REGISTER_IMAGE_AUG_OP operators: an HWC image in, one of the
    same shape and dtype out (in place allowed), by default the `_copy` gradient."""
    register(OpDef(
        name, forward, params=params, infer_shape=partial(_image_shape, name, check),
        infer_type=partial(_any_dtype, name), backward=backward,
        backward_reads=GradReads(), inplace=((0, 0),), draws=draws, named_inputs=False,
        doc=doc))


def _batch_hwc(shape: tuple[int, ...], message: str) -> tuple[list[int], int, int, int]:
    """(batch dims, height, width, channels) of an HWC image or an NHWC batch; other ranks
    raise `ShapeError` with `message`."""
    if len(shape) not in (3, 4):
        raise ShapeError(message)
    *batch, h, w, c = shape
    return batch, h, w, c


# -- to_tensor and normalize ------------------------------------------------------------------

def _to_tensor_shape(p: Params, in_shapes: list, out_shapes: list) -> tuple[list, list]:
    shape = in_shapes[0]
    if shape is None:
        return in_shapes, out_shapes
    batch, h, w, c = _batch_hwc(shape, "_image_to_tensor: Input image must have shape "
                                "(height, width, channels), or (N, height, width, channels) "
                                f"but got {shape}")
    return in_shapes, [merge(out_shapes[0], (*batch, c, h, w))]


def _to_tensor_type(p: Params, in_types: list, out_types: list) -> tuple[list, list]:
    _any_dtype("_image_to_tensor", p, in_types, [None])
    return in_types, [merge_dtype(out_types[0], np.dtype(F32))]


def _to_tensor(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    x = inputs[0]
    work = _work_dtype(x.dtype)
    return _as_mshadow(np.moveaxis(x, -1, -3).astype(work) / work(255), x.dtype).astype(F32)


def _to_tensor_backward(p: Params, ctx: OpContext, inputs: list, outputs: list,
                        out_grads: list) -> list:
    """The derivative: channels moved back last, divided by 255 (MXNet's `_copy` gradient
    fails here, its shape not the input's)."""
    grad = np.moveaxis(out_grads[0], -3, -1) / F32(255)
    return [grad.astype(inputs[0].dtype)]


register(OpDef(
    "_image_to_tensor", _to_tensor, infer_shape=_to_tensor_shape, infer_type=_to_tensor_type,
    backward=_to_tensor_backward, backward_reads=GradReads(),
    doc="Converts an image of shape (H x W x C) or (N x H x W x C) with values in [0, 255] "
        "to a float32 tensor of shape (C x H x W) or (N x C x H x W) with values in [0, 1]."))


def _per_channel(values: tuple[float, ...], channels: int) -> Array:
    """mean or std for each channel, as float32 broadcast over (C, H, W)."""
    per = values * channels if len(values) == 1 else values[:channels]
    return np.asarray(per, F32).reshape(channels, 1, 1)


def _normalize_shape(p: Params, in_shapes: list, out_shapes: list) -> tuple[list, list]:
    shape = merge(in_shapes[0], out_shapes[0])
    if shape is None:
        return in_shapes, out_shapes
    if len(shape) not in (3, 4):
        raise ShapeError("_image_normalize: Input tensor must have shape (channels, height, "
                         f"width), or (N, channels, height, width), but got {shape}")
    channels = shape[-3]
    if channels not in (0, 1, 3):
        which = "first" if len(shape) == 3 else "second"
        raise ShapeError(f"_image_normalize: The {which} dimension of input tensor must be "
                         "the channel dimension with either 1 or 3 elements, but got input "
                         f"with shape {shape}")
    for name in ("mean", "std"):
        if channels and len(p[name]) not in (1, channels):
            raise ShapeError(f"_image_normalize: Invalid {name} for input with shape {shape}. "
                             f"{name} must have either 1 or {channels} elements, but got "
                             f"{name}={p[name]}")
    return [shape], [shape]


def _normalize(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    x = inputs[0]
    work = _work_dtype(x.dtype)
    channels = x.shape[-3]
    mean: Array = _per_channel(p.mean, channels).astype(work)
    std: Array = _per_channel(p.std, channels).astype(work)
    return _c_cast(_as_mshadow(x.astype(work) - mean, x.dtype) / std, x.dtype)


def _normalize_backward(p: Params, ctx: OpContext, inputs: list, outputs: list,
                        out_grads: list) -> list:
    # MXNet multiplies by 1.0 / std, a double, and rounds the product to the dtype.
    grad = out_grads[0]
    scale = 1.0 / _per_channel(p.std, grad.shape[-3]).astype(np.float64)
    return [_c_cast(grad.astype(np.float64) * scale, grad.dtype)]


register(OpDef(
    "_image_normalize", _normalize,
    params=(Param("mean", "floats", (0.0, 0.0, 0.0, 0.0),
                  "Sequence of means for each channel. Default value is 0."),
            Param("std", "floats", (1.0, 1.0, 1.0, 1.0),
                  "Sequence of standard deviations for each channel. Default value is 1.")),
    infer_shape=_normalize_shape, infer_type=partial(_any_dtype, "_image_normalize"),
    backward=_normalize_backward, backward_reads=GradReads(), inplace=((0, 0),),
    doc="Normalizes a tensor of shape (C x H x W) or (N x C x H x W): (input - mean) / std "
        "per channel; a mean or std of one value applies to every channel."))


# -- resize and crop ----------------------------------------------------------------------------

_INTERPS = {0: "nearest", 1: "bilinear", 2: "bicubic", 3: "area", 4: "Lanczos",
            5: "bit-exact bilinear"}


def _resized(p: Params, height: int, width: int) -> tuple[int, int]:
    """(height, width) of the result, MXNet's GetHeightAndWidth (0: unknown yet)."""
    size = p.size
    if len(size) not in (1, 2):
        raise OperatorError(f"_image_resize: size={size}: Input size dimension must be 1 or "
                            f"2, but got {len(size)}")
    if len(size) == 2:
        for value, what in zip(size, ("width", "height"), strict=True):
            if value <= 0:
                raise OperatorError(f"_image_resize: size={size}: Input {what} should be "
                                    f"greater than 0, but got {value}")
        return size[1], size[0]
    side = size[0]
    if side <= 0:
        raise OperatorError(f"_image_resize: size={size}: Input size should be greater than "
                            f"0, but got {side}")
    if not p.keep_ratio:
        return side, side
    if not height or not width:
        return 0, 0
    # The shorter side becomes `side`, the other scaled in C's integer arithmetic.
    return (height * side // width, side) if height > width else (side, width * side // height)


def _resize_shape(p: Params, in_shapes: list, out_shapes: list) -> tuple[list, list]:
    if p.interp not in _INTERPS:
        raise OperatorError(f"_image_resize: interp={p.interp}: Unknown interpolation method"
                            "; 0-5 are " + ", ".join(_INTERPS.values()))
    shape = in_shapes[0]
    if shape is None:
        return in_shapes, out_shapes
    batch, h, w, c = _batch_hwc(shape, "_image_resize: Input image dimension should be 3 or "
                                f"4 but got {len(shape)} (shape {shape})")
    return in_shapes, [merge(out_shapes[0], (*batch, *_resized(p, h, w), c))]


def _resize_type(p: Params, in_types: list, out_types: list) -> tuple[list, list]:
    ins, outs = _any_dtype("_image_resize", p, in_types, out_types)
    dtype = ins[0]
    if dtype is None or dtype in (np.uint8, np.float32, np.float64):
        return ins, outs
    if dtype == np.float16:
        raise DTypeError("_image_resize: opencv image mat doesn't support fp16 (float16 data)")
    if dtype == np.int32 and p.interp == 0:
        return ins, outs
    raise DTypeError(f"_image_resize: {dtype} data with interp={p.interp}: OpenCV 3.4.2 "
                     "resizes uint8, float32 and float64 images, and int32 ones with interp=0 "
                     "(nearest) only (its assertion func != 0 fails)")


def _resize(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    x = inputs[0]
    height, width = _resized(p, *x.shape[-3:-1])
    if x.ndim == 3:
        return resize(x, width, height, p.interp)
    return np.stack([resize(image, width, height, p.interp) for image in x])


register(OpDef(
    "_image_resize", _resize,
    params=(Param("size", "shape", (), "Size of new image. Could be (width, height) or "
                  "(size)"),
            Param("keep_ratio", "bool", False, "Whether to resize the short edge or both "
                  "edges to `size`, if size is give as an integer."),
            Param("interp", "int", 1, "Interpolation method for resizing: 0 nearest, 1 "
                  "bilinear, 2 bicubic, 3 area, 4 Lanczos, 5 bit-exact bilinear (OpenCV's "
                  "codes).")),
    infer_shape=_resize_shape, infer_type=_resize_type, backward=_copy_gradient,
    # bfloat16: MXNet's table of OpenCV types has no entry for it (garbage pixels).
    backward_reads=GradReads(), bfloat16="refuse", named_inputs=False,
    doc="Resizes an image of shape (H x W x C) or (N x H x W x C) with OpenCV's arithmetic."))


def _crop_shape(p: Params, in_shapes: list, out_shapes: list) -> tuple[list, list]:
    if p.height <= 0 or p.width <= 0:
        raise OperatorError(f"_image_crop: Input height and width must be greater than 0, got "
                            f"width={p.width}, height={p.height}")
    if p.x < 0 or p.y < 0:   # MXNet does not check, and reads before the image
        raise OperatorError(f"_image_crop: x={p.x} and y={p.y} must not be negative")
    shape = in_shapes[0]
    if shape is None:
        return in_shapes, out_shapes
    batch, h, w, c = _batch_hwc(shape, "_image_crop: Image Crop expects inputs of 3D (h, w, "
                                f"c) or 4D (n, h, w, c). But got {len(shape)} (shape {shape})")
    if c not in (0, 1, 3):
        raise ShapeError(f"_image_crop: Expect channel of the input image is 1 or 3, but got "
                         f"{c} (shape {shape})")
    if w and p.x + p.width > w:
        raise ShapeError(f"_image_crop: x + width should not be greater than input width: "
                         f"x={p.x}, width={p.width}, input {shape}")
    if h and p.y + p.height > h:
        raise ShapeError(f"_image_crop: y + height should not be greater than input height: "
                         f"y={p.y}, height={p.height}, input {shape}")
    return in_shapes, [merge(out_shapes[0], (*batch, p.height, p.width, c))]


def _window(p: Params) -> tuple[slice, slice]:
    return slice(p.y, p.y + p.height), slice(p.x, p.x + p.width)


def _crop_backward(p: Params, ctx: OpContext, inputs: list, outputs: list,
                   out_grads: list) -> list:
    data = inputs[0]
    grad = np.zeros(data.shape, data.dtype)
    grad[(..., *_window(p), slice(None))] = out_grads[0]
    return [grad]


register(OpDef(
    "_image_crop", lambda p, ctx, inputs: inputs[0][(..., *_window(p), slice(None))].copy(),
    params=(Param("x", "int", doc="Left boundary of the cropping area."),
            Param("y", "int", doc="Top boundary of the cropping area."),
            Param("width", "int", doc="Width of the cropping area."),
            Param("height", "int", doc="Height of the cropping area.")),
    infer_shape=_crop_shape, infer_type=partial(_any_dtype, "_image_crop"),
    backward=_crop_backward, backward_reads=GradReads(), named_inputs=False,
    doc="Crops an image of shape (H x W x C) or (N x H x W x C) to the given box."))


# -- flips ----------------------------------------------------------------------------------------

def _flip(axis: int, x: Array) -> Array:
    return np.ascontiguousarray(np.flip(x, axis))


def _random_flip(axis: int, p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    # MXNet keeps the image when its Bernoulli(0.5) draw is true.
    return inputs[0].copy() if ctx.rng.random() < 0.5 else _flip(axis, inputs[0])


def _flip_backward(axis: int, p: Params, ctx: OpContext, inputs: list, outputs: list,
                   out_grads: list) -> list:
    # The derivative (MXNet 1.9.1 sends the output gradient back unflipped).
    return [_flip(axis, out_grads[0]).astype(inputs[0].dtype, copy=False)]


for _axis, _side in ((1, "left_right"), (0, "top_bottom")):
    _register_image_op(f"_image_flip_{_side}",
                       partial(lambda axis, p, ctx, inputs: _flip(axis, inputs[0]), _axis),
                       doc=f"Flips an HWC image {_side.replace('_', '-')}.",
                       backward=partial(_flip_backward, _axis))
    _register_image_op(f"_image_random_flip_{_side}", partial(_random_flip, _axis),
                       draws=True,
                       doc=f"Flips an HWC image {_side.replace('_', '-')} with probability 0.5.")


# -- colour: MXNet's Adjust*Impl on float32 values ------------------------------------------

def adjust_brightness(x: Array, alpha: Factor) -> Array:
    return _saturate(x.astype(F32) * F32(alpha), x.dtype)


def adjust_contrast(x: Array, alpha: Factor) -> Array:
    values = x.astype(F32)
    terms = values * _GRAY if x.shape[2] == 3 else values
    # MXNet adds the gray values one by one into a float32 sum.
    total = np.cumsum(terms.ravel(), dtype=F32)[-1]
    a = F32(alpha)
    beta = (F32(1) - a) * (total / F32(x.shape[0] * x.shape[1]))
    return _saturate(values * a + beta, x.dtype)


def adjust_saturation(x: Array, alpha: Factor) -> Array:
    if x.shape[2] == 1:
        return x.copy()
    values = x.astype(F32)
    a = F32(alpha)
    # MXNet's loop assigns rather than adds each channel's share: its gray is the blue's.
    gray = values[..., 2:] * _GRAY[2] * (F32(1) - a)
    return _saturate(gray + values * a, x.dtype)


def _rgb_to_hls(rgb: Array) -> tuple[Array, Array, Array]:
    """MXNet's RGB2HLSConvert: hue in degrees, lightness and saturation in [0, 1]."""
    r, g, b = (rgb[..., i] / F32(255) for i in range(3))
    vmax = np.fmax(np.fmax(r, g), b)
    vmin = np.fmin(np.fmin(r, g), b)
    diff = vmax - vmin
    light = (vmax + vmin) * F32(0.5)
    chroma = diff > np.finfo(F32).eps
    with np.errstate(divide="ignore", invalid="ignore"):
        sat = np.where(light < F32(0.5), diff / (vmax + vmin), diff / (F32(2) - vmax - vmin))
        scale = F32(60) / diff
        hue = np.where(vmax == r, (g - b) * scale,
                       np.where(vmax == g, (b - r) * scale + F32(120),
                                (r - g) * scale + F32(240)))
    hue = np.where(hue < 0, hue + F32(360), hue)
    zero = F32(0)
    return np.where(chroma, hue, zero), light, np.where(chroma, sat, zero)


# For each sector of the hue circle, which of (p2, p1, rising, falling) is b, g and r.
_SECTORS = np.array([[1, 3, 0], [1, 0, 2], [3, 0, 1], [0, 2, 1], [0, 1, 3], [2, 1, 0]])


def _hls_to_rgb(hue: Array, light: Array, sat: Array) -> Array:
    """MXNet's HLS2RGBConvert, back to [0, 255] (r, g, b on the last axis)."""
    p2 = np.where(light <= F32(0.5), light * (F32(1) + sat), light + sat - light * sat)
    p1 = F32(2) * light - p2
    # MXNet adds or takes 6 until h is in [0, 6): exact steps but the last, so fmod's
    # exact remainder and then that step (which can round up to 6: sector 0 here, a read
    # past MXNet's table there).
    h = np.fmod(hue * F32(1.0 / 60.0), F32(6))
    h = np.where(h < 0, h + F32(6), h)
    h = np.where(h >= 6, F32(0), h)
    with np.errstate(invalid="ignore"):   # NaN (from non-finite data): any sector
        sector = np.where(np.isfinite(h), h, F32(0)).astype(np.int64)
    h = h - sector.astype(F32)
    table = np.stack([p2, p1, p1 + (p2 - p1) * (F32(1) - h), p1 + (p2 - p1) * h], -1)
    bgr = np.take_along_axis(table, _SECTORS[sector], -1)
    bgr = np.where((sat != 0)[..., None], bgr, light[..., None])
    return bgr[..., ::-1] * F32(255)


def adjust_hue(x: Array, alpha: Factor) -> Array:
    if x.shape[2] == 1:   # MXNet leaves its output unwritten
        return x.copy()
    hue, light, sat = _rgb_to_hls(x.astype(F32))
    return _saturate(_hls_to_rgb(hue + F32(alpha) * F32(360), light, sat), x.dtype)


# AlexNet's PCA lighting: eigenvalues times eigenvectors, rounded to float32 as MXNet's table.
_EIG = np.array([[55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
                 [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
                 [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203]]).astype(F32)


def adjust_lighting(x: Array, alpha: Array) -> Array:
    if x.shape[2] == 1:   # MXNet leaves its output unwritten
        return x.copy()
    a = np.asarray(alpha, F32)[:3]
    pca = _EIG[:, 0] * a[0] + _EIG[:, 1] * a[1] + _EIG[:, 2] * a[2]
    return _saturate(x.astype(F32) + pca, x.dtype)


# -- random colour operators -------------------------------------------------------------------

def _factor_range(op: str, p: Params) -> tuple[float, float]:
    for name in ("min_factor", "max_factor"):
        if p[name] < 0:
            raise OperatorError(f"{op}: value {p[name]} for Parameter {name} should be "
                                "greater equal to 0")
    return p.min_factor, p.max_factor


_FACTORS = (Param("min_factor", "float", doc="Minimum factor."),
            Param("max_factor", "float", doc="Maximum factor."))

for _name, _adjust, _doc in (
        ("brightness", adjust_brightness, "Scales the pixels by a factor drawn from "
                                          "[min_factor, max_factor]."),
        ("contrast", adjust_contrast, "Blends the image with its mean gray by a factor drawn "
                                      "from [min_factor, max_factor]."),
        ("saturation", adjust_saturation, "Blends the image with its gray (MXNet's: 0.114 "
                                          "blue) by a factor drawn from [min_factor, "
                                          "max_factor]."),
        ("hue", adjust_hue, "Rotates the hue by a factor (of a turn) drawn from [min_factor, "
                            "max_factor].")):
    _op = f"_image_random_{_name}"

    def _forward(p: Params, ctx: OpContext, inputs: list[Array], op: str = _op,
                 adjust: Callable[[Array, Factor], Array] = _adjust) -> Array:
        return adjust(inputs[0], F32(ctx.rng.uniform(*_factor_range(op, p))))

    _register_image_op(_op, _forward, params=_FACTORS, check=_factor_range, draws=True,
                       doc=_doc)


def _color_jitter(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    x = inputs[0]
    steps = ((p.brightness, adjust_brightness, 1.0), (p.contrast, adjust_contrast, 1.0),
             (p.saturation, adjust_saturation, 1.0), (p.hue, adjust_hue, 0.0))
    # In a random order, each step whose jitter is positive, with its factor drawn then.
    for k in ctx.rng.permutation(4):
        jitter, adjust, centre = steps[k]
        if jitter > 0:
            x = adjust(x, F32(centre + F32(ctx.rng.uniform(-jitter, jitter))))
    return x.copy() if x is inputs[0] else x


_register_image_op(
    "_image_random_color_jitter", _color_jitter, draws=True,
    params=tuple(Param(name, "float", doc=f"How much to jitter {name}.")
                 for name in ("brightness", "contrast", "saturation", "hue")),
    doc="Adjusts brightness, contrast, saturation and hue in a random order, each by a "
        "factor drawn within its jitter.")


def _three_alphas(op: str, p: Params) -> None:
    if len(p.alpha) < 3:   # MXNet reads past the tuple
        raise OperatorError(f"{op}: alpha={p.alpha} must hold the R, G and B alphas")


_register_image_op(
    "_image_adjust_lighting", lambda p, ctx, inputs: adjust_lighting(inputs[0], p.alpha),
    params=(Param("alpha", "floats", doc="The lighting alphas for the R, G, B channels."),),
    check=_three_alphas,
    doc="Adjust the lighting level of the input. Follow the AlexNet style.")
_register_image_op(
    "_image_random_lighting",
    lambda p, ctx, inputs: adjust_lighting(inputs[0], ctx.rng.standard_normal(3) * p.alpha_std),
    params=(Param("alpha_std", "float", 0.05, "Level of the lighting noise."),), draws=True,
    doc="Randomly add PCA noise. Follow the AlexNet style.")
