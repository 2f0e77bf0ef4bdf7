"""The ``image_ops`` fixture group (tools/mxnet_fixtures.py runs it with MXNet 1.9.1): the
``_image_*`` operators (``mx.nd.image``) on seeded uint8 and float32 images of odd sizes,
height x width x channels and batches of them.

- `cases.json` / `cases.npz`: per case the operator's short name (``mx.nd.image.<op>``),
  its attributes (MXNet's strings), the input `<case>:in_0`, MXNet's output `:out_0`, and
  for graded cases a seeded head gradient `:head_0` and MXNet's input gradient `:grad_0`.
  The random operators appear with their factor pinned (``min_factor == max_factor``,
  ``alpha_std=0``), where MXNet's draw is that value. A flip's kernel leaves the middle
  row or column of an odd size unwritten, so flips run with ``out=`` a copy of the input
  (what MXNet's in-place graph form gives).
- `transforms-symbol.json` / `transforms.npz`: Gluon's transforms (CropResize, Resize with
  keep_ratio, ToTensor, Normalize) hybridized into one graph, as a user's exported
  preprocessing holds them, with an image batch `data` and MXNet's `output`.
- `errors.json`: per case the operator, attributes, input shape and dtype, whether the
  error comes in backward, a fragment of MXNet's message (checked here) and its first line.

Runs with MXNet's Python only (no minimx import).
"""
from __future__ import annotations

import json
from pathlib import Path

import mxnet as mx
import numpy as np

Case = tuple[str, str, dict, np.ndarray]
# (name, op, attrs, input shape, dtype, in backward, fragment of MXNet's message)
ErrorCase = tuple[str, str, dict, tuple, str, bool, str]
UNGRADED = ("to_tensor", "resize")   # MXNet's `_copy` gradient has the output's shape


def _images(rng: np.random.RandomState) -> dict[str, np.ndarray]:
    def uint8(*shape: int) -> np.ndarray:
        return rng.randint(0, 256, shape).astype("uint8")

    def float32(*shape: int) -> np.ndarray:
        return rng.uniform(0, 255, shape).astype("float32")

    return {"u3": uint8(5, 7, 3), "u1": uint8(7, 5, 1), "ub": uint8(2, 5, 7, 3),
            "u16": uint8(16, 16, 3), "f3": float32(5, 7, 3), "f1": float32(7, 5, 1),
            "fb": float32(2, 7, 5, 3), "even": uint8(4, 6, 3),
            "chw": rng.uniform(0, 1, (3, 5, 7)).astype("float32"),
            "chw1": rng.uniform(0, 1, (1, 7, 5)).astype("float32"),
            "nchw": rng.uniform(0, 1, (2, 3, 5, 7)).astype("float32"),
            "uchw": uint8(3, 5, 7)}


def _tensor_cases(im: dict[str, np.ndarray]) -> list[Case]:
    mean3, std3 = "(0.485, 0.456, 0.406)", "(0.229, 0.224, 0.225)"
    return [
        ("to_tensor_u3", "to_tensor", {}, im["u3"]),
        ("to_tensor_u1", "to_tensor", {}, im["u1"]),
        ("to_tensor_f3", "to_tensor", {}, im["f3"]),
        ("to_tensor_f64", "to_tensor", {}, im["f3"].astype("float64")),
        ("to_tensor_f16", "to_tensor", {}, im["u3"].astype("float16")),
        ("to_tensor_i32", "to_tensor", {}, im["u3"].astype("int32")),
        ("to_tensor_batch_u", "to_tensor", {}, im["ub"]),
        ("to_tensor_batch_f", "to_tensor", {}, im["fb"]),
        ("normalize_3", "normalize", {"mean": mean3, "std": std3}, im["chw"]),
        ("normalize_1", "normalize", {"mean": "(0.5,)", "std": "(0.25,)"}, im["chw"]),
        ("normalize_mixed", "normalize", {"mean": "(0.1, 0.2, 0.3)", "std": "0.7"}, im["chw"]),
        ("normalize_one_channel", "normalize", {"mean": "0.3", "std": "0.2"}, im["chw1"]),
        ("normalize_batch_3", "normalize", {"mean": mean3, "std": std3}, im["nchw"]),
        ("normalize_batch_1", "normalize", {"mean": "0.5", "std": "2"}, im["nchw"]),
        ("normalize_f64", "normalize", {"mean": mean3, "std": std3},
         im["chw"].astype("float64")),
        # float16: mshadow rounds x - mean to float16 before dividing
        ("normalize_f16", "normalize", {"mean": mean3, "std": std3},
         im["nchw"].astype("float16")),
        # uint8: (x - mean) / std cast as C casts it (negative values wrap)
        ("normalize_u8", "normalize", {"mean": "(100, 50, 200)", "std": "(0.5, 2, 3)"},
         im["uchw"]),
    ]


def _resize_cases(im: dict[str, np.ndarray]) -> list[Case]:
    cases = []
    for interp in range(5):
        for size in ("(11, 9)", "(4, 3)", "(3, 5)"):
            tag = size.strip("()").replace(", ", "x")
            cases += [(f"resize_u3_{tag}_i{interp}", "resize",
                       {"size": size, "interp": str(interp)}, im["u3"]),
                      (f"resize_f3_{tag}_i{interp}", "resize",
                       {"size": size, "interp": str(interp)}, im["f3"])]
        cases += [(f"resize_batch_u_i{interp}", "resize", {"size": "(6, 4)",
                                                           "interp": str(interp)}, im["ub"]),
                  (f"resize_batch_f_i{interp}", "resize", {"size": "(3, 9)",
                                                           "interp": str(interp)}, im["fb"])]
    return cases + [
        ("resize_square", "resize", {"size": "6"}, im["u3"]),
        ("resize_keep_ratio_wide", "resize", {"size": "4", "keep_ratio": "True"}, im["u3"]),
        ("resize_keep_ratio_tall", "resize", {"size": "(3,)", "keep_ratio": "True"}, im["u1"]),
        ("resize_keep_ratio_pair", "resize", {"size": "(4, 6)", "keep_ratio": "True"}, im["u3"]),
        ("resize_keep_ratio_batch", "resize", {"size": "9", "keep_ratio": "True",
                                               "interp": "2"}, im["fb"]),
        ("resize_halving", "resize", {"size": "(3, 2)"}, im["even"]),
        ("resize_same", "resize", {"size": "(7, 5)"}, im["f3"]),
        ("resize_u1", "resize", {"size": "(8, 3)", "interp": "2"}, im["u1"]),
        ("resize_f64", "resize", {"size": "(9, 4)"}, im["f3"].astype("float64")),
        ("resize_i32_nearest", "resize", {"size": "(9, 4)", "interp": "0"},
         im["u3"].astype("int32")),
    ]


def _geometry_cases(im: dict[str, np.ndarray]) -> list[Case]:
    u3, f3 = im["u3"], im["f3"]
    return [
        ("crop_inside", "crop", {"x": "1", "y": "2", "width": "3", "height": "2"}, u3),
        ("crop_whole", "crop", {"x": "0", "y": "0", "width": "7", "height": "5"}, u3),
        ("crop_corner", "crop", {"x": "6", "y": "4", "width": "1", "height": "1"}, f3),
        ("crop_right_edge", "crop", {"x": "4", "y": "0", "width": "3", "height": "5"}, f3),
        ("crop_one_channel", "crop", {"x": "2", "y": "5", "width": "3", "height": "2"},
         im["f1"]),
        ("crop_batch", "crop", {"x": "1", "y": "3", "width": "4", "height": "4"}, im["fb"]),
        ("crop_batch_u", "crop", {"x": "0", "y": "1", "width": "7", "height": "4"}, im["ub"]),
        ("flip_left_right_u3", "flip_left_right", {}, u3),
        ("flip_left_right_f1", "flip_left_right", {}, im["f1"]),
        ("flip_left_right_even", "flip_left_right", {}, im["even"]),
        ("flip_top_bottom_u3", "flip_top_bottom", {}, u3),
        ("flip_top_bottom_f3", "flip_top_bottom", {}, f3),
        ("flip_top_bottom_even", "flip_top_bottom", {}, im["even"]),
    ]


def _colour_cases(im: dict[str, np.ndarray]) -> list[Case]:
    u3, f3, u1, f1, u16 = im["u3"], im["f3"], im["u1"], im["f1"], im["u16"]

    def pinned(factor: str) -> dict:
        return {"min_factor": factor, "max_factor": factor}

    cases = [("brightness_u3", "random_brightness", pinned("0.7"), u3),
             ("brightness_saturating", "random_brightness", pinned("1.6"), u3),
             ("brightness_f1", "random_brightness", pinned("1.3"), f1),
             ("contrast_u3", "random_contrast", pinned("0.6"), u3),
             ("contrast_up", "random_contrast", pinned("1.5"), u16),
             ("contrast_u1", "random_contrast", pinned("1.4"), u1),
             ("contrast_f3", "random_contrast", pinned("0.45"), f3),
             ("saturation_u3", "random_saturation", pinned("0.3"), u3),
             ("saturation_up", "random_saturation", pinned("1.8"), u16),
             ("saturation_f3", "random_saturation", pinned("0.8"), f3),
             ("saturation_u1", "random_saturation", pinned("0.5"), u1),
             ("lighting_u3", "adjust_lighting", {"alpha": "(0.1, -0.2, 0.3)"}, u3),
             ("lighting_saturating", "adjust_lighting", {"alpha": "(5, -3, 2)"}, u16),
             ("lighting_f3", "adjust_lighting", {"alpha": "(-0.4, 0.25, 0.05)"}, f3),
             ("random_lighting_zero", "random_lighting", {"alpha_std": "0"}, u3)]
    for factor in ("0.1", "0.35", "0.5", "0.8", "1.25"):
        cases += [(f"hue_u16_{factor}", "random_hue", pinned(factor), u16),
                  (f"hue_f3_{factor}", "random_hue", pinned(factor), f3)]
    return cases


def image_op_cases(rng: np.random.RandomState) -> list[Case]:
    im = _images(rng)
    return [*_tensor_cases(im), *_resize_cases(im), *_geometry_cases(im), *_colour_cases(im)]


def image_op_errors() -> list[ErrorCase]:
    crop = {"x": "1", "y": "1", "width": "2", "height": "2"}
    pinned = {"min_factor": "0.5", "max_factor": "0.5"}
    return [
        ("to_tensor_2d", "to_tensor", {}, (5, 7), "uint8", False,
         "Input image must have shape (height, width, channels), or (N, height, width, "
         "channels)"),
        ("to_tensor_backward", "to_tensor", {}, (5, 7, 3), "float32", True, "[3,5,7]"),
        ("normalize_defaults", "normalize", {}, (3, 5, 7), "float32", False,
         "mean must have either 1 or 3 elements"),
        ("normalize_mean_count", "normalize", {"mean": "(0.1, 0.2)", "std": "1"}, (3, 5, 7),
         "float32", False, "Invalid mean for input with shape"),
        ("normalize_std_count", "normalize", {"mean": "0.1", "std": "(1, 2, 3)"}, (1, 5, 7),
         "float32", False, "std must have either 1 or 1 elements"),
        ("normalize_channels", "normalize", {"mean": "0", "std": "1"}, (2, 5, 7), "float32",
         False, "The first dimension of input tensor must be the channel dimension with "
                "either 1 or 3 elements"),
        ("normalize_batch_channels", "normalize", {"mean": "0", "std": "1"}, (2, 4, 5, 3),
         "float32", False, "The second dimension of input tensor must be the channel "
                           "dimension"),
        ("normalize_2d", "normalize", {"mean": "0", "std": "1"}, (5, 7), "float32", False,
         "Input tensor must have shape (channels, height, width)"),
        ("resize_2d", "resize", {"size": "3"}, (5, 7), "uint8", False,
         "Input image dimension should be 3 or 4 but got 2"),
        *[(f"resize_{tag}", "resize", {"size": size}, (5, 7, 3), "uint8", False, fragment)
          for tag, size, fragment in (
              ("no_size", "()", "Input size dimension must be 1 or 2, but got 0"),
              ("three_sizes", "(1, 2, 3)", "Input size dimension must be 1 or 2, but got 3"),
              ("zero", "0", "Input size should be greater than 0, but got 0"),
              ("zero_width", "(0, 3)", "Input width should be greater than 0, but got 0"),
              ("negative_height", "(3, -1)", "Input height should be greater than 0, but "
                                             "got -1"))],
        ("resize_float16", "resize", {"size": "3"}, (5, 7, 3), "float16", False,
         "doesn't support fp16"),
        ("resize_int32_linear", "resize", {"size": "3"}, (5, 7, 3), "int32", False,
         "func != 0"),
        ("resize_interp", "resize", {"size": "3", "interp": "6"}, (5, 7, 3), "uint8", False,
         "Unknown interpolation method"),
        ("resize_backward", "resize", {"size": "3"}, (5, 7, 3), "float32", True, "[3,3,3]"),
        ("crop_width", "crop", {**crop, "x": "6"}, (5, 7, 3), "uint8", False,
         "x + width should not be greater than input width"),
        ("crop_height", "crop", {**crop, "y": "4"}, (5, 7, 3), "uint8", False,
         "y + height should not be greater than input height"),
        ("crop_batch_width", "crop", {**crop, "width": "7"}, (2, 5, 7, 3), "float32", False,
         "x + width should not be greater than input width"),
        ("crop_empty", "crop", {**crop, "height": "0"}, (5, 7, 3), "uint8", False,
         "Input height and width must be greater than 0"),
        ("crop_channels", "crop", crop, (5, 7, 2), "uint8", False,
         "Expect channel of the input image is 1 or 3"),
        ("crop_2d", "crop", crop, (5, 7), "uint8", False,
         "Image Crop expects inputs of 3D (h, w, c) or 4D (n, h, w, c)"),
        ("flip_batch", "flip_left_right", {}, (2, 5, 7, 3), "uint8", False,
         "Input image must have shape (height, width, channels), but got"),
        ("flip_channels", "flip_top_bottom", {}, (5, 7, 4), "uint8", False,
         "The last dimension of input image must be the channel dimension with either 1 "
         "or 3 elements"),
        ("brightness_batch", "random_brightness", pinned, (2, 5, 7, 3), "uint8", False,
         "Input image must have shape (height, width, channels), but got"),
        ("brightness_negative", "random_brightness", {**pinned, "min_factor": "-0.5"},
         (5, 7, 3), "uint8", False, "min_factor"),
        ("jitter_missing", "random_color_jitter", {"brightness": "0.1"}, (5, 7, 3), "uint8",
         False, "Required parameter contrast"),
        ("lighting_missing", "adjust_lighting", {}, (5, 7, 3), "uint8", False,
         "Required parameter alpha"),
    ]


def _first_line(message: str) -> str:
    lines = [line for line in message.splitlines() if "Check failed" in line
             or "rror" in line]
    return (lines or message.splitlines() or [""])[-1].strip()


def _error_record(name: str, op: str, attrs: dict, shape: tuple, dtype: str, backward: bool,
                  fragment: str) -> dict:
    x = mx.nd.zeros(shape, dtype=dtype)
    try:
        if backward:
            x.attach_grad()
            with mx.autograd.record():
                y = getattr(mx.nd.image, op)(x, **attrs)
            y.backward(mx.nd.ones(y.shape))
        getattr(mx.nd.image, op)(x, **attrs).wait_to_read()
    except mx.MXNetError as exc:
        message = _first_line(str(exc))
    else:
        raise AssertionError(f"{name}: MXNet raised nothing")
    if fragment not in message:
        raise AssertionError(f"{name}: {fragment!r} not in MXNet's {message!r}")
    return {"op": op, "attrs": attrs, "shape": list(shape), "dtype": dtype,
            "backward": backward, "fragment": fragment, "message": message}


def _write_transforms(out: Path, rng: np.random.RandomState) -> None:
    from mxnet.gluon import nn
    from mxnet.gluon.data.vision import transforms

    net = nn.HybridSequential()
    net.add(transforms.CropResize(1, 0, 6, 5, size=(8, 6), interpolation=2),
            transforms.Resize(5, keep_ratio=True), transforms.ToTensor(),
            transforms.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)))
    net.hybridize()
    data = rng.randint(0, 256, (2, 5, 7, 3)).astype("uint8")
    output = net(mx.nd.array(data, dtype="uint8")).asnumpy()
    (out / "transforms-symbol.json").write_text(net(mx.sym.var("data")).tojson())
    np.savez_compressed(out / "transforms.npz", data=data, output=output)


def write_image_ops(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.RandomState(23)
    arrays, cases = {}, {}
    for case, op, attrs, image in image_op_cases(rng):
        x = mx.nd.array(image, dtype=image.dtype)
        graded = image.dtype == np.float32 and op not in UNGRADED
        fn = getattr(mx.nd.image, op)
        # (outside the recording: an out= array must not be in the recorded graph)
        kwargs = dict(attrs, out=x.copy()) if op.startswith("flip") else attrs
        if graded:
            x.attach_grad()
        with mx.autograd.record():
            y = fn(x, **kwargs)
        arrays[f"{case}:in_0"], arrays[f"{case}:out_0"] = image, y.asnumpy()
        if graded:
            head = rng.uniform(-1, 1, y.shape).astype("float32")
            y.backward(mx.nd.array(head))
            arrays[f"{case}:head_0"], arrays[f"{case}:grad_0"] = head, x.grad.asnumpy()
        cases[case] = {"op": op, "attrs": attrs, "graded": bool(graded)}
    np.savez_compressed(out / "cases.npz", **arrays)
    (out / "cases.json").write_text(json.dumps(cases, indent=1, sort_keys=True) + "\n")
    _write_transforms(out, rng)
    errors = {case[0]: _error_record(*case) for case in image_op_errors()}
    (out / "errors.json").write_text(json.dumps(errors, indent=1, sort_keys=True) + "\n")
