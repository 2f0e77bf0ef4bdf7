"""The `_image_*` operators (`mx.nd.image`, `mx.sym.image`) against MXNet 1.9.1.

Fixture group image_ops (tools/mxnet_image_op_fixtures.py): every case through both
namespaces must give MXNet's output: exactly where it is integer (uint8 pixels, int32),
moved (flips, crops) or a single rounding (to_tensor); within rtol 1e-6 where it is
float32 arithmetic (normalize, resize's filters, the colour operators), which has matched
bit for bit here too, and float64 resize, which minimx filters in float32 (OpenCV in
float64). Gradients are MXNet's but for the flips and `to_tensor`, whose derivative
minimx gives (MXNet sends the output gradient back as it is). MXNet's errors for bad
input must be `MinimxError`s naming the operator (and the node) and holding the fragment
of MXNet's message.
The random operators cannot draw MXNet's numbers: they are checked by their definition
(the drawn factor within its range and the adjust arithmetic the pinned cases test,
both branches of a flip, repeatability under `mx.random.seed`).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.base import MinimxError
from minimx.ops import image as image_ops

from ops_support import run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "image_ops"
CASES = json.loads((FIXTURES / "cases.json").read_text())
ERRORS = json.loads((FIXTURES / "errors.json").read_text())
OPS = ("to_tensor", "normalize", "resize", "crop", "flip_left_right", "flip_top_bottom",
       "random_flip_left_right", "random_flip_top_bottom", "random_brightness",
       "random_contrast", "random_saturation", "random_hue", "random_color_jitter",
       "adjust_lighting", "random_lighting")
FLIPS = {"flip_left_right": 1, "flip_top_bottom": 0}   # the HWC axis each reverses
FLOAT_MATH = ("normalize", "resize", "random_brightness", "random_contrast",
              "random_saturation", "random_hue", "adjust_lighting")


@pytest.fixture(scope="module")
def recorded():
    with np.load(FIXTURES / "cases.npz") as npz:
        return {k: npz[k] for k in npz.files}


def _nd(a: np.ndarray) -> mx.nd.NDArray:
    return mx.nd.array(a, dtype=a.dtype)


def _assert_mxnet(got: np.ndarray, want: np.ndarray, op: str, case: str) -> None:
    assert (got.shape, got.dtype) == (want.shape, want.dtype), case
    if want.dtype.kind == "f" and op in FLOAT_MATH:
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=case)
    else:
        np.testing.assert_array_equal(got, want, err_msg=case)


@pytest.mark.parametrize("case", sorted(CASES))
def test_nd_image_matches_mxnet(case, recorded):
    spec = CASES[case]
    x = recorded[f"{case}:in_0"]
    got = getattr(mx.nd.image, spec["op"])(_nd(x), **spec["attrs"]).asnumpy()
    _assert_mxnet(got, recorded[f"{case}:out_0"], spec["op"], case)


@pytest.mark.parametrize("case", sorted(CASES))
def test_sym_image_infers_and_matches_mxnet(case, recorded):
    spec = CASES[case]
    x, want = recorded[f"{case}:in_0"], recorded[f"{case}:out_0"]
    sym = getattr(mx.sym.image, spec["op"])(mx.sym.var("data"), **spec["attrs"])
    assert sym.infer_shape(data=x.shape)[1] == [want.shape]
    assert sym.infer_type(data=x.dtype)[1] == [want.dtype]
    got = sym.eval(ctx=mx.cpu(), data=_nd(x))[0].asnumpy()
    _assert_mxnet(got, want, spec["op"], case)


@pytest.mark.parametrize("case", sorted(c for c in CASES if CASES[c]["graded"]))
def test_gradient_matches_mxnet(case, recorded):
    spec = CASES[case]
    x = recorded[f"{case}:in_0"]
    sym = getattr(mx.sym.image, spec["op"])(mx.sym.var("data"), **spec["attrs"])
    grad = mx.nd.zeros(x.shape, dtype=x.dtype)
    ex = sym.bind(mx.cpu(), {"data": _nd(x)}, args_grad={"data": grad})
    ex.forward(is_train=True)
    ex.backward(_nd(recorded[f"{case}:head_0"]))
    want = recorded[f"{case}:grad_0"]
    if spec["op"] in FLIPS:   # MXNet's is the head unflipped: minimx flips it back
        want = np.flip(want, FLIPS[spec["op"]])
    np.testing.assert_allclose(grad.asnumpy(), want, rtol=1e-6, atol=1e-7, err_msg=case)


@pytest.mark.parametrize("batch", [(), (2,)])
def test_to_tensor_gradient_is_its_derivative(batch):
    """MXNet 1.9.1 fails here (its `_copy` gradient has the output's shape)."""
    x = np.random.default_rng(0).uniform(0, 255, (*batch, 3, 5, 2)).astype(np.float32)
    head = np.random.default_rng(1).standard_normal((*batch, 2, 3, 5)).astype(np.float32)
    sym = mx.sym.image.to_tensor(mx.sym.var("data"))
    grad = mx.nd.zeros(x.shape)
    ex = sym.bind(mx.cpu(), {"data": _nd(x)}, args_grad={"data": grad})
    ex.forward(is_train=True)
    ex.backward(_nd(head))
    np.testing.assert_allclose(grad.asnumpy(), np.moveaxis(head, -3, -1) / 255, rtol=1e-6)


def _fragment(spec: dict) -> str:
    """MXNet's fragment as minimx writes it: shapes as Python tuples, not [3,5,7]."""
    return re.sub(r"\[(\d+(?:,\d+)*)\]",
                  lambda m: "(" + ", ".join(m.group(1).split(",")) + ")", spec["fragment"])


def _backward(spec: dict, name: str = "img0") -> None:
    sym = getattr(mx.sym.image, spec["op"])(mx.sym.var("data"), name=name, **spec["attrs"])
    x = mx.nd.zeros(tuple(spec["shape"]), dtype=spec["dtype"])
    ex = sym.bind(mx.cpu(), {"data": x}, args_grad={"data": mx.nd.zeros(x.shape)})
    ex.forward(is_train=True)
    ex.backward(mx.nd.ones(ex.outputs[0].shape))
    mx.nd.waitall()


@pytest.mark.parametrize("case", sorted(c for c in ERRORS if c != "to_tensor_backward"))
def test_mxnet_errors_raise_naming_the_operator(case):
    spec = ERRORS[case]
    op = f"_image_{spec['op']}"
    with pytest.raises(MinimxError) as err:
        if spec["backward"]:
            _backward(spec)
        else:
            x = mx.nd.zeros(tuple(spec["shape"]), dtype=spec["dtype"])
            getattr(mx.nd.image, spec["op"])(x, **spec["attrs"]).wait_to_read()
    message = str(err.value)
    assert op in message and _fragment(spec).lower() in message.lower(), message


@pytest.mark.parametrize("case", sorted(c for c in ERRORS if not ERRORS[c]["backward"]))
def test_mxnet_errors_name_the_symbol_node(case):
    spec = ERRORS[case]
    with pytest.raises(MinimxError) as err:
        sym = getattr(mx.sym.image, spec["op"])(mx.sym.var("data"), name="img0",
                                                **spec["attrs"])
        sym.infer_shape(data=tuple(spec["shape"]))
        sym.infer_type(data=np.dtype(spec["dtype"]))
    message = str(err.value)
    assert _fragment(spec).lower() in message.lower(), message
    if "Required parameter" not in spec["fragment"]:   # refused before the node exists
        assert f"img0 (_image_{spec['op']})" in message, message


def test_a_gluon_transforms_graph_from_mxnet_runs():
    sym = mx.sym.load(str(FIXTURES / "transforms-symbol.json"))
    with np.load(FIXTURES / "transforms.npz") as npz:
        data, want = npz["data"], npz["output"]
    assert sym.infer_type(data=np.uint8)[1] == [np.float32]
    got = sym.eval(ctx=mx.cpu(), data=_nd(data))[0].asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_namespaces_hold_every_operator_by_mxnets_short_names():
    for name in OPS:
        assert callable(getattr(mx.nd.image, name)) and callable(getattr(mx.sym.image, name))
    sym = mx.sym.image.normalize(mx.sym.image.to_tensor(mx.sym.var("x")), mean=0.5, std=0.5)
    assert sym.name.startswith("normalize")
    assert json.loads(sym.tojson())["nodes"][1]["op"] == "_image_to_tensor"


def test_positional_parameters_follow_mxnets_order():
    x = mx.nd.array(np.arange(5 * 7 * 3).reshape(5, 7, 3), dtype="uint8")
    assert mx.nd.image.crop(x, 1, 2, 3, 2).shape == (2, 3, 3)
    assert mx.nd.image.resize(x, (4, 3)).shape == (3, 4, 3)
    assert mx.nd.image.resize(x, 4, True).shape == (4, 5, 3)
    y = mx.nd.image.random_brightness(x, 0.5, 0.5).asnumpy()
    np.testing.assert_array_equal(y, (x.asnumpy() * np.float32(0.5)).astype(np.uint8))


def test_inference_leaves_unknown_shapes_unknown():
    data = mx.sym.var("data")
    for sym in (mx.sym.image.flip_left_right(data), mx.sym.image.to_tensor(data),
                mx.sym.image.resize(data, size=(4, 3)), mx.sym.image.crop(data, 0, 0, 2, 2)):
        _, out, _ = sym.infer_shape_partial()
        assert out == [()]
    sym = mx.sym.image.resize(data, size=4, keep_ratio=True)
    assert sym.infer_shape(data=(2, 5, 9, 3))[1] == [(2, 4, 7, 3)]
    assert mx.sym.image.to_tensor(data).infer_type(data=np.int32)[1] == [np.float32]


def test_bfloat16_runs_in_float32_but_resize_and_bool_are_refused():
    x = np.random.default_rng(1).integers(0, 256, (5, 7, 3)).astype(np.float32)
    bf = mx.nd.array(x).astype("bfloat16")   # whole numbers below 256: exact in bfloat16
    flipped = mx.nd.image.flip_left_right(bf)
    assert flipped.dtype == bf.dtype
    np.testing.assert_array_equal(flipped.astype("float32").asnumpy(), x[:, ::-1])
    tensor = mx.nd.image.to_tensor(bf)
    assert tensor.dtype == np.float32
    np.testing.assert_array_equal(tensor.asnumpy(), mx.nd.image.to_tensor(mx.nd.array(x))
                                  .asnumpy())
    with pytest.raises(MinimxError, match="bfloat16"):
        mx.sym.image.resize(mx.sym.var("d"), size=3).infer_type(d="bfloat16")
    with pytest.raises(MinimxError, match="bool"):
        mx.sym.image.flip_left_right(mx.sym.var("d")).infer_type(d=np.bool_)


# -- the random operators by their definition -------------------------------------------------

IMAGE = np.random.default_rng(4).integers(0, 256, (5, 7, 3)).astype(np.uint8)


@pytest.mark.parametrize("op, adjust", [
    ("_image_random_brightness", image_ops.adjust_brightness),
    ("_image_random_contrast", image_ops.adjust_contrast),
    ("_image_random_saturation", image_ops.adjust_saturation),
    ("_image_random_hue", image_ops.adjust_hue),
])
def test_a_random_colour_op_is_its_adjustment_by_a_factor_drawn_in_range(op, adjust):
    params = {"min_factor": 0.25, "max_factor": 0.75}
    for seed in range(4):
        factor = np.float32(np.random.default_rng(seed).uniform(0.25, 0.75))
        assert 0.25 <= factor <= 0.75
        got = run(op, params, IMAGE, seed=seed)
        np.testing.assert_array_equal(got, adjust(IMAGE, factor))
        assert got.dtype == np.uint8 and got.shape == IMAGE.shape


def test_brightness_factors_cover_their_range():
    ones = np.ones((1, 1, 1), np.float32)
    factors = [run("_image_random_brightness", {"min_factor": 0.5, "max_factor": 1.5}, ones,
                   seed=s).item() for s in range(200)]
    assert 0.5 <= min(factors) < 0.55 and 1.45 < max(factors) <= 1.5


@pytest.mark.parametrize("op", sorted(FLIPS))
def test_a_flip_writes_the_middle_of_an_odd_side_too(op):
    # MXNet 1.9.1 leaves it unwritten in a new output (docs/api.md).
    image = np.arange(3 * 5 * 3, dtype=np.float32).reshape(3, 5, 3) + 1
    out = mx.nd.full((3, 5, 3), -7.0)
    getattr(mx.nd.image, op)(_nd(image), out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.flip(image, FLIPS[op]))


@pytest.mark.parametrize("op, axis", [("random_flip_left_right", 1),
                                      ("random_flip_top_bottom", 0)])
def test_a_random_flip_takes_both_branches_under_the_seed(op, axis):
    mx.random.seed(7)
    outs = [getattr(mx.nd.image, op)(_nd(IMAGE)).asnumpy() for _ in range(24)]
    flipped = [np.array_equal(o, np.flip(IMAGE, axis)) for o in outs]
    kept = [np.array_equal(o, IMAGE) for o in outs]
    assert all(f != k for f, k in zip(flipped, kept, strict=True))
    assert any(flipped) and any(kept)
    mx.random.seed(7)
    again = [getattr(mx.nd.image, op)(_nd(IMAGE)).asnumpy() for _ in range(24)]
    assert all(np.array_equal(a, b) for a, b in zip(outs, again, strict=True))


def test_mx_random_seed_repeats_every_random_op():
    calls = [("random_brightness", {"min_factor": 0.2, "max_factor": 1.8}),
             ("random_contrast", {"min_factor": 0.2, "max_factor": 1.8}),
             ("random_saturation", {"min_factor": 0.2, "max_factor": 1.8}),
             ("random_hue", {"min_factor": 0.0, "max_factor": 0.5}),
             ("random_color_jitter", {"brightness": 0.4, "contrast": 0.4, "saturation": 0.4,
                                      "hue": 0.2}),
             ("random_lighting", {"alpha_std": 3.0})]

    def draws(seed: int) -> list[np.ndarray]:
        mx.random.seed(seed)
        return [getattr(mx.nd.image, op)(_nd(IMAGE), **kw).asnumpy() for op, kw in calls]

    first, second, other = draws(5), draws(5), draws(6)
    assert all(np.array_equal(a, b) for a, b in zip(first, second, strict=True))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other, strict=True))


def test_color_jitter_applies_each_positive_jitter_once_in_a_drawn_order():
    np.testing.assert_array_equal(run("_image_random_color_jitter", dict(
        brightness=0, contrast=0, saturation=0, hue=0), IMAGE), IMAGE)
    jitters = {"brightness": 0.3, "contrast": 0.0, "saturation": 0.4, "hue": 0.1}
    adjust = (image_ops.adjust_brightness, image_ops.adjust_contrast,
              image_ops.adjust_saturation, image_ops.adjust_hue)
    for seed in range(3):
        rng = np.random.default_rng(seed)
        want = IMAGE
        for k in rng.permutation(4):   # the order, then each positive jitter's factor
            jitter = list(jitters.values())[k]
            if jitter > 0:
                shift = np.float32(rng.uniform(-jitter, jitter))
                want = adjust[k](want, shift if k == 3 else np.float32(1.0 + shift))
        got = run("_image_random_color_jitter", jitters, IMAGE, seed=seed)
        np.testing.assert_array_equal(got, want)


def test_random_lighting_adds_the_pca_noise_of_its_normal_draws():
    alphas = np.random.default_rng(3).standard_normal(3) * 0.5
    got = run("_image_random_lighting", {"alpha_std": 0.5}, IMAGE, seed=3)
    want = mx.nd.image.adjust_lighting(_nd(IMAGE), alpha=tuple(alphas.astype(np.float32)))
    np.testing.assert_array_equal(got, want.asnumpy())


def test_where_mxnet_leaves_memory_unwritten_the_input_comes_back():
    grey = IMAGE[..., :1]
    for op, kw in (("random_hue", {"min_factor": 0.3, "max_factor": 0.3}),
                   ("adjust_lighting", {"alpha": (0.5, 0.5, 0.5)})):
        np.testing.assert_array_equal(getattr(mx.nd.image, op)(_nd(grey), **kw).asnumpy(),
                                      grey)
    # Odd widths: MXNet's flip kernel never writes the middle column.
    flipped = mx.nd.image.flip_left_right(_nd(IMAGE)).asnumpy()
    np.testing.assert_array_equal(flipped, IMAGE[:, ::-1])


def test_bit_exact_bilinear_is_mxnets():
    """interp=5, OpenCV's INTER_LINEAR_EXACT: MXNet 1.9.1's pixels (its nd.image.resize
    and mx.image.imresize on these arrays, in its venv); float images get bilinear."""
    down = (np.arange(42).reshape(6, 7, 1) * 6).astype(np.uint8)
    np.testing.assert_array_equal(
        mx.nd.image.resize(_nd(down), (9, 4), interp=5).asnumpy()[..., 0],
        [[11, 15, 19, 24, 29, 33, 38, 42, 47], [74, 78, 82, 87, 92, 96, 101, 105, 110],
         [137, 141, 145, 150, 155, 159, 164, 168, 173],
         [200, 204, 208, 213, 218, 222, 227, 231, 236]])
    up = (np.arange(30).reshape(3, 5, 2) * 37 % 256).astype(np.uint8)
    np.testing.assert_array_equal(
        mx.image.imresize(_nd(up), 8, 7, interp=5).asnumpy()[..., 1],
        [[37, 69, 116, 162, 128, 14, 45, 77], [53, 86, 130, 153, 119, 29, 61, 93],
         [102, 134, 172, 127, 93, 70, 110, 142], [151, 183, 214, 100, 66, 112, 159, 191],
         [90, 122, 159, 114, 115, 161, 146, 130], [30, 62, 106, 129, 164, 210, 133, 70],
         [9, 41, 88, 134, 180, 226, 129, 49]])
    floats = mx.nd.array(up.astype(np.float32))
    np.testing.assert_array_equal(mx.image.imresize(floats, 8, 7, interp=5).asnumpy(),
                                  mx.image.imresize(floats, 8, 7, interp=1).asnumpy())


@pytest.mark.parametrize("call, message", [
    (lambda x: mx.nd.image.crop(x, -1, 0, 2, 2), "x=-1 and y=0 must not be negative"),
    (lambda x: mx.nd.image.adjust_lighting(x, alpha=(0.1, 0.2)), "alpha=(0.1, 0.2)"),
    (lambda x: mx.nd.image.resize(x, size=3, interp=6), "interp=6: Unknown interpolation"),
    (lambda x: mx.nd.image.resize(x.astype("int8"), size=3, interp=0), "int8"),
])
def test_inputs_mxnet_reads_out_of_bounds_or_lacks_raise(call, message):
    with pytest.raises(MinimxError, match=re.escape(message)):
        call(_nd(IMAGE)).wait_to_read()
