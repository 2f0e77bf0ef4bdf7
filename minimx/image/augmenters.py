"""MXNet 1.9.1's image augmenters (`mx.image.Augmenter` and its subclasses) and
`CreateAugmenter`, which chains them as its ImageNet scripts do.

An augmenter is called on one height x width x channels image NDArray and returns the
augmented one. Random choices use Python's `random` module, as MXNet's do.
"""
from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import ndarray as nd
from ..base import MinimxError
from ..ndarray import NDArray, array
from .image import (
    _get_interp_method,
    center_crop,
    color_normalize,
    imresize,
    random_crop,
    random_size_crop,
    resize_short,
)

_GRAY_COEF = (0.299, 0.587, 0.114)   # ITU-R 601 luma, as MXNet's jitters use


def plain_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """An augmenter's arguments with arrays as lists, as `dumps` writes them."""
    return {k: v.asnumpy().tolist() if isinstance(v, NDArray) else
            v.tolist() if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}


class Augmenter:
    """The base class: keeps its arguments for `dumps`; subclasses give `__call__`."""

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = plain_kwargs(kwargs)

    def dumps(self) -> str:
        """The augmenter as JSON: `[class name in lower case, its arguments]`."""
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __call__(self, src: NDArray) -> NDArray:
        raise NotImplementedError(f"{type(self).__name__} must define __call__")


class SequentialAug(Augmenter):
    """The augmenters `ts`, one after another."""

    def __init__(self, ts: Sequence[Augmenter]) -> None:
        super().__init__()
        self.ts = list(ts)

    def dumps(self) -> str:
        return json.dumps([type(self).__name__.lower(), [json.loads(t.dumps()) for t in self.ts]])

    def __call__(self, src: NDArray) -> NDArray:
        for aug in self.ts:
            src = aug(src)
        return src


class RandomOrderAug(SequentialAug):
    """The augmenters `ts` in a random order."""

    def __call__(self, src: NDArray) -> NDArray:
        order = list(self.ts)
        random.shuffle(order)
        return SequentialAug(order)(src)


class _Sized(Augmenter):
    """An augmenter to a `size` with OpenCV interpolation `interp`."""

    def __init__(self, size: Any, interp: int = 2) -> None:
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp


class ResizeAug(_Sized):
    """Resize the shorter side to `size` (`resize_short`)."""

    def __call__(self, src: NDArray) -> NDArray:
        return resize_short(src, self.size, self.interp)


class ForceResizeAug(_Sized):
    """Resize to `size` (width, height), whatever the aspect."""

    def __call__(self, src: NDArray) -> NDArray:
        sizes = (src.shape[0], src.shape[1], self.size[1], self.size[0])
        interp = _get_interp_method(self.interp, sizes)
        return imresize(src, self.size[0], self.size[1], interp)


class RandomCropAug(_Sized):
    """A random crop of `size` (width, height) (`random_crop`)."""

    def __call__(self, src: NDArray) -> NDArray:
        return random_crop(src, self.size, self.interp)[0]


class RandomSizedCropAug(_Sized):
    """A random crop of `area` and aspect `ratio`, resized to `size` (`random_size_crop`)."""

    def __init__(self, size: Any, area: Any, ratio: tuple[float, float], interp: int = 2) -> None:
        Augmenter.__init__(self, size=size, area=area, ratio=ratio, interp=interp)
        self.size, self.area, self.ratio, self.interp = size, area, ratio, interp

    def __call__(self, src: NDArray) -> NDArray:
        return random_size_crop(src, self.size, self.area, self.ratio, self.interp)[0]


class CenterCropAug(_Sized):
    """The centred crop of `size` (width, height) (`center_crop`)."""

    def __call__(self, src: NDArray) -> NDArray:
        return center_crop(src, self.size, self.interp)[0]


class _Jitter(Augmenter):
    """A jitter by a random factor in [1 - amount, 1 + amount], the amount given under
    its MXNet name."""

    def __init__(self, **amount: float) -> None:
        super().__init__(**amount)
        (self.amount,) = amount.values()

    def _alpha(self) -> float:
        return 1.0 + random.uniform(-self.amount, self.amount)


class BrightnessJitterAug(_Jitter):
    """Scale a float image by a random factor in [1 - brightness, 1 + brightness]."""

    def __init__(self, brightness: float) -> None:
        super().__init__(brightness=brightness)

    def __call__(self, src: NDArray) -> NDArray:
        src *= self._alpha()
        return src


class ContrastJitterAug(_Jitter):
    """Blend a float RGB image with its mean grey level, by a random factor in
    [1 - contrast, 1 + contrast]."""

    def __init__(self, contrast: float) -> None:
        super().__init__(contrast=contrast)

    def __call__(self, src: NDArray) -> NDArray:
        alpha = self._alpha()
        gray = src * array(_GRAY_COEF)
        mean = (3.0 * (1.0 - alpha) / gray.size) * float(nd.sum(gray).asscalar())
        src *= alpha
        src += mean
        return src


class SaturationJitterAug(_Jitter):
    """Blend a float RGB image with its grey version, by a random factor in
    [1 - saturation, 1 + saturation]."""

    def __init__(self, saturation: float) -> None:
        super().__init__(saturation=saturation)

    def __call__(self, src: NDArray) -> NDArray:
        alpha = self._alpha()
        gray = nd.sum(src * array(_GRAY_COEF), axis=2, keepdims=True)
        gray *= 1.0 - alpha
        src *= alpha
        src += gray
        return src


class HueJitterAug(_Jitter):
    """Rotate the hue of a float RGB image by a random angle in [-hue, hue] half-turns,
    in YIQ space."""

    _TYIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]])
    _ITYIQ = np.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647], [1.0, -1.107, 1.705]])

    def __init__(self, hue: float) -> None:
        super().__init__(hue=hue)

    def __call__(self, src: NDArray) -> NDArray:
        alpha = random.uniform(-self.amount, self.amount)
        u, w = np.cos(alpha * np.pi), np.sin(alpha * np.pi)
        rotation = np.array([[1.0, 0.0, 0.0], [0.0, u, -w], [0.0, w, u]])
        matrix = (self._ITYIQ @ rotation @ self._TYIQ).T
        return nd.dot(src, array(matrix))


class ColorJitterAug(RandomOrderAug):
    """Brightness, contrast and saturation jitters (those not 0), in a random order."""

    def __init__(self, brightness: float, contrast: float, saturation: float) -> None:
        jitters: list[Augmenter] = []
        if brightness > 0:
            jitters.append(BrightnessJitterAug(brightness))
        if contrast > 0:
            jitters.append(ContrastJitterAug(contrast))
        if saturation > 0:
            jitters.append(SaturationJitterAug(saturation))
        super().__init__(jitters)


class ColorNormalizeAug(Augmenter):
    """`(src - mean) / std` per channel (`color_normalize`) on a float image."""

    def __init__(self, mean: Any, std: Any) -> None:
        super().__init__(mean=mean, std=std)
        self.mean = None if mean is None else _as_nd(mean)
        self.std = None if std is None else _as_nd(std)

    def __call__(self, src: NDArray) -> NDArray:
        return color_normalize(src, self.mean, self.std)


class LightingAug(Augmenter):
    """AlexNet's PCA lighting noise: add `eigvec * alpha @ eigval` to each RGB pixel,
    alpha drawn from N(0, alphastd) with numpy's global generator (as MXNet's)."""

    def __init__(self, alphastd: float, eigval: Any, eigvec: Any) -> None:
        super().__init__(alphastd=alphastd, eigval=eigval, eigvec=eigvec)
        self.alphastd = alphastd
        self.eigval, self.eigvec = np.asarray(eigval), np.asarray(eigvec)

    def __call__(self, src: NDArray) -> NDArray:
        alpha = np.random.normal(0, self.alphastd, size=(3,))
        src += array(np.dot(self.eigvec * alpha, self.eigval))
        return src


class RandomGrayAug(Augmenter):
    """With probability `p`, replace each RGB pixel by its grey level (0.21 R + 0.72 G
    + 0.07 B) in all three channels."""

    _MIX = ((0.21, 0.21, 0.21), (0.72, 0.72, 0.72), (0.07, 0.07, 0.07))

    def __init__(self, p: float) -> None:
        super().__init__(p=p)
        self.p = p

    def __call__(self, src: NDArray) -> NDArray:
        return nd.dot(src, array(self._MIX)) if random.random() < self.p else src


class HorizontalFlipAug(Augmenter):
    """Mirror left to right with probability `p`."""

    def __init__(self, p: float) -> None:
        super().__init__(p=p)
        self.p = p

    def __call__(self, src: NDArray) -> NDArray:
        return nd.flip(src, axis=1) if random.random() < self.p else src


class CastAug(Augmenter):
    """Cast to `typ` (float32: what the jitters and normalisation need)."""

    def __init__(self, typ: str = "float32") -> None:
        super().__init__(type=typ)
        self.typ = typ

    def __call__(self, src: NDArray) -> NDArray:
        return src.astype(self.typ)


def _as_nd(values: Any) -> NDArray:
    return values if isinstance(values, NDArray) else array(np.asarray(values, np.float32))


_MEAN_RGB = (123.68, 116.28, 103.53)   # ImageNet's, for mean=True
_STD_RGB = (58.395, 57.12, 57.375)
_PCA_EIGVAL = np.array([55.46, 4.794, 1.148])   # ImageNet's RGB principal components
_PCA_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009],
                        [-0.5808, -0.0045, -0.8140],
                        [-0.5836, -0.6948, 0.4203]])


def CreateAugmenter(data_shape: Sequence[int], resize: int = 0, rand_crop: bool = False,  # noqa: N802
                    rand_resize: bool = False, rand_mirror: bool = False, mean: Any = None,
                    std: Any = None, brightness: float = 0, contrast: float = 0,
                    saturation: float = 0, hue: float = 0, pca_noise: float = 0,
                    rand_gray: float = 0, inter_method: int = 2) -> list[Augmenter]:
    """MXNet's standard augmenter list for `data_shape` (channels, height, width): resize
    the shorter side to `resize` (if > 0), crop to the data size (centred, or random with
    `rand_crop`), mirror by a coin (`rand_mirror`), cast to float32, jitter colours, and
    normalise (`mean` / `std`: per-channel values, or True for ImageNet's).
    `rand_resize` (with `rand_crop`) crops a random area and aspect instead; `hue`,
    `pca_noise` and `rand_gray` add those augmenters after the colour jitters.

    >>> import minimx as mx
    >>> [type(a).__name__ for a in mx.image.CreateAugmenter((3, 224, 224), resize=256,
    ...                                                     mean=True, std=True)]
    ['ResizeAug', 'CenterCropAug', 'CastAug', 'ColorNormalizeAug']
    """
    if rand_resize and not rand_crop:
        raise MinimxError("CreateAugmenter: rand_resize needs rand_crop=True")
    auglist: list[Augmenter] = []
    if resize > 0:
        auglist.append(ResizeAug(resize, inter_method))
    crop_size = (data_shape[2], data_shape[1])
    if rand_resize:
        auglist.append(RandomSizedCropAug(crop_size, 0.08, (3.0 / 4.0, 4.0 / 3.0), inter_method))
    else:
        auglist.append(RandomCropAug(crop_size, inter_method) if rand_crop
                       else CenterCropAug(crop_size, inter_method))
    if rand_mirror:
        auglist.append(HorizontalFlipAug(0.5))
    auglist.append(CastAug())
    auglist += color_augmenters(brightness, contrast, saturation, hue, pca_noise, rand_gray)
    normalize = normalize_augmenter(mean, std, "CreateAugmenter")
    return auglist if normalize is None else [*auglist, normalize]


def color_augmenters(brightness: float, contrast: float, saturation: float, hue: float,
                     pca_noise: float, rand_gray: float) -> list[Augmenter]:
    """The colour stages of MXNet's standard lists (after the cast to float32): jitters,
    hue, PCA lighting noise and random grey, each only when asked for."""
    auglist: list[Augmenter] = []
    if brightness or contrast or saturation:
        auglist.append(ColorJitterAug(brightness, contrast, saturation))
    if hue:
        auglist.append(HueJitterAug(hue))
    if pca_noise > 0:
        auglist.append(LightingAug(pca_noise, _PCA_EIGVAL, _PCA_EIGVEC))
    if rand_gray > 0:
        auglist.append(RandomGrayAug(rand_gray))
    return auglist


def normalize_augmenter(mean: Any, std: Any, what: str) -> ColorNormalizeAug | None:
    """The last stage of MXNet's standard lists: `ColorNormalizeAug` for per-channel
    `mean` / `std` (True: ImageNet's), or None when neither is given."""
    mean = _MEAN_RGB if mean is True else mean
    std = _STD_RGB if std is True else std
    for name, values in (("mean", mean), ("std", std)):
        if values is not None and np.shape(_as_nd(values).asnumpy())[:1] not in ((1,), (3,)):
            raise MinimxError(f"{what}: {name} must have 1 or 3 values, got {values!r}")
    if mean is None and std is None:
        return None
    return ColorNormalizeAug(mean, std)
