"""im2col and col2im: a convolution is the weight times im2col's columns (1-D to 3-D,
MXNet 1.9.1 runs only 2-D; its 2-D values are compared in test_mxnet_tensor_ops.py,
fixture group extra_ops), col2im is im2col's adjoint, and bad geometry is refused."""
import numpy as np
import pytest

from minimx.base import OperatorError, ShapeError

from ops_support import infer, run

GEOMETRIES = [
    {"kernel": (3,), "stride": (2,), "pad": (1,)},
    {"kernel": (2, 3), "stride": (2, 1), "dilate": (1, 2), "pad": (1, 1)},
    {"kernel": (2, 1, 2), "dilate": (1, 1, 2)},
]
IMAGES = [(2, 3, 7), (2, 3, 5, 6), (1, 2, 3, 4, 5)]


@pytest.mark.parametrize("params, image", list(zip(GEOMETRIES, IMAGES, strict=True)))
def test_convolution_is_weight_times_columns(params, image):
    rng = np.random.default_rng(0)
    x = rng.normal(size=image)
    w = rng.normal(size=(4, image[1], *params["kernel"]))
    cols = run("im2col", params, x)
    y = run("Convolution", {**params, "num_filter": 4, "no_bias": True}, x, w)
    np.testing.assert_allclose(w.reshape(4, -1) @ cols, y.reshape(*y.shape[:2], -1),
                               atol=1e-12)


@pytest.mark.parametrize("params, image", list(zip(GEOMETRIES, IMAGES, strict=True)))
def test_col2im_is_the_adjoint_of_im2col(params, image):
    rng = np.random.default_rng(1)
    x = rng.normal(size=image)
    cols = run("im2col", params, x)
    c = rng.normal(size=cols.shape)
    back = run("col2im", {**params, "output_size": image[2:]}, c)
    assert back.shape == image
    assert np.sum(cols * c) == pytest.approx(np.sum(x * back), rel=1e-12)


@pytest.mark.parametrize("name, params, shape, error, match", [
    ("im2col", {"kernel": (2, 2)}, (1, 2, 3), ShapeError, "must be 4-D"),
    ("im2col", {"kernel": (4, 2)}, (1, 2, 3, 3), ShapeError, "does not fit"),
    ("im2col", {"kernel": (2, 2), "stride": (1,)}, (1, 2, 3, 3), OperatorError,
     "as many dimensions"),
    ("im2col", {"kernel": (1, 1, 1, 1)}, (1, 1, 1, 1, 1, 1), ShapeError, "1 to 3"),
    ("col2im", {"kernel": (2, 2), "output_size": (3, 3)}, (1, 6, 4), ShapeError,
     "channels \\* 4"),
    ("col2im", {"kernel": (2, 2), "output_size": (3, 3)}, (1, 8, 5), ShapeError,
     "has 5 blocks"),
    ("col2im", {"kernel": (2, 2), "output_size": (3,)}, (1, 8, 4), ShapeError,
     "output_size=\\(3,\\)"),
])
def test_bad_geometry_is_refused(name, params, shape, error, match):
    with pytest.raises(error, match=match):
        infer(name, params, [shape])
