"""The last operators of MXNet 1.9.1's registry beyond their fixture cases (gap_ops'
cases.json, run by test_mxnet_tensor_ops.py: multi_lars, _contrib_RROIAlign,
_contrib_hawkesll): the multi-tensor AdamW / LAMB and group AdaGrad updates replayed
for MXNet's three steps, the OpenCV image operators on MXNet's decodes and resizes,
`_set_value` through out=, and the errors that name the operator and the bad values."""
import json
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.base import MinimxError
from minimx.ops import get_op
from minimx.ops.registry import OpContext

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gap_ops"
RUNS = json.loads((FIXTURES / "optimizers.json").read_text())


@pytest.fixture(scope="module")
def recorded():
    with np.load(FIXTURES / "optimizers.npz") as npz:
        return {k: npz[k] for k in npz.files}


def _series(recorded: dict, case: str, kind: str) -> list[np.ndarray]:
    return [recorded[f"{case}:{kind}_{i}"] for i in range(
        sum(k.startswith(f"{case}:{kind}_") for k in recorded))]


@pytest.mark.parametrize("case", sorted(RUNS))
def test_update_steps_match_mxnet(case, recorded):
    """mx.nd calls with out= the weights, states updated in place, as MXNet's runs."""
    run = RUNS[case]
    arrays = [mx.nd.array(a, dtype=a.dtype) for a in _series(recorded, case, "in")]
    fn = getattr(mx.nd, run["op"])
    for attrs in run["steps"]:
        fn(*arrays, **attrs, out=[arrays[i] for i in run["written"]])
    for i, (got, want) in enumerate(zip(arrays, _series(recorded, case, "after"), strict=True)):
        assert got.dtype == want.dtype, (case, i)
        rtol = 1e-3 if want.dtype == np.float16 else 1e-5   # float16: a rounding apart
        np.testing.assert_allclose(got.asnumpy().astype("float32"), want.astype("float32"),
                                   rtol=rtol, atol=1e-6, err_msg=f"{case} input {i}")


def test_multi_adamw_skips_the_update_when_rescale_grad_is_not_finite():
    w, g, m, v = (mx.nd.array(np.full((2, 3), x, "float32")) for x in (1.0, 0.5, 0.1, 0.2))
    for rescale in (np.inf, 0.0):
        mx.nd._multi_adamw_update(w, g, m, v, mx.nd.array([rescale]), lrs=(0.1,), wds=(0.0,),
                                  etas=(1.0,), out=w)
    assert w.asnumpy().tolist() == [[1.0] * 3] * 2 and m.asnumpy()[0, 0] == np.float32(0.1)


@pytest.mark.parametrize("op", ["adamw_update", "mp_adamw_update"])
def test_adamw_leaves_the_gradient_as_it_was(op):
    # MXNet 1.9.1 overwrites the gradient with its rescaled, clipped copy (docs/api.md).
    w, m, v = mx.nd.ones((2, 2)), mx.nd.zeros((2, 2)), mx.nd.zeros((2, 2))
    g = mx.nd.array([[3.0, -3.0], [0.1, 0.2]])
    args = ([w.astype("float16"), g.astype("float16"), m, v, w] if op.startswith("mp")
            else [w, g, m, v])
    before = args[1].asnumpy().copy()
    getattr(mx.nd.contrib, op)(*args, mx.nd.array([0.5]), lr=0.1, eta=1.0, clip_gradient=0.5,
                               out=args[0])
    np.testing.assert_array_equal(args[1].asnumpy(), before)
    # 0.1 * clip(0.5 * g, 0.5), with 1 - beta1 formed in float32 as MXNet does
    np.testing.assert_allclose(m.asnumpy()[0], [0.05, -0.05], rtol=1e-6)


def test_adamw_fronts_take_a_number_for_rescale_grad():
    # MXNet's mx.nd.contrib / mx.sym.contrib fronts: lr and eta by position too.
    arrays = [mx.nd.ones((3,)), mx.nd.ones((3,)), mx.nd.zeros((3,)), mx.nd.zeros((3,))]
    mx.nd.contrib.adamw_update(*arrays, 1.0, 0.9, 0.9, out=arrays[0])
    # MXNet 1.9.1's values for these arguments
    np.testing.assert_allclose(arrays[0].asnumpy(), [-1.5614607] * 3, rtol=1e-6)
    np.testing.assert_allclose(arrays[2].asnumpy(), [0.1] * 3, rtol=1e-6)
    w, g, m, v = (mx.sym.var(n) for n in "wgmv")
    node = mx.sym.contrib.adamw_update(w, g, m, v, 0.5, lr=0.1, eta=1.0)
    assert node.list_arguments() == ["w", "g"] and node.list_auxiliary_states() == ["m", "v"]
    got = node.bind(mx.cpu(), {"w": mx.nd.ones((3,)), "g": mx.nd.ones((3,))},
                    aux_states={"m": mx.nd.zeros((3,)), "v": mx.nd.zeros((3,))}).forward()[0]
    np.testing.assert_allclose(got.asnumpy(), [1 - 0.1 * 0.05 / (np.sqrt(0.00025) + 1e-8)] * 3,
                               rtol=1e-5)


@pytest.mark.parametrize("op, attrs, message", [
    ("_multi_adamw_update", {"num_weights": "2", "lrs": "(0.1,)", "wds": "(0, 0)",
                             "etas": "(1, 1)"}, r"num_weights=2 needs .* \{'lrs': \(0.1,\)\}"),
    ("_multi_lamb_update", {"num_tensors": "1", "learning_rates": "(0.1,)", "wds": "(0,)",
                            "step_count": "(0,)"}, r"step_count=\(0,\) must be at least 1"),
])
def test_bad_parameters_name_the_operator(op, attrs, message):
    definition = get_op(op)
    p = definition.parse_params(attrs, "upd")
    shapes = [(3,)] * len(definition.input_names(p))
    with pytest.raises(MinimxError, match=rf"upd \({op}\): {message}"):
        definition.infer_shape(p, shapes, [None] * definition.num_outputs(p))


def test_group_adagrad_refuses_a_history_not_one_value_per_row():
    op = get_op("_contrib_group_adagrad_update")
    p = op.parse_params({"lr": "0.1"}, "ga")
    assert op.infer_shape(p, [(4, 3), None, None], [None])[0][2] == (4, 1)
    with pytest.raises(MinimxError, match=r"history \(4, 3\) must hold one value per row"):
        op.infer_shape(p, [(4, 3), (4, 3), (4, 3)], [None])


@pytest.fixture(scope="module")
def images():
    with np.load(FIXTURES / "images.npz") as npz:
        return {k: npz[k] for k in npz.files}


@pytest.mark.parametrize("image", ["colour_png", "colour_jpeg", "grey_png"])
def test_image_operators_give_mxnets_pixels(image, images, tmp_path):
    pytest.importorskip("PIL")
    data = images[f"{image}:bytes"]
    buf = mx.nd.array(data, dtype="uint8")
    for key in (k for k in images if k.startswith(f"{image}:decode_")):
        flag, to_rgb = map(int, key.rsplit("_", 2)[1:])
        got = mx.nd._cvimdecode(buf, flag=flag, to_rgb=bool(to_rgb)).asnumpy()
        np.testing.assert_array_equal(got, images[key], err_msg=key)
    path = tmp_path / "image.bin"
    path.write_bytes(data.tobytes())
    np.testing.assert_array_equal(mx.nd._cvimread(filename=str(path)).asnumpy(),
                                  images[f"{image}:decode_1_1"])
    rgb = mx.nd.array(images[f"{image}:decode_1_1"], dtype="uint8")
    for key in (k for k in images if k.startswith(f"{image}:resize_")):
        *_, w, h, interp = key.split("_")
        src = rgb.astype("float32") if "float" in key else rgb
        got = mx.nd._cvimresize(src, w=int(w), h=int(h), interp=int(interp)).asnumpy()
        assert got.dtype == images[key].dtype
        np.testing.assert_allclose(got, images[key], rtol=1e-5, atol=1e-4, err_msg=key)


def test_image_operator_errors_name_the_operator(tmp_path):
    pytest.importorskip("PIL")
    with pytest.raises(MinimxError, match=r"_cvimdecode\): buf must be a uint8 buffer"):
        mx.nd._cvimdecode(mx.nd.array([1.0, 2.0]))
    with pytest.raises(MinimxError, match="not an image Pillow can decode"):
        mx.nd._cvimdecode(mx.nd.array([1, 2, 3], dtype="uint8"))
    with pytest.raises(MinimxError, match=r"_cvimread\): cannot read .*missing.png"):
        mx.nd._cvimread(filename=str(tmp_path / "missing.png"))
    with pytest.raises(MinimxError, match=r"src must be height x width x channels"):
        mx.nd._cvimresize(mx.nd.zeros((4, 5)), w=2, h=2)


def test_set_value_fills_the_out_array_as_mxnet():
    """MXNet 1.9.1: mx.nd._internal._set_value(src=2.7, out=int32 array) gives 2s; without
    out= it fails ("Set value target must not be empty")."""
    a = mx.nd.zeros((2, 3))
    assert mx.nd._set_value(src=3.0, out=a) is a
    assert a.asnumpy().tolist() == [[3.0] * 3] * 2
    b = mx.nd.zeros((2,), dtype="int32")
    mx.nd._set_value(src=2.7, out=b)
    assert b.dtype == np.int32 and b.asnumpy().tolist() == [2, 2]
    with pytest.raises(MinimxError, match=r"_set_value\): cannot infer output shapes"):
        mx.nd._set_value(src=3.0)


def test_out_must_agree_with_what_inference_gives():
    """out= takes part in inference, as in MXNet's imperative calls: a shape or dtype
    the inputs contradict is refused, naming the operator."""
    with pytest.raises(MinimxError, match=r"relu.*\(3, 2\)"):
        mx.nd.relu(mx.nd.ones((3, 2)), out=mx.nd.zeros((2, 3)))
    with pytest.raises(MinimxError, match=r"_contrib_RROIAlign.*float64"):
        mx.nd.contrib.RROIAlign(mx.nd.ones((1, 1, 4, 4)), mx.nd.ones((1, 6)), pooled_size=(1, 1),
                                spatial_scale=1.0, out=mx.nd.zeros((1, 1, 1, 1), dtype="float64"))


def test_rroi_align_has_no_gradient_as_in_mxnet():
    assert get_op("_contrib_RROIAlign").backward is None
    out = get_op("_contrib_RROIAlign").forward(
        get_op("_contrib_RROIAlign").parse_params({"pooled_size": "(1, 1)",
                                                   "spatial_scale": "1"}),
        OpContext(), [np.ones((1, 1, 4, 4), "float32"),
                      np.array([[0, 2, 2, 2, 2, 90]], "float32")])
    assert out.tolist() == [[[[1.0]]]]
