"""base: dtype names and flags, shape and size checks."""
import os

import numpy as np
import pytest

import minimx as mx
from minimx import base
from minimx.base import (
    BFLOAT16,
    MXNET_BFLOAT16,
    as_dtype,
    as_shape,
    check_array_size,
    compute_dtype,
    is_numeric,
)


@pytest.mark.parametrize("value", ["(1000000000000,)i4", "float33", object(), [1, 2]])
def test_what_is_not_a_dtype_is_a_dtype_error(value):
    with pytest.raises(mx.DTypeError, match="not a dtype"):
        as_dtype(value)


def test_dtypes_by_name_type_and_flag():
    assert as_dtype("float16") == as_dtype(np.float16) == as_dtype(2) == np.dtype(np.float16)


def test_bfloat16_by_name_flag_and_mxnets_structured_dtype():
    assert as_dtype("bfloat16") == as_dtype(12) == as_dtype(MXNET_BFLOAT16) == BFLOAT16
    assert BFLOAT16.itemsize == 2 and is_numeric(BFLOAT16) and not is_numeric(MXNET_BFLOAT16)
    assert compute_dtype(BFLOAT16) == compute_dtype(np.dtype(np.float16)) == np.float32
    assert compute_dtype(np.dtype(np.float64)) == np.float64


@pytest.mark.parametrize("value,message", [
    ((1.5, 3), "dimension 1.5 that is not an integer"),
    ((2, -1), "negative dimension"),
    ("23", "not a shape"),
    ((True, 2), "dimension True that is not an integer"),
    (None, "not a shape"),
])
def test_bad_shapes_are_shape_errors_naming_what(value, message):
    with pytest.raises(mx.ShapeError, match=f"argument data: .*{message}"):
        as_shape(value, "argument data")


def test_shapes_take_numpy_integers_and_a_bare_int():
    assert as_shape((np.int64(2), 3), "x") == (2, 3) and as_shape(4, "x") == (4,)


def test_sizes_beyond_memory_are_refused_before_allocating():
    with pytest.raises(mx.ShapeError, match=r"x: shape \(1099511627776, 1099511627776\) of "
                                            "float32 needs"):
        check_array_size((2**40, 2**40), np.float32, "x")
    check_array_size((1024, 1024), np.float64, "x")


def test_subgraph_backend_sets_and_restores_the_variable(monkeypatch) -> None:
    monkeypatch.delenv("MINIMX_SUBGRAPH_BACKEND", raising=False)
    with base.subgraph_backend("DNNL"):
        assert base.settings().subgraph_backends == ("DNNL",)
    assert "MINIMX_SUBGRAPH_BACKEND" not in os.environ
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "default")
    with pytest.raises(ZeroDivisionError), base.subgraph_backend("NONE"):
        assert base.settings().subgraph_backends == ()
        1 / 0  # noqa: B018
    assert os.environ["MINIMX_SUBGRAPH_BACKEND"] == "default"


def test_a_context_is_current_inside_its_with_block_as_in_mxnet():
    assert mx.current_context() == mx.cpu(0)
    with mx.cpu(1) as ctx:
        assert ctx == mx.cpu(1) and mx.current_context() == mx.cpu(1)
        with mx.Context("cpu", 2):
            assert mx.current_context() == mx.cpu(2)
        assert mx.current_context() == mx.cpu(1)
    assert mx.current_context() == mx.cpu(0)
    mx.test_utils.set_default_context(mx.cpu(3))
    try:
        assert mx.current_context() == mx.test_utils.default_context() == mx.cpu(3)
    finally:
        mx.test_utils.set_default_context(mx.cpu(0))


def test_mxnets_error_name_catches_minimx_errors():
    # A script's `except mx.MXNetError` (or mx.base.MXNetError) keeps working.
    assert mx.MXNetError is mx.MinimxError is base.MXNetError
    with pytest.raises(mx.MXNetError, match="num_hidden"):
        mx.sym.FullyConnected(mx.sym.var("x"))


def test_mxnets_other_names_that_scripts_import():
    from minimx.contrib.amp import amp  # MXNet's module of the AMP functions
    assert amp.convert_symbol is mx.contrib.amp.convert_symbol
    assert mx.img is mx.image and mx.base.py_str(b"caf\xc3\xa9") == "café"
    assert mx.contrib.nd is mx.contrib.ndarray is mx.nd.contrib
    assert mx.contrib.sym.box_nms is mx.sym.contrib.box_nms
    assert mx.contrib.quant.quantize_model is mx.contrib.quantization.quantize_model
