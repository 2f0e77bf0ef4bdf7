"""A 1x1 convolution, the 3x3 depthwise convolution that reads it and,
optionally, the linear 1x1 projection that reads that, in one pass, by a
kernel of minimx's own (``native/pointwise_depthwise.c``).

MobileNet v2's blocks expand their channels six-fold with a 1x1
convolution, filter the result with a depthwise one and project it back.
oneDNN runs them as primitives that write each tensor to memory and read it
back, far below the FMA peak at 112x112 and 56x56 (oneDNN 3.2 fuses a 1x1
and a depthwise convolution, its depthwise post-op, only as its reference
implementation at batch 1). The kernel keeps the expanded rows in cache:
each task computes the three rows an output row reads (a ring: each row
once), filters them while they are there and projects the filtered row.
Float32, in oneDNN's 16-channel blocks (nChw16c).

The first two convolutions add their bias, then clamp to their bounds (none,
relu, or clip: relu6; NaN becoming the lower bound, as on the numpy path);
the projection adds its bias and the residual. The sums start from the bias
and take the input channels, and then the taps row by row, in order.

>>> pwdw_weights(np.arange(6, dtype=np.float32).reshape(3, 2, 1, 1))
array([[0., 2., 4.],
       [1., 3., 5.]], dtype=float32)
>>> pwdw_dw_weights(np.arange(144, dtype=np.float32).reshape(16, 1, 3, 3))[0, :2, :3]
array([[ 0.,  9., 18.],
       [ 1., 10., 19.]], dtype=float32)
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..base import BackendError
from ._loader import native
from .primitives import Primitive, build_primitive, spatial_param
from .runtime import FLOAT32, as_dims

BLOCK = 16   # the expanded channels come in multiples of this (VL in pointwise_depthwise.c)
TAPS = 9
# The 1x1 convolutions the kernel takes: expansions (at least MIN_EXPANSION
# times the channels) of at most MAX_IN_CHANNELS. With more input channels the
# convolution is bound by its products, not by writing its output, and oneDNN's
# kernel computes them faster than this one saves; at less expansion the
# expanded tensor is not the bulk of the traffic (docs/measurements.md).
MAX_IN_CHANNELS = 32
MIN_EXPANSION = 4


def pwdw_available() -> bool:
    """Whether this build has the kernel: the CPU that built minimx has AVX-512."""
    return bool(native().lib.mmx_pwdw_available())


def pwdw_supports(src_shape: Sequence[int], weight_shape: Sequence[int],
                  dw_weight_shape: Sequence[int], *, stride=None, pad=None, dilate=None,
                  num_group: int = 1, dw_stride=None, dw_pad=None, dw_dilate=None,
                  dw_num_group: int = 1) -> bool:
    """Whether ``pwdw_conv`` runs, and pays for, a 2-D 1x1 convolution (stride
    1, no padding or groups; an expansion of at most ``MAX_IN_CHANNELS``
    channels to ``MIN_EXPANSION`` times as many or more) of weights
    ``weight_shape`` on ``src_shape``, followed by a depthwise 3x3 one of
    ``dw_weight_shape`` (stride 1 or 2, padding 1, one filter per channel, the
    channels a multiple of 16), and the build has the kernel."""
    if len(src_shape) != 4 or len(weight_shape) != 4 or len(dw_weight_shape) != 4:
        return False
    channels = weight_shape[0]
    return (num_group == 1 and tuple(weight_shape[1:]) == (src_shape[1], 1, 1)
            and src_shape[1] <= MAX_IN_CHANNELS
            and channels >= MIN_EXPANSION * src_shape[1]
            and spatial_param(stride, 2, 1, "stride", 1) == (1, 1)
            and spatial_param(pad, 2, 0, "pad", 0) == (0, 0)
            and spatial_param(dilate, 2, 1, "dilate", 1) == (1, 1)
            and channels % BLOCK == 0 and dw_num_group == channels
            and tuple(dw_weight_shape) == (channels, 1, 3, 3)
            and spatial_param(dw_stride, 2, 1, "stride", 1) in ((1, 1), (2, 2))
            and spatial_param(dw_pad, 2, 0, "pad", 0) == (1, 1)
            and spatial_param(dw_dilate, 2, 1, "dilate", 1) == (1, 1)
            and pwdw_available())


def pwdw_projects(channels: int, weight_shape: Sequence[int], *, stride=None, pad=None,
                  dilate=None, num_group: int = 1) -> bool:
    """Whether ``pwdw_conv`` can end with a 1x1 convolution of weights
    ``weight_shape`` reading its ``channels`` filtered ones (stride 1, no
    padding or groups): MobileNet v2's projection."""
    return (len(weight_shape) == 4 and tuple(weight_shape[1:]) == (channels, 1, 1)
            and num_group == 1 and spatial_param(stride, 2, 1, "stride", 1) == (1, 1)
            and spatial_param(pad, 2, 0, "pad", 0) == (0, 0)
            and spatial_param(dilate, 2, 1, "dilate", 1) == (1, 1))


def pwdw_weights(w: np.ndarray) -> np.ndarray:
    """1x1 weights ``(O, C, 1, 1)`` as the kernel reads them, ``(C, O)``."""
    return np.ascontiguousarray(w.reshape(w.shape[:2]).T, dtype=FLOAT32)


def _blocks(channels: int) -> int:
    """Channels rounded up to whole blocks."""
    return -(-channels // BLOCK) * BLOCK


def pwdw_project_weights(w: np.ndarray) -> np.ndarray:
    """Projection weights ``(P, C, 1, 1)`` as the kernel reads them, ``(C, P)``
    with zero columns up to whole blocks (the dst's padding stays zero)."""
    out = np.zeros((w.shape[1], _blocks(w.shape[0])), FLOAT32)
    out[:, :w.shape[0]] = w.reshape(w.shape[:2]).T
    return out


def pwdw_project_bias(b: np.ndarray) -> np.ndarray:
    """The projection's bias with zeros up to whole blocks."""
    out = np.zeros(_blocks(b.shape[0]), FLOAT32)
    out[:b.shape[0]] = b
    return out


def pwdw_dw_weights(w: np.ndarray) -> np.ndarray:
    """Depthwise weights ``(O, 1, 3, 3)`` as the kernel reads them,
    ``(O / 16, 9, 16)``: per block of 16 channels, tap, then channel."""
    blocks = w.reshape(w.shape[0] // BLOCK, BLOCK, TAPS)
    return np.ascontiguousarray(blocks.transpose(0, 2, 1), dtype=FLOAT32)


def pwdw_conv(src_shape: Sequence[int], out_channels: int, *, stride: int,
              bounds: tuple[tuple[float, float], tuple[float, float]],
              project: int = 0, residual: bool = False) -> Primitive:
    """The two convolutions (see ``pwdw_supports``), and with ``project`` a
    linear 1x1 convolution to that many channels reading the depthwise one
    (``pwdw_projects``), adding src where ``residual``: src and dst float32
    nChw16c; ``bounds`` the 1x1 convolution's (lo, hi), then the depthwise
    one's. Arguments: src, weights (MXNet's ``(O, C, 1, 1)``), bias,
    dw_weights (``(O, 1, 3, 3)``), dw_bias, [post1_weights (``(P, O, 1, 1)``),
    post1_bias], dst."""
    src = as_dims(src_shape, "pwdw_conv src")
    if len(src) != 4 or out_channels <= 0 or out_channels % BLOCK or stride not in (1, 2) \
            or project < 0:
        raise BackendError(f"pwdw_conv: needs 2-D data (N, C, H, W), out_channels a positive "
                           f"multiple of {BLOCK}, stride 1 or 2 and project >= 0; got src "
                           f"{src}, out_channels {out_channels}, stride {stride}, project "
                           f"{project}")
    if residual and (project != src[1] or stride != 1):
        raise BackendError(f"pwdw_conv: a residual needs the projection to give the "
                           f"input's {src[1]} channels at stride 1, not {project} at {stride}")
    (lo0, hi0), (lo1, hi1) = bounds
    ffi = native().ffi
    user: dict[str, tuple[tuple[int, ...], Callable]] = {
        "weights": ((out_channels, src[1], 1, 1), pwdw_weights),
            "dw_weights": ((out_channels, 1, 3, 3), pwdw_dw_weights)}
    if project:
        user["post1_weights"] = ((project, out_channels, 1, 1), pwdw_project_weights)
        user["post1_bias"] = ((project,), pwdw_project_bias)
    return build_primitive(
        "pwdw_conv", f"src {src} out_channels {out_channels} stride {stride} "
                     f"project {project} residual {residual}",
        native().lib.mmx_pwdw_conv_init, list(src), int(out_channels), int(stride),
        int(project), int(residual), ffi.new("float[2]", [lo0, lo1]),
        ffi.new("float[2]", [hi0, hi1]), user=user)
