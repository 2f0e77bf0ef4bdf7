"""The ``image`` fixture group of `mxnet_fixtures.py`: what MXNet 1.9.1's `mx.image` gives
on small synthetic PNG and JPEG files - decoding, resizing, crops, normalisation,
`CreateAugmenter` pipelines without randomness, and `ImageIter` batches from a .rec file
and from an image list; and what its legacy `mx.nd.imdecode` kernel gives, and refuses.

MXNet 1.9.1's own `mx.nd.imdecode` never decodes under Python 3: it hands the image to the
`_imdecode` operator as a string parameter (`str(bytes)`, or a NUL-terminated UTF-8 C
string), and fails earlier still without `mean` (cases.json keeps both messages). The
kernel behind it is reached here through the C API's `MXFuncInvokeEx`, which passes the
bytes as they are.

Runs with MXNet's Python only (never minimx), with Pillow beside MXNet to encode the
images (MXNet decodes and resizes with its own OpenCV). ``cases.json`` lists each call
(function, source image, arguments); ``results.npz`` holds what it returned, keyed by
case name (`<case>:<epoch>:<batch>:data` / `:label` for ImageIter; `imdecode:<case>` with
its `:mean` and `:out_in` for the legacy decoder, bfloat16 as its uint16 bits).
"""
from __future__ import annotations

import ctypes
import io
import json
from pathlib import Path

import mxnet as mx
import numpy as np
from mxnet.base import _LIB, NDArrayHandle, c_str, check_call
from mxnet.ndarray.ndarray import _new_empty_handle
from PIL import Image

# (file, Pillow format, rows, cols, channels)
IMAGES = [("color.png", "PNG", 10, 13, 3), ("gray.png", "PNG", 9, 7, 1),
          ("photo.jpg", "JPEG", 16, 20, 3), ("tall.png", "PNG", 14, 8, 3)]
DECODES = [(name, flag, to_rgb) for name, *_ in IMAGES for flag, to_rgb in
           ((1, 1), (1, 0), (0, 1))]
# (case, function, image, keyword arguments); the image is decoded as RGB.
CALLS = [(f"imresize_{w}x{h}_{interp}", "imresize", "color.png", dict(w=w, h=h, interp=interp))
         for interp in (0, 1, 2) for w, h in ((7, 5), (20, 17), (13, 4), (26, 20))] + [
    ("imresize_tall_half", "imresize", "tall.png", dict(w=4, h=7, interp=1)),
    ("resize_short_7_1", "resize_short", "color.png", dict(size=7, interp=1)),
    ("resize_short_7_0", "resize_short", "color.png", dict(size=7, interp=0)),
    ("resize_short_16_2", "resize_short", "tall.png", dict(size=16, interp=2)),
    ("resize_short_12_9", "resize_short", "color.png", dict(size=12, interp=9)),
    ("center_crop_6x5", "center_crop", "color.png", dict(size=(6, 5))),
    ("center_crop_up", "center_crop", "color.png", dict(size=(20, 20), interp=1)),
    ("center_crop_tall", "center_crop", "tall.png", dict(size=(8, 9), interp=0)),
    ("fixed_crop", "fixed_crop", "color.png", dict(x0=2, y0=3, w=6, h=4)),
    ("fixed_crop_resized", "fixed_crop", "color.png", dict(x0=1, y0=1, w=8, h=6, size=(16, 12),
                                                           interp=1)),
]
NORMALIZE = [("normalize_mean_std", [123.68, 116.28, 103.53], [58.395, 57.12, 57.375]),
             ("normalize_mean", [100.0, 50.0, 25.5], None)]
# CreateAugmenter pipelines without randomness, applied to each RGB image.
PIPELINES = [("aug_center", dict(data_shape=(3, 8, 8), inter_method=1)),
             ("aug_resize_norm", dict(data_shape=(3, 6, 7), resize=9, mean=True, std=True,
                                      inter_method=1)),
             ("aug_nearest", dict(data_shape=(3, 12, 12), resize=12, inter_method=0,
                                  mean=np.array([10.0, 20.0, 30.0]))),
             ("aug_cubic", dict(data_shape=(3, 5, 5), resize=7, inter_method=2))]
# ImageIter cases: (case, arguments, epochs); `path_*` arguments are relative to the group.
_REC = dict(path_imgrec="iter.rec")
_LIST = dict(path_imglist="iter.lst", path_root=".")
_IMGLIST = [[float(i), i + 0.25, f"files/{i}.png"] for i in range(5)]
ITERS = [("iter_rec", dict(_REC, batch_size=3, data_shape=(3, 8, 8), inter_method=1), 2),
         ("iter_rec_idx", dict(_REC, path_imgidx="iter.idx", batch_size=4, data_shape=(3, 6, 6),
                               resize=8, inter_method=1, mean=True), 1),
         ("iter_list", dict(_LIST, batch_size=3, data_shape=(3, 7, 7), inter_method=1), 2),
         ("iter_list_discard", dict(_LIST, batch_size=3, data_shape=(3, 7, 7), inter_method=1,
                                    last_batch_handle="discard"), 1),
         ("iter_imglist", dict(imglist=_IMGLIST, path_root=".", batch_size=2,
                               data_shape=(3, 8, 8), inter_method=0, label_width=2), 1)]
SIZES = [(8, 8), (10, 9), (9, 12), (16, 8), (8, 11)]
# The legacy decoder: (case, image, arguments). `mean` is [shape or None (the result's),
# dtype] and `out` [shape, dtype]: arrays made by `_legacy_arrays`.
_F32 = "float32"
IMDECODES = [
    ("color", "color.png", {}), ("color_grey", "color.png", dict(channels=1)),
    ("color_two", "color.png", dict(channels=2)), ("color_none", "color.png", dict(channels=0)),
    ("gray", "gray.png", dict(channels=1)), ("photo", "photo.jpg", {}),
    ("photo_grey", "photo.jpg", dict(channels=1)), ("alpha", "alpha.png", dict(channels=4)),
    ("alpha_bgr", "alpha.png", {}), ("clip", "color.png", dict(clip_rect=(2, 1, 9, 7))),
    ("clip_photo", "photo.jpg", dict(clip_rect=(0, 3, 20, 16), channels=1)),
    ("clip_flat", "color.png", dict(clip_rect=(3, 4, 8, 4))),   # y1 == y0: the whole image
    ("clip_mean", "photo.jpg", dict(clip_rect=(1, 2, 7, 9), mean=[None, _F32])),
    ("out3", "color.png", dict(out=[(3, 10, 13), _F32])),
    ("out3_index", "color.png", dict(out=[(3, 10, 13), _F32], index=5)),   # index unused
    ("out4", "color.png", dict(out=[(3, 3, 10, 13), _F32], index=1)),
    ("out_int8", "color.png", dict(out=[(3, 10, 13), "int8"])),
    ("out_mean", "photo.jpg", dict(out=[(2, 1, 16, 20), "float64"], index=0, channels=1,
                                   mean=[None, "float64"])),
] + [(f"mean_{dtype}", "color.png", dict(mean=[None, dtype]))
     for dtype in ("float32", "float64", "float16", "bfloat16", "uint8", "int8", "int32",
                   "int64")]
IMDECODE_ERRORS = [
    ("grey_as_colour", "gray.png", dict(channels=3)),
    ("too_many_channels", "color.png", dict(channels=5)),
    ("clip_outside", "color.png", dict(clip_rect=(0, 0, 14, 10))),
    ("out_2d", "color.png", dict(out=[(10, 13), _F32])),
    ("out_shape", "color.png", dict(out=[(3, 10, 12), _F32])),
    ("out_index", "color.png", dict(out=[(2, 3, 10, 13), _F32], index=2)),
    ("out_bool", "color.png", dict(out=[(3, 10, 13), "bool"])),
    ("mean_shape", "color.png", dict(mean=[(3, 10, 12), _F32])),
    ("mean_rank", "color.png", dict(mean=[(3, 10), _F32])),
    ("mean_dtype", "color.png", dict(mean=[(3, 10, 13), _F32], out=[(3, 10, 13), "float64"])),
    ("not_an_image", "iter.lst", {}),
]
_BF16 = np.dtype([("bfloat16", np.uint16)])   # how MXNet 1.9.1's Python names bfloat16


def _pixels(rng: np.random.RandomState, rows: int, cols: int, channels: int) -> np.ndarray:
    """A gradient with noise: JPEG keeps it close, where pure noise would not."""
    y, x = np.mgrid[0:rows, 0:cols]
    planes = [(40 + 150 * (x * (c + 1) + y * (3 - c)) / (rows + cols) / 2
               + rng.randint(0, 40, (rows, cols))) for c in range(channels)]
    pixels = np.clip(np.stack(planes, -1), 0, 255).astype(np.uint8)
    return pixels[..., 0] if channels == 1 else pixels


def _encoded(pixels: np.ndarray, fmt: str) -> bytes:
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format=fmt, **({"quality": 90} if fmt == "JPEG" else {}))
    return out.getvalue()


def _write_sources(out: Path) -> None:
    """The images, a .rec / .idx of five PNGs, and the same PNGs as files with a .lst."""
    rng = np.random.RandomState(7)
    for name, fmt, rows, cols, channels in IMAGES:
        (out / name).write_bytes(_encoded(_pixels(rng, rows, cols, channels), fmt))
    rec = mx.recordio.MXIndexedRecordIO(str(out / "iter.idx"), str(out / "iter.rec"), "w")
    (out / "files").mkdir(exist_ok=True)
    lines = []
    for i, (rows, cols) in enumerate(SIZES):
        payload = _encoded(_pixels(rng, rows, cols, 3), "PNG")
        rec.write_idx(i, mx.recordio.pack(mx.recordio.IRHeader(0, float(i % 3), i, 0), payload))
        (out / "files" / f"{i}.png").write_bytes(payload)
        lines.append(f"{i}\t{i * 1.5}\tfiles/{i}.png\n")
    rec.close()
    (out / "iter.lst").write_text("".join(lines))
    # A BGRA image for the legacy decoder, which keeps OpenCV's channels (its own generator:
    # the images above stay as they were).
    rgba = _pixels(np.random.RandomState(11), 6, 5, 4)
    rgba[..., 3] = np.arange(30).reshape(6, 5) * 8
    (out / "alpha.png").write_bytes(_encoded(rgba, "PNG"))


def _legacy_arrays(kwargs: dict, result_shape: tuple, seed: int) -> dict:
    """`kwargs` with its `mean` / `out` specs made arrays: means of values that wrap the
    integer types and have fractions in the float ones; `out` counting up (what the
    decoder does not write keeps it)."""
    rng = np.random.RandomState(seed)
    made = dict(kwargs)
    if "mean" in kwargs:
        shape, dtype = kwargs["mean"]
        shape = tuple(shape or result_shape)
        if dtype in ("uint8", "int8"):
            values = rng.randint(-128 if dtype == "int8" else 0, 128 if dtype == "int8" else 256,
                                 shape)
        elif dtype in ("int32", "int64"):
            values = rng.randint(-1000, 1000, shape)
        else:
            values = rng.uniform(-20.0, 150.0, shape)
        made["mean"] = mx.nd.amp_cast(mx.nd.array(values), dtype=_BF16) if dtype == "bfloat16" \
            else mx.nd.array(values, dtype=dtype)
    if "out" in kwargs:
        shape, dtype = kwargs["out"]
        made["out"] = mx.nd.array(np.arange(np.prod(shape)).reshape(shape) % 97, dtype=dtype)
    return made


def _legacy_imdecode(buf: bytes, clip_rect: tuple = (0, 0, 0, 0), out: mx.nd.NDArray = None,
                     index: int = 0, channels: int = 3, mean: mx.nd.NDArray = None
                     ) -> mx.nd.NDArray:
    """MXNet's `_imdecode` kernel, called as `mx.nd.imdecode` would call it if the bytes
    survived the trip (an empty handle for `out` / `mean` not given, as its Python does)."""
    fn = ctypes.c_void_p()
    check_call(_LIB.MXGetFunction(c_str("_imdecode"), ctypes.byref(fn)))
    mean = mx.nd.NDArray(_new_empty_handle()) if mean is None else mean
    out = mx.nd.NDArray(_new_empty_handle()) if out is None else out
    scalars = (ctypes.c_float * 7)(index, *clip_rect, channels, len(buf))
    check_call(_LIB.MXFuncInvokeEx(fn, (NDArrayHandle * 1)(mean.handle), scalars,
                                   (NDArrayHandle * 1)(out.handle), 1,
                                   (ctypes.c_char_p * 1)(b"str_img"),
                                   (ctypes.c_char_p * 1)(buf)))
    return out


def _bits(array: mx.nd.NDArray) -> np.ndarray:
    values = array.asnumpy()
    return values.view(np.uint16) if values.dtype == _BF16 else values


def _message(exc: Exception) -> str:
    return str(exc).strip().splitlines()[-1]


def _write_legacy_imdecode(out: Path, results: dict) -> dict:
    """Results of IMDECODES into `results`; MXNet's messages for IMDECODE_ERRORS and for its
    own Python front, returned."""
    for i, (case, image, kwargs) in enumerate(IMDECODES):
        buf = (out / image).read_bytes()
        shape = _legacy_imdecode(buf, kwargs.get("clip_rect", (0, 0, 0, 0)),
                                 channels=kwargs.get("channels", 3)).shape
        args = _legacy_arrays(kwargs, shape, i)
        for name in ("mean", "out"):
            if name in args:
                results[f"imdecode:{case}:{'out_in' if name == 'out' else name}"] = \
                    _bits(args[name])
        results[f"imdecode:{case}"] = _bits(_legacy_imdecode(buf, **args))
    errors = {}
    for case, image, kwargs in IMDECODE_ERRORS:
        try:
            _legacy_imdecode((out / image).read_bytes(), **_legacy_arrays(kwargs, (), 0))
        except mx.MXNetError as exc:
            errors[case] = _message(exc)
        else:
            raise AssertionError(f"MXNet's imdecode took error case {case}")
    front = {}
    png = (out / "color.png").read_bytes()
    for case, kwargs in (("no_mean", {}), ("bytes", dict(mean=mx.nd.zeros((3, 10, 13))))):
        try:
            mx.nd.imdecode(png, **kwargs)
        except mx.MXNetError as exc:
            front[case] = _message(exc)
    return {"imdecodes": IMDECODES, "imdecode_errors": [[*c, errors[c[0]]] for c in
                                                        IMDECODE_ERRORS],
            "imdecode_front": front}


def write_image(out: Path) -> None:
    """Sources, results of every case, and the cases themselves."""
    out.mkdir(parents=True, exist_ok=True)
    _write_sources(out)
    results: dict[str, np.ndarray] = {}
    for name, flag, to_rgb in DECODES:
        buf = (out / name).read_bytes()
        results[f"decode:{name}:{flag}:{to_rgb}"] = mx.image.imdecode(
            buf, flag=flag, to_rgb=to_rgb).asnumpy()
    rgb = {name: mx.image.imread(str(out / name)) for name, *_ in IMAGES}
    for case, fn, image, kwargs in CALLS:
        got = getattr(mx.image, fn)(rgb[image], **kwargs)
        results[case] = (got[0] if isinstance(got, tuple) else got).asnumpy()
    for case, mean, std in NORMALIZE:
        src = rgb["color.png"].astype("float32")
        results[case] = mx.image.color_normalize(
            src, mx.nd.array(mean), None if std is None else mx.nd.array(std)).asnumpy()
    for case, kwargs in PIPELINES:
        for name, *_ in IMAGES:
            if name == "gray.png":
                continue
            img = rgb[name]
            for aug in mx.image.CreateAugmenter(**kwargs):
                img = aug(img)
            results[f"{case}:{name}"] = img.asnumpy()
    iters = {}
    for case, kwargs, epochs in ITERS:
        it = mx.image.ImageIter(**{k: str(out / v) if k.startswith("path_") else v
                                   for k, v in kwargs.items()})
        pads = []
        for e in range(epochs):
            pads.append([])
            for b, batch in enumerate(it):
                results[f"{case}:{e}:{b}:data"] = batch.data[0].asnumpy()
                results[f"{case}:{e}:{b}:label"] = batch.label[0].asnumpy()
                pads[-1].append(batch.pad)
            it.reset()
        iters[case] = {"kwargs": kwargs, "pads": pads}
    legacy = _write_legacy_imdecode(out, results)
    np.savez_compressed(out / "results.npz", **results)
    pipelines = [[case, {k: v.tolist() if isinstance(v, np.ndarray) else v
                         for k, v in kwargs.items()}] for case, kwargs in PIPELINES]
    (out / "cases.json").write_text(json.dumps(
        {"images": [name for name, *_ in IMAGES], "decodes": DECODES, "calls": CALLS,
         "normalize": NORMALIZE, "pipelines": pipelines, "iters": iters, **legacy}, indent=1))

