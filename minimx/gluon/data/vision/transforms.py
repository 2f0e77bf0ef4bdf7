"""`mx.gluon.data.vision.transforms`: the image transforms of MXNet 1.9.1's Gluon,
as callables on NDArrays (an image HWC, or a batch NHWC before `ToTensor`; CHW
or NCHW after it), each running the `mx.nd.image` / `mx.image` operation
MXNet's runs, so the values are the same:

>>> import minimx as mx
>>> from minimx.gluon.data.vision import transforms
>>> f = transforms.Compose([transforms.Resize(300), transforms.CenterCrop(256),
...                         transforms.ToTensor()])
>>> f(mx.nd.zeros((224, 224, 3), dtype="uint8")).shape
(3, 256, 256)

In MXNet they are Blocks, which ``hybridize`` compiles into a graph; here
they run operation by operation and ``hybridize`` leaves them as they are.
The random ones draw from minimx's generator (``mx.random.seed``) where
MXNet's operators draw from MXNet's, so their draws are not MXNet's;
`RandomApply` and `RandomRotation` draw from Python's and numpy's, as MXNet's.
"""
from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .... import image
from .... import ndarray as nd
from ....base import DTypeError
from ....ndarray import NDArray
from ...errors import InputError

Size = int | tuple[int, int]


class Transform:
    """A transform: ``t(x)`` is ``t.forward(x)``."""

    def __call__(self, x: NDArray) -> NDArray:
        return self.forward(x)

    def forward(self, x: NDArray) -> NDArray:
        raise NotImplementedError

    def hybridize(self, active: bool = True, **kwargs: Any) -> None:
        """MXNet's compiles the transform; this one already runs as compiled would."""

    def __repr__(self) -> str:
        fields = ", ".join(f"{k.lstrip('_')}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"


def _pair(size: Size) -> tuple[int, int]:
    if isinstance(size, int | np.integer):
        return int(size), int(size)
    w, h = size
    return int(w), int(h)


class Compose(Transform):
    """The transforms one after the other."""

    def __init__(self, transforms: Sequence[Callable[[NDArray], NDArray]]) -> None:
        self._transforms = list(transforms)

    def forward(self, x: NDArray) -> NDArray:
        for t in self._transforms:
            x = t(x)
        return x

    def __repr__(self) -> str:
        inner = "".join(f"\n  ({i}): {t!r}" for i, t in enumerate(self._transforms))
        return f"Compose({inner}\n)"


class RandomApply(Transform):
    """`transforms` with probability `p` (Python's ``random``, as MXNet's)."""

    def __init__(self, transforms: Callable[[NDArray], NDArray], p: float = 0.5) -> None:
        self.transforms, self.p = transforms, p

    def forward(self, x: NDArray) -> NDArray:
        return x if self.p < random.random() else self.transforms(x)


class Cast(Transform):
    """The input cast to `dtype`."""

    def __init__(self, dtype: Any = "float32") -> None:
        self._dtype = dtype

    def forward(self, x: NDArray) -> NDArray:
        return nd.cast(x, dtype=self._dtype)


class ToTensor(Transform):
    """HWC (or NHWC) values in [0, 255] to CHW (NCHW) float32 in [0, 1]."""

    def forward(self, x: NDArray) -> NDArray:
        return nd.image.to_tensor(x)


class Normalize(Transform):
    """``(x - mean) / std`` per channel of a CHW (NCHW) tensor."""

    def __init__(self, mean: float | Sequence[float] = 0.0,
                 std: float | Sequence[float] = 1.0) -> None:
        self._mean, self._std = mean, std

    def forward(self, x: NDArray) -> NDArray:
        return nd.image.normalize(x, mean=self._mean, std=self._std)


class Resize(Transform):
    """An image resized to `size` (w, h), or with `keep_ratio` its shorter
    side to an int `size`; `interpolation` as OpenCV's (1: bilinear)."""

    def __init__(self, size: Size, keep_ratio: bool = False, interpolation: int = 1) -> None:
        self._size, self._keep, self._interpolation = size, keep_ratio, interpolation

    def forward(self, x: NDArray) -> NDArray:
        return nd.image.resize(x, size=self._size, keep_ratio=self._keep,
                               interp=self._interpolation)


class CropResize(Transform):
    """The `width` x `height` crop at (`x`, `y`), resized to `size` if given."""

    def __init__(self, x: int, y: int, width: int, height: int, size: Size | None = None,
                 interpolation: int | None = None) -> None:
        self._x, self._y, self._width, self._height = x, y, width, height
        self._size, self._interpolation = size, interpolation

    def forward(self, x: NDArray) -> NDArray:
        out = nd.image.crop(x, x=self._x, y=self._y, width=self._width, height=self._height)
        if not self._size:
            return out
        interp = {} if self._interpolation is None else {"interp": self._interpolation}
        return nd.image.resize(out, size=self._size, keep_ratio=False, **interp)


class CenterCrop(Transform):
    """The centre crop of `size` (w, h), resized up where the image is smaller."""

    def __init__(self, size: Size, interpolation: int = 1) -> None:
        self._args = (_pair(size), interpolation)

    def forward(self, x: NDArray) -> NDArray:
        return image.center_crop(x, *self._args)[0]


class RandomResizedCrop(Transform):
    """A random crop of a `scale` share of the area and an aspect `ratio` in
    the ranges, resized to `size`."""

    def __init__(self, size: Size, scale: tuple[float, float] = (0.08, 1.0),
                 ratio: tuple[float, float] = (3.0 / 4.0, 4.0 / 3.0),
                 interpolation: int = 1) -> None:
        self._args = (_pair(size), scale, ratio, interpolation)

    def forward(self, x: NDArray) -> NDArray:
        return image.random_size_crop(x, *self._args)[0]


def _float32_only(x: NDArray, what: str) -> None:
    if x.dtype != np.float32:
        raise DTypeError(f"{what} only supports float32, got {x.dtype}. Consider calling it "
                         f"after ToTensor")


class Rotate(Transform):
    """A CHW (NCHW) float32 image turned by `rotation_degrees`."""

    def __init__(self, rotation_degrees: float, zoom_in: bool = False,
                 zoom_out: bool = False) -> None:
        self._args = (rotation_degrees, zoom_in, zoom_out)

    def forward(self, x: NDArray) -> NDArray:
        _float32_only(x, "Rotate")
        return image.imrotate(x, *self._args)


class RandomRotation(Transform):
    """A CHW (NCHW) float32 image turned by an angle drawn from `angle_limits`,
    with probability `rotate_with_proba` (numpy's generator, as MXNet's)."""

    def __init__(self, angle_limits: tuple[float, float], zoom_in: bool = False,
                 zoom_out: bool = False, rotate_with_proba: float = 1.0) -> None:
        lower, upper = angle_limits
        if lower >= upper:
            raise InputError(f"`angle_limits` must be an ordered tuple, got {angle_limits}")
        if not 0 <= rotate_with_proba <= 1:
            raise InputError(f"Probability of rotating the image should be between 0 and 1, "
                             f"got {rotate_with_proba}")
        self._args = ((float(lower), float(upper)), zoom_in, zoom_out)
        self._rotate_with_proba = rotate_with_proba

    def forward(self, x: NDArray) -> NDArray:
        if np.random.random() > self._rotate_with_proba:
            return x
        _float32_only(x, "RandomRotation")
        return image.random_rotate(x, *self._args)


class RandomFlipLeftRight(Transform):
    """The image mirrored left to right with probability 0.5."""

    def forward(self, x: NDArray) -> NDArray:
        return nd.image.random_flip_left_right(x)


class RandomFlipTopBottom(Transform):
    """The image mirrored top to bottom with probability 0.5."""

    def forward(self, x: NDArray) -> NDArray:
        return nd.image.random_flip_top_bottom(x)


class _RandomFactor(Transform):
    """A colour change by a factor drawn from ``[max(0, 1 - amount), 1 + amount]``
    by `op`, one of `mx.nd.image`'s random operators."""

    def __init__(self, amount: float, op: Callable[..., NDArray]) -> None:
        self._args = (max(0, 1 - amount), 1 + amount)
        self._op = op

    def forward(self, x: NDArray) -> NDArray:
        return self._op(x, min_factor=self._args[0], max_factor=self._args[1])

    def __repr__(self) -> str:
        return f"{type(self).__name__}(args={self._args!r})"


class RandomBrightness(_RandomFactor):
    """Brightness scaled by a random factor near 1 (see `_RandomFactor`)."""

    def __init__(self, brightness: float) -> None:
        super().__init__(brightness, nd.image.random_brightness)


class RandomContrast(_RandomFactor):
    """Contrast scaled by a random factor near 1."""

    def __init__(self, contrast: float) -> None:
        super().__init__(contrast, nd.image.random_contrast)


class RandomSaturation(_RandomFactor):
    """Saturation scaled by a random factor near 1."""

    def __init__(self, saturation: float) -> None:
        super().__init__(saturation, nd.image.random_saturation)


class RandomHue(_RandomFactor):
    """Hue moved by a random factor near 1."""

    def __init__(self, hue: float) -> None:
        super().__init__(hue, nd.image.random_hue)


class RandomColorJitter(Transform):
    """Brightness, contrast, saturation and hue each changed at random."""

    def __init__(self, brightness: float = 0, contrast: float = 0, saturation: float = 0,
                 hue: float = 0) -> None:
        self._args = (brightness, contrast, saturation, hue)

    def forward(self, x: NDArray) -> NDArray:
        b, c, s, h = self._args
        return nd.image.random_color_jitter(x, brightness=b, contrast=c, saturation=s, hue=h)


class RandomLighting(Transform):
    """AlexNet's PCA lighting noise of standard deviation `alpha`."""

    def __init__(self, alpha: float) -> None:
        self._alpha = alpha

    def forward(self, x: NDArray) -> NDArray:
        return nd.image.random_lighting(x, alpha_std=self._alpha)
