"""MXNet's Python-level `mx.nd` functions (python/mxnet/ndarray/ndarray.py, contrib.py).

The ufuncs (`add` ... `logical_xor`, `maximum`, `minimum`, `power`) run the broadcasting
operator for two arrays and a scalar one when either side is a number, and give a plain
Python result for two numbers, as MXNet's `_ufunc_helper`. Then `concatenate`,
`moveaxis`, `onehot_encode`, `from_numpy`, `imdecode` (legacy), `split_v2` and
`histogram`, the fronts of operators; and `mx.nd.contrib`'s Python functions `isinf`,
`isfinite`, `isnan` and `rand_zipfian` (whose arithmetic `zipfian` also serves
`mx.sym.contrib`), and its fronts of the AdamW and multi-tensor updates, `adamw_update`,
`multi_adamw_update`, `multi_lamb_update` and their mixed-precision `mp_*` forms.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
from numpy.exceptions import AxisError
from numpy.lib.array_utils import normalize_axis_tuple

from ..base import DEFAULT_DTYPE, DTypeError, MinimxError, OperatorError, ShapeError, warn_user
from ..context import Context, cpu, current_context
from ..ops import get_op, image_io
from ..ops.split_v2 import split_v2_params
from .creation import array, full
from .imperative import invoke, invoke_by_name
from .ndarray import NUMBER, NDArray

# MXNet's numeric_types: what may stand on either side of a ufunc as a number.


def _ufunc(what: str, tensor_op: str, scalar_op: str, rscalar_op: str,
           on_numbers: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """``mx.nd.<what>(lhs, rhs)``: `tensor_op` (broadcasting) for two arrays, `scalar_op`
    with the number on the right, `rscalar_op` with it on the left (the number as a
    float, as MXNet passes it), `on_numbers` for two numbers."""
    def fn(lhs: Any, rhs: Any) -> Any:
        if isinstance(lhs, NUMBER) and isinstance(rhs, NUMBER):
            return on_numbers(lhs, rhs)
        # The dispatch of NDArray's own operators (``x + 1``, ``1 - x``).
        if isinstance(lhs, NDArray) and isinstance(rhs, (NDArray, *NUMBER)):
            return lhs._arith(rhs, tensor_op, scalar_op)
        if isinstance(lhs, NUMBER) and isinstance(rhs, NDArray):
            return rhs._arith(lhs, tensor_op, rscalar_op, True)
        bad = rhs if isinstance(lhs, (NDArray, *NUMBER)) else lhs
        raise OperatorError(f"mx.nd.{what}: type {type(bad)} not supported (each operand "
                            f"must be an NDArray or a number, got {type(lhs).__name__} and "
                            f"{type(rhs).__name__})")
    fn.__name__ = fn.__qualname__ = what
    fn.__doc__ = (f"Elementwise {what} of two NDArrays (broadcasting), of an NDArray and a "
                  "number (on either side), or of two numbers (a Python result).")
    return fn


def _flag(test: Callable[[Any, Any], Any]) -> Callable[[Any, Any], int]:
    """MXNet's comparison of two numbers: 1 where `test` holds, else 0."""
    return lambda x, y: 1 if test(x, y) else 0


add = _ufunc("add", "broadcast_add", "_plus_scalar", "_plus_scalar", operator.add)
subtract = _ufunc("subtract", "broadcast_sub", "_minus_scalar", "_rminus_scalar", operator.sub)
multiply = _ufunc("multiply", "broadcast_mul", "_mul_scalar", "_mul_scalar", operator.mul)
divide = _ufunc("divide", "broadcast_div", "_div_scalar", "_rdiv_scalar", operator.truediv)
true_divide = _ufunc("true_divide", "broadcast_div", "_div_scalar", "_rdiv_scalar",
                     operator.truediv)
modulo = _ufunc("modulo", "broadcast_mod", "_mod_scalar", "_rmod_scalar", operator.mod)
power = pow = _ufunc("power", "broadcast_power", "_power_scalar",  # noqa: A001
                     "_rpower_scalar", operator.pow)
maximum = _ufunc("maximum", "broadcast_maximum", "_maximum_scalar", "_maximum_scalar",
                 lambda x, y: x if x > y else y)
minimum = _ufunc("minimum", "broadcast_minimum", "_minimum_scalar", "_minimum_scalar",
                 lambda x, y: x if x < y else y)
equal = _ufunc("equal", "broadcast_equal", "_equal_scalar", "_equal_scalar",
               _flag(operator.eq))
not_equal = _ufunc("not_equal", "broadcast_not_equal", "_not_equal_scalar",
                   "_not_equal_scalar", _flag(operator.ne))
greater = _ufunc("greater", "broadcast_greater", "_greater_scalar", "_lesser_scalar",
                 _flag(operator.gt))
greater_equal = _ufunc("greater_equal", "broadcast_greater_equal", "_greater_equal_scalar",
                       "_lesser_equal_scalar", _flag(operator.ge))
lesser = _ufunc("lesser", "broadcast_lesser", "_lesser_scalar", "_greater_scalar",
                _flag(operator.lt))
lesser_equal = _ufunc("lesser_equal", "broadcast_lesser_equal", "_lesser_equal_scalar",
                      "_greater_equal_scalar", _flag(operator.le))
logical_and = _ufunc("logical_and", "broadcast_logical_and", "_logical_and_scalar",
                     "_logical_and_scalar", _flag(lambda x, y: x and y))
logical_or = _ufunc("logical_or", "broadcast_logical_or", "_logical_or_scalar",
                    "_logical_or_scalar", _flag(lambda x, y: x or y))
logical_xor = _ufunc("logical_xor", "broadcast_logical_xor", "_logical_xor_scalar",
                     "_logical_xor_scalar", _flag(lambda x, y: bool(x) ^ bool(y)))


def concatenate(arrays: list[NDArray], axis: int = 0, always_copy: bool = True) -> NDArray:
    """`arrays` (a list, all of one dtype and one shape but along `axis`) joined along
    `axis`, which may not be negative (MXNet's fails on one). With ``always_copy=False``
    a list of one array gives that array itself. MXNet deprecates it for ``concat``."""
    if not isinstance(arrays, list) or not arrays or not isinstance(arrays[0], NDArray):
        raise OperatorError(f"concatenate: arrays must be a non-empty list of NDArrays, got "
                            f"{arrays!r:.80}")
    if not always_copy and len(arrays) == 1:
        return arrays[0]
    first = arrays[0]
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) \
            or not 0 <= axis < first.ndim:
        raise ShapeError(f"concatenate: axis={axis!r} must be in [0, {first.ndim}) for arrays "
                         f"of shape {first.shape}")
    for i, a in enumerate(arrays[1:], 1):
        if not isinstance(a, NDArray):
            raise OperatorError(f"concatenate: arrays[{i}] is a {type(a).__name__}, not an "
                                "NDArray")
        if a.dtype != first.dtype:
            raise DTypeError(f"concatenate: arrays[{i}] is {a.dtype}, arrays[0] {first.dtype}")
        if a.ndim != first.ndim or any(m != n for j, (m, n) in enumerate(
                zip(a.shape, first.shape, strict=True)) if j != axis):
            raise ShapeError(f"concatenate: arrays[{i}] has shape {a.shape}, arrays[0] "
                             f"{first.shape}: they may differ along axis {axis} only")
    return cast(NDArray, invoke_by_name("Concat", arrays, {"dim": int(axis),
                                                           "num_args": len(arrays)}))


def _axes(what: str, value: Any, ndim: int) -> tuple[int, ...]:
    """moveaxis's `source` or `destination`, checked and counted from the front."""
    try:
        return normalize_axis_tuple(value, ndim, what)
    except AxisError:
        raise ShapeError(f"moveaxis: {what.capitalize()} should verify 0 <= {what} < "
                         f"tensor.ndim ({ndim}), got {value!r}") from None
    except ValueError as exc:   # a repeated axis
        raise ShapeError(f"moveaxis: {exc}: {value!r}") from None
    except TypeError:
        raise OperatorError(f"moveaxis: {what} must be an int or a sequence of ints, got "
                            f"{value!r}") from None


def moveaxis(tensor: NDArray, source: int | Sequence[int],
             destination: int | Sequence[int]) -> NDArray:
    """`tensor` with the axes `source` moved to the positions `destination` (each an int
    or a sequence; negative ones count from the end), the other axes in their order."""
    moved, places = _axes("source", source, tensor.ndim), _axes("destination", destination,
                                                               tensor.ndim)
    if len(moved) != len(places):
        raise ShapeError(f"moveaxis: `source` and `destination` arguments must have the same "
                         f"number of elements, got {source!r} and {destination!r}")
    order = [n for n in range(tensor.ndim) if n not in moved]
    for place, axis in sorted(zip(places, moved, strict=True)):
        order.insert(place, axis)
    return cast(NDArray, invoke_by_name("transpose", [tensor], {"axes": tuple(order)}))


def onehot_encode(indices: NDArray, out: NDArray) -> NDArray:
    """`out` (K columns) set to 1 at column ``int(indices[i])`` of row i and to 0 elsewhere
    (so a row whose index is outside [0, K) is all 0); returns `out`. Both float32, as
    MXNet's kernel requires. MXNet deprecates it for ``one_hot``, which computes the same."""
    for what, a in (("indices", indices), ("out", out)):
        if not isinstance(a, NDArray) or a.dtype != np.float32:
            raise DTypeError(f"onehot_encode: {what} must be a float32 NDArray (MXNet's kernel "
                             f"takes no other), got {getattr(a, 'dtype', type(a).__name__)}")
    if out.ndim != 2:
        raise ShapeError(f"onehot_encode: out must be 2-D, got shape {out.shape}")
    return cast(NDArray, invoke(get_op("_onehot_encode"), [indices, out], {}, out=out))


# The dtypes MXNet 1.9.1's from_numpy takes without a copy (DLPack's that its NDArray has).
_ZERO_COPY_DTYPES = ("float16", "float32", "float64", "uint8", "int32", "int64", "bool")


def from_numpy(ndarray: np.ndarray, zero_copy: bool = True) -> NDArray:
    """An NDArray of `ndarray`'s values. Always a copy here: MXNet's shares the memory when
    `zero_copy` (and marks the numpy array read-only), minimx leaves the array as it is.
    With `zero_copy` it takes what MXNet's takes: a C-contiguous array of one of
    `_ZERO_COPY_DTYPES`, on cpu(0); without, any dtype, on the current context."""
    if not isinstance(ndarray, np.ndarray):
        raise OperatorError(f"from_numpy: needs a numpy array, got {type(ndarray).__name__}")
    if zero_copy:
        if not ndarray.flags.c_contiguous:
            raise MinimxError("from_numpy: Only c-contiguous arrays are supported for zero-copy "
                              "(use zero_copy=False, or np.ascontiguousarray)")
        if ndarray.dtype.name not in _ZERO_COPY_DTYPES:
            raise DTypeError(f"from_numpy: {ndarray.dtype} is not supported for zero-copy "
                             f"(supported: {', '.join(_ZERO_COPY_DTYPES)}; or zero_copy=False)")
    return array(ndarray, cpu() if zero_copy else None, ndarray.dtype)


def split_v2(ary: NDArray, indices_or_sections: int | tuple[int, ...], axis: int = 0,
             squeeze_axis: bool = False) -> NDArray | list[NDArray]:
    """`ary` split along `axis` into `indices_or_sections` equal pieces, or before each
    index of the tuple (``(2, 3)``: ``ary[:2]``, ``ary[2:3]``, ``ary[3:]``)."""
    return invoke_by_name("_split_v2", [ary], {**split_v2_params(indices_or_sections),
                                               "axis": axis, "squeeze_axis": squeeze_axis})


def histogram(a: NDArray, bins: int | NDArray = 10,
              range: tuple[float, float] | None = None  # noqa: A002  (MXNet's name)
              ) -> NDArray | list[NDArray]:
    """(counts, bin edges) of `a`: `bins` equal bins over `range`, or the bins whose edges
    the NDArray `bins` gives. Without a range, numpy's histogram (as MXNet, which warns)."""
    if isinstance(bins, NDArray):
        return invoke_by_name("_histogram", [a, bins], {})
    if not isinstance(bins, (int, np.integer)) or isinstance(bins, bool):
        raise OperatorError(f"histogram: bins must be an int or an NDArray, got {bins!r}")
    if range is None:
        warn_user("histogram: range is not specified, using numpy's result to ensure "
                  "consistency with numpy")
        counts, edges = np.histogram(a.asnumpy(), bins=int(bins))
        return [array(counts), array(edges)]
    return invoke_by_name("_histogram", [a], {"bin_cnt": int(bins), "range": tuple(range)})


# -- mx.nd.contrib's Python functions ------------------------------------------------------
def _abs(data: NDArray) -> NDArray:
    return cast(NDArray, invoke_by_name("abs", [data], {}))


def isinf(data: NDArray) -> NDArray:
    """1 where `data` is +-inf, 0 elsewhere (in data's dtype)."""
    return _abs(data) == np.inf


def isfinite(data: NDArray) -> NDArray:
    """1 where `data` is neither +-inf nor NaN, 0 elsewhere (in data's dtype)."""
    not_nan = data == data  # noqa: PLR0124  (NaN is the value unequal to itself)
    return logical_and(_abs(data) != np.inf, not_nan)


def isnan(data: NDArray) -> NDArray:
    """1 where `data` is NaN, 0 elsewhere (in data's dtype)."""
    return data != data  # noqa: PLR0124


def zipfian(true_classes: Any, num_sampled: int, range_max: int,
            uniform: Callable[[float, tuple[int]], Any]) -> tuple[Any, Any, Any]:
    """MXNet's rand_zipfian on NDArrays or Symbols: `num_sampled` classes of [0,
    `range_max`) drawn (with replacement) from the approximately log-uniform distribution
    P(c) = log((c + 2) / (c + 1)) / log(range_max + 1), as int64, and the expected counts
    (float64) of `true_classes` and of the drawn classes among `num_sampled` draws.
    ``uniform(high, shape)`` draws float64 samples from [0, high)."""
    log_range = math.log(range_max + 1)
    sampled = (uniform(log_range, (num_sampled,)).exp() - 1).astype("int64") % range_max

    def expected_count(classes: Any) -> Any:
        classes = classes.astype("float64")   # no integer division
        return ((classes + 2.0) / (classes + 1.0)).log() / log_range * num_sampled
    return sampled, expected_count(true_classes), expected_count(sampled)


def rand_zipfian(true_classes: NDArray, num_sampled: int, range_max: int,
                 ctx: Context | None = None) -> tuple[NDArray, NDArray, NDArray]:
    """`zipfian` on NDArrays, drawn by minimx's generator (`mx.random.seed`), on `ctx` (the
    current context when None)."""
    ctx = ctx or current_context()

    def uniform(high: float, shape: tuple[int]) -> Any:
        return invoke_by_name("_random_uniform", [], {"low": 0, "high": high, "shape": shape,
                                                      "dtype": "float64", "ctx": ctx})
    return zipfian(true_classes.as_in_context(ctx), num_sampled, range_max, uniform)


# -- mx.nd.contrib's fronts of the AdamW and the multi-tensor AdamW and LAMB updates ---
def _multi_update(op: str, per_weight: Sequence[Sequence[NDArray]], last: list[NDArray],
                  attrs: dict[str, Any], out: Any) -> NDArray | list[NDArray]:
    """`op` on the per-weight arrays interleaved (weight_0, grad_0, mean_0, ..., weight_1,
    ...; as many weights as the shortest list has, as MXNet's zip), then `last`; a `name`
    in `attrs` names the node."""
    inputs = [a for group in zip(*per_weight, strict=False) for a in group] + last
    name = attrs.pop("name", None)
    return invoke(get_op(op), inputs, {k: str(v) for k, v in attrs.items()}, out=out, name=name)


def _rescale_grad(rescale_grad: Any, like: NDArray) -> NDArray:
    """MXNet's _get_rescale_grad: a number as a one-element float32 array."""
    if isinstance(rescale_grad, NDArray):
        return rescale_grad.as_in_context(like.context)
    return full((1,), rescale_grad, ctx=like.context)


def adamw_update(weight: NDArray, grad: NDArray, mean: NDArray, var: NDArray,
                 rescale_grad: Any, lr: float, eta: float, beta1: float = 0.9,
                 beta2: float = 0.999, epsilon: float = 1e-8, wd: float = 0,
                 clip_gradient: float = -1, out: Any = None, name: str | None = None,
                 **kwargs: Any) -> NDArray | list[NDArray]:
    """``_adamw_update`` with `rescale_grad` a number or a one-element NDArray (MXNet's
    front); mean and var are updated in place."""
    return _multi_update("_adamw_update", [[weight], [grad], [mean], [var]],
                         [_rescale_grad(rescale_grad, weight)],
                         dict(kwargs, lr=lr, eta=eta, beta1=beta1, beta2=beta2,
                              epsilon=epsilon, wd=wd, clip_gradient=clip_gradient,
                              name=name), out)


def mp_adamw_update(weight: NDArray, grad: NDArray, mean: NDArray, var: NDArray,
                    weight32: NDArray, rescale_grad: Any, lr: float, eta: float,
                    beta1: float = 0.9, beta2: float = 0.999, epsilon: float = 1e-8,
                    wd: float = 0, clip_gradient: float = -1, out: Any = None,
                    name: str | None = None, **kwargs: Any) -> NDArray | list[NDArray]:
    """`adamw_update` of a float16 weight on its float32 master copy `weight32`."""
    return _multi_update("_mp_adamw_update", [[weight], [grad], [mean], [var], [weight32]],
                         [_rescale_grad(rescale_grad, weight)],
                         dict(kwargs, lr=lr, eta=eta, beta1=beta1, beta2=beta2,
                              epsilon=epsilon, wd=wd, clip_gradient=clip_gradient,
                              name=name), out)


def multi_adamw_update(weights: Sequence[NDArray], grads: Sequence[NDArray],
                       mean: Sequence[NDArray], var: Sequence[NDArray], rescale_grad: Any,
                       lrs: Sequence[float], wds: Sequence[float], etas: Sequence[float],
                       out: Any = None, name: str | None = None, size: int = 0,
                       **kwargs: Any) -> NDArray | list[NDArray]:
    """``_multi_adamw_update`` of `size` (default: all) weights, each with its lr, wd and
    eta; `rescale_grad` a number or a one-element NDArray. Returns the new weights (written
    to `out`, usually the weights); mean and var are updated in place."""
    return _multi_update("_multi_adamw_update", [weights, grads, mean, var],
                         [_rescale_grad(rescale_grad, weights[0])],
                         dict(kwargs, num_weights=size or len(weights), lrs=lrs, wds=wds,
                              etas=etas, name=name), out)


def multi_mp_adamw_update(weights: Sequence[NDArray], grads: Sequence[NDArray],
                          mean: Sequence[NDArray], var: Sequence[NDArray],
                          weights32: Sequence[NDArray], rescale_grad: Any,
                          lrs: Sequence[float], wds: Sequence[float], etas: Sequence[float],
                          out: Any = None, name: str | None = None, size: int = 0,
                          **kwargs: Any) -> NDArray | list[NDArray]:
    """`multi_adamw_update` of float16 weights on their float32 master copies `weights32`."""
    return _multi_update("_multi_mp_adamw_update", [weights, grads, mean, var, weights32],
                         [_rescale_grad(rescale_grad, weights[0])],
                         dict(kwargs, num_weights=size or len(weights), lrs=lrs, wds=wds,
                              etas=etas, name=name), out)


def multi_lamb_update(weights: Sequence[NDArray], grads: Sequence[NDArray],
                      mean: Sequence[NDArray], var: Sequence[NDArray],
                      step_count: Sequence[int], lrs: Sequence[float], wds: Sequence[float],
                      out: Any = None, num_tensors: int = 0, **kwargs: Any
                      ) -> NDArray | list[NDArray]:
    """``_multi_lamb_update`` of `num_tensors` (default: all) weights, each with its update
    count, lr and wd (MXNet's `learning_rates`); mean and var are updated in place."""
    return _multi_update("_multi_lamb_update", [weights, grads, mean, var], [],
                         dict(kwargs, num_tensors=num_tensors or len(weights),
                              step_count=step_count, learning_rates=lrs, wds=wds), out)


def multi_mp_lamb_update(weights: Sequence[NDArray], grads: Sequence[NDArray],
                         mean: Sequence[NDArray], var: Sequence[NDArray],
                         weights32: Sequence[NDArray], step_count: Sequence[int],
                         lrs: Sequence[float], wds: Sequence[float], out: Any = None,
                         num_tensors: int = 0, **kwargs: Any) -> NDArray | list[NDArray]:
    """`multi_lamb_update` of float16 weights on their float32 master copies `weights32`."""
    return _multi_update("_multi_mp_lamb_update", [weights, grads, mean, var, weights32], [],
                         dict(kwargs, num_tensors=num_tensors or len(weights),
                              step_count=step_count, learning_rates=lrs, wds=wds), out)


def imdecode(str_img: Any, clip_rect: Sequence[int] = (0, 0, 0, 0), out: NDArray | None = None,
             index: int = 0, channels: int = 3, mean: NDArray | None = None) -> NDArray:
    """Deprecated, as in MXNet (use `mx.image.imdecode`): MXNet's legacy decoder. The
    encoded image (bytes) as channels x height x width in OpenCV's channel order (BGR,
    BGRA; grey when `channels` is 1; its first `channels` ones), clipped to `clip_rect`
    (x0, y0, x1, y1; all of it when y1 == y0), less `mean` (channels x height x width).
    float32, or `mean`'s dtype; or into `out` ((c, h, w), or slice `index` of
    (n, c, h, w); its dtype, which `mean` must share), which is returned. Decodes before
    it returns.

    >>> import minimx as mx, numpy as np
    >>> red = np.array([[[0, 0, 255]]], np.uint8)                # one pixel, BGR
    >>> _, png = mx.recordio.unpack(mx.recordio.pack_img((0, 0, 0, 0), red, img_fmt=".png"))
    >>> mx.nd.imdecode(png).asnumpy().ravel().tolist()         # channels first, BGR
    [0.0, 0.0, 255.0]
    """
    what = "mx.nd.imdecode"
    try:
        rect, channels, index = [operator.index(v) for v in clip_rect], \
            operator.index(channels), operator.index(index)
    except TypeError:
        raise OperatorError(f"{what}: clip_rect={clip_rect!r}, channels={channels!r} and "
                            f"index={index!r} must be integers") from None
    if len(rect) != 4:
        raise OperatorError(f"{what}: clip_rect must be (x0, y0, x1, y1), got {clip_rect!r}")
    for name, arr in (("out", out), ("mean", mean)):
        if arr is not None and not isinstance(arr, NDArray):
            raise OperatorError(f"{what}: {name} must be an NDArray, not {type(arr).__name__}")
    if out is not None and out.ndim not in (3, 4):
        raise ShapeError(f"{what}: out must be (c, h, w) or (n, c, h, w), got {out.shape}")
    if out is not None and out.ndim == 4 and not 0 <= index < out.shape[0]:
        raise OperatorError(f"{what}: index={index} is outside out's {out.shape[0]} images")
    dtype = out.dtype if out is not None else mean.dtype if mean is not None else DEFAULT_DTYPE
    if mean is not None:
        mean.wait_to_read()
    pixels = image_io.legacy_imdecode(image_io.encoded_bytes(str_img, f"{what}: str_img"), rect,
                                      channels, None if mean is None else mean._data, dtype, what)
    if out is None:
        return NDArray(pixels)
    target = out[index] if out.ndim == 4 else out
    if target.shape != pixels.shape:
        raise ShapeError(f"{what}: out takes images of {target.shape}, the decoded image is "
                         f"{pixels.shape}")
    target[:] = pixels
    return out
