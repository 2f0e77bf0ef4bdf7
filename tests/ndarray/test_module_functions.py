"""MXNet's module-level functions against MXNet 1.9.1's (the ``module_functions`` fixture
group, tools/mxnet_module_functions_fixtures.py): `mx.nd`'s ufuncs over NDArray / number
mixes, broadcasting and dtypes, `concatenate`, `moveaxis`, `onehot_encode`,
`load_frombuffer`, `from_numpy`, `cast_storage`, `mx.nd.op`, `mx.nd.contrib`'s `isinf` /
`isfinite` / `isnan` / `rand_zipfian`, and `mx.runtime`, `mx.engine`, `mx.util`,
`mx.context`. Each call's value (dtype, shape, values; a Python number's type) or
error (a MinimxError holding MXNet's fragment) is MXNet's."""
from __future__ import annotations

import gzip
import json
import math
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import minimx as mx
from minimx.base import MinimxError, OperatorError
from minimx.ops import list_ops

FIXTURES = Path(__file__).parent.parent / "fixtures" / "module_functions"
with gzip.open(FIXTURES / "cases.json.gz", "rt") as _f:
    CASES = json.load(_f)

_NUMBER_TYPES = {"int": int, "float": float, "bool": bool}


def decode(value: dict) -> Any:
    """A fixture value as minimx's object (NDArrays as minimx NDArrays)."""
    if "nd" in value or "np" in value:
        values = np.array(value.get("nd", value.get("np")), dtype=value["dtype"])
        values = values.reshape(value["shape"])
        if not value["c_contiguous"]:   # a transposed array, as the fixture's
            values = np.asfortranarray(values)
        return mx.nd.array(values, dtype=values.dtype) if "nd" in value else values
    if "sym" in value:
        return mx.sym.var(value["sym"])
    if "bytes" in value:
        raw = bytes.fromhex(value["bytes"])
        return raw if value["kind"] == "bytes" else bytearray(raw)
    if "seq" in value:
        items = [decode(v) for v in value["seq"]]
        return items if value["kind"] == "list" else tuple(items)
    if "map" in value:
        return {k: decode(v) for k, v in value["map"].items()}
    if "num" in value:
        kind = value["type"]
        return _NUMBER_TYPES[kind](value["num"]) if kind in _NUMBER_TYPES \
            else np.dtype(kind).type(value["num"])
    return value["py"]


def check_value(got: Any, want: dict, where: str) -> None:
    """`got` is the value `want` describes: an NDArray of its dtype, shape and values
    (floats to a few ulps, NaN where NaN), a number of its type, a sequence or a dict."""
    if "nd" in want:
        assert isinstance(got, mx.nd.NDArray), (where, type(got))
        expected = decode(want).asnumpy()
        assert (got.dtype, got.shape) == (expected.dtype, expected.shape), where
        if expected.dtype.kind == "f":
            rtol = 1e-3 if expected.dtype == np.float16 else 1e-6
            np.testing.assert_allclose(got.asnumpy(), expected, rtol=rtol, err_msg=where)
        else:
            np.testing.assert_array_equal(got.asnumpy(), expected, err_msg=where)
    elif "num" in want:
        if want["type"] in _NUMBER_TYPES:
            assert type(got).__name__ == want["type"], (where, type(got), want)
        else:   # numpy 2 keeps np.float32(1.5) + 2 a float32 (NEP 50), MXNet's numpy 1.23 not
            assert isinstance(got, np.generic), (where, type(got))
            assert got.dtype.kind == np.dtype(want["type"]).kind, (where, got.dtype, want)
        assert got == want["num"] or (math.isnan(got) and math.isnan(want["num"])), \
            (where, got, want)
    elif "seq" in want:
        assert type(got).__name__ == want["kind"] and len(got) == len(want["seq"]), where
        for i, (g, w) in enumerate(zip(got, want["seq"], strict=True)):
            check_value(g, w, f"{where}[{i}]")
    elif "map" in want:
        assert isinstance(got, dict) and list(got) == list(want["map"]), where
        for k, w in want["map"].items():
            check_value(got[k], w, f"{where}[{k!r}]")
    else:
        assert got == want["py"], (where, got, want)


def check_outcome(call: Any, case: dict) -> Any:
    """Run `call` and check it against the case's outcome: MXNet's value, or an error:
    a MinimxError holding MXNet's fragment (Python's own error for arithmetic on two
    Python numbers, as MXNet's)."""
    want, where = case["outcome"], f"{case['call']}{case['args']}{case.get('kwargs', '')}"
    if "error" not in want:
        got = call()
        check_value(got, want, where)
        return got
    kind = ZeroDivisionError if want["error"] == "ZeroDivisionError" else MinimxError
    with pytest.raises(kind) as info:
        call()
    if want["fragment"]:
        assert want["fragment"] in str(info.value), (where, str(info.value))
    return None


def _call(fn: Any, case: dict) -> Any:
    args = [decode(a) for a in case["args"]]
    kwargs = {k: decode(v) for k, v in case["kwargs"].items()}
    return lambda: fn(*args, **kwargs)


def _ids(cases: list) -> list[str]:
    return [f"{c['call']}-{i}" for i, c in enumerate(cases)]


@pytest.mark.parametrize("case", CASES["ufuncs"], ids=_ids(CASES["ufuncs"]))
def test_ufunc(case):
    check_outcome(_call(getattr(mx.nd, case["call"]), case), case)


def test_ufunc_scalar_goes_as_float_and_left_numbers_reverse():
    x = mx.nd.array([[1, 2, 4]], dtype="int32")
    assert mx.nd.subtract(10, x).asnumpy().tolist() == [[9, 8, 6]]
    assert mx.nd.greater(2, x).asnumpy().tolist() == [[1, 0, 0]]
    assert mx.nd.true_divide.__name__ == "true_divide"
    with pytest.raises(OperatorError, match="not supported"):
        mx.nd.add(None, None)


@pytest.mark.parametrize("case", [c for c in CASES["concatenate"] if "outcome" in c],
                         ids=_ids([c for c in CASES["concatenate"] if "outcome" in c]))
def test_concatenate(case):
    check_outcome(_call(mx.nd.concatenate, case), case)


@pytest.mark.parametrize("case", [c for c in CASES["concatenate"] if "is_input" in c])
def test_concatenate_one_array(case):
    a = mx.nd.array([[1, 2]])
    result = mx.nd.concatenate([a], always_copy=case["always_copy"])
    assert (result is a) == case["is_input"]
    assert result.asnumpy().tolist() == [[1, 2]]


@pytest.mark.parametrize("case", CASES["moveaxis"], ids=_ids(CASES["moveaxis"]))
def test_moveaxis(case):
    check_outcome(_call(mx.nd.moveaxis, case), case)


@pytest.mark.parametrize("case", CASES["onehot_encode"], ids=_ids(CASES["onehot_encode"]))
def test_onehot_encode(case):
    indices, out = (decode(a) for a in case["args"])
    before = out.asnumpy()
    result = check_outcome(lambda: mx.nd.onehot_encode(indices, out), case)
    if result is not None:
        assert result is out
    else:
        np.testing.assert_array_equal(out.asnumpy(), before)   # a refused call writes nothing


@pytest.mark.parametrize("case", CASES["load_frombuffer"], ids=_ids(CASES["load_frombuffer"]))
def test_load_frombuffer(case):
    if "file" in case:
        raw = (FIXTURES / case["file"]).read_bytes()
        got = check_outcome(lambda: mx.nd.load_frombuffer(raw), case)
        assert all(a.context == mx.cpu() for a in (got.values() if isinstance(got, dict)
                                                   else got))
    else:
        check_outcome(_call(mx.nd.load_frombuffer, case), case)


def test_load_frombuffer_refuses_a_path():
    with pytest.raises(MinimxError, match="bytes"):
        mx.nd.load_frombuffer(str(FIXTURES / "list.params"))


@pytest.mark.parametrize("case", CASES["from_numpy"], ids=_ids(CASES["from_numpy"]))
def test_from_numpy(case):
    source = decode(case["args"][0])
    check_outcome(_call(mx.nd.from_numpy, case), case)
    assert source.flags.writeable   # minimx copies and leaves the array as it was


def test_from_numpy_copies():
    source = np.arange(3, dtype=np.float32)
    arr = mx.nd.from_numpy(source)
    source[0] = 9
    assert arr.asnumpy().tolist() == [0, 1, 2] and arr.context == mx.cpu()
    with pytest.raises(OperatorError, match="numpy array"):
        mx.nd.from_numpy([1, 2])


@pytest.mark.parametrize("case", [c for c in CASES["cast_storage"] if "outcome" in c],
                         ids=_ids([c for c in CASES["cast_storage"] if "outcome" in c]))
def test_cast_storage(case):
    stype = decode(case["args"][1]) if len(case["args"]) > 1 else None
    if stype in ("csr", "row_sparse"):   # MXNet makes a sparse array; minimx has none
        with pytest.raises(OperatorError, match="no sparse storage"):
            _call(mx.nd.cast_storage, case)()
    else:
        check_outcome(_call(mx.nd.cast_storage, case), case)


def test_cast_storage_copies_into_out():
    x = mx.nd.array([[1, 0, 2]])
    copy = mx.nd.cast_storage(x, "default")
    assert [c["is_input"] for c in CASES["cast_storage"] if "is_input" in c] == [False, False]
    assert copy is not x and copy.asnumpy().tolist() == [[1, 0, 2]]
    out = mx.nd.zeros((1, 3))
    assert mx.nd.cast_storage(x, stype="default", out=out) is out
    assert out.asnumpy().tolist() == [[1, 0, 2]]


@pytest.mark.parametrize("case", [c for c in CASES["contrib"] if c["call"] in
                                  ("isinf", "isfinite", "isnan")])
def test_contrib_checks(case):
    check_outcome(_call(getattr(mx.nd.contrib, case["call"]), case), case)


def _zipfian_counts(classes: np.ndarray, num_sampled: int, range_max: int) -> np.ndarray:
    """MXNet's expected count of each class among num_sampled draws."""
    classes = classes.astype(np.float64)
    return np.log((classes + 2.0) / (classes + 1.0)) / math.log(range_max + 1) * num_sampled


def test_rand_zipfian_against_mxnet():
    (case,) = [c for c in CASES["contrib"] if c["call"] == "rand_zipfian"]
    true_classes, num_sampled, range_max = (decode(a) for a in case["args"])
    want_samples, want_true, want_sampled = case["outcome"]["seq"]
    samples, count_true, count_sampled = mx.nd.contrib.rand_zipfian(true_classes, num_sampled,
                                                                    range_max)
    # The expected counts of the true classes are MXNet's; the draws come from minimx's
    # generator, so only their kind, their range and their counts' formula can be.
    check_value(count_true, want_true, "expected_count_true")
    assert (samples.dtype, samples.shape) == (np.int64, tuple(want_samples["shape"]))
    assert (count_sampled.dtype, count_sampled.shape) == (np.float64, (num_sampled,))
    drawn = samples.asnumpy()
    assert ((drawn >= 0) & (drawn < range_max)).all()
    np.testing.assert_allclose(count_sampled.asnumpy(),
                               _zipfian_counts(drawn, num_sampled, range_max), rtol=1e-12)
    mxnet_drawn = np.array(want_samples["nd"])
    np.testing.assert_allclose(np.array(want_sampled["nd"]),
                               _zipfian_counts(mxnet_drawn, num_sampled, range_max), rtol=1e-12)


def test_rand_zipfian_repeats_under_a_seed_and_follows_the_distribution():
    classes = mx.nd.array([0, 5])
    draws = []
    for _ in range(2):
        mx.random.seed(11)
        draws.append(mx.nd.contrib.rand_zipfian(classes, 20000, 50)[0].asnumpy())
    np.testing.assert_array_equal(draws[0], draws[1])
    frequency = np.bincount(draws[0], minlength=50) / 20000
    # MXNet's sampler: floor(exp(u) - 1) with u uniform on [0, log(51)).
    probability = (np.log(np.arange(2, 52)) - np.log(np.arange(1, 51))) / math.log(51)
    np.testing.assert_allclose(frequency, probability, atol=0.01)
    (on_ctx,) = {a.context for a in mx.nd.contrib.rand_zipfian(classes, 3, 5, ctx=mx.cpu(1))}
    assert on_ctx == mx.cpu(1)


def test_op_module():
    record = CASES["op_modules"]
    assert record["nd_same_function"] and mx.nd.op.Convolution is mx.nd.Convolution
    assert mx.nd.op.__name__ == record["module_names"][0].replace("mxnet", "minimx")
    ours = {n for n in dir(mx.nd.op) if not n.startswith("__")}
    assert not any(n.startswith("_") for n in ours)
    # Every operator both have is there; MXNet's module also holds CachedOp and the
    # operators minimx lacks.
    public = {n for n in list_ops() if not n.startswith("_")}
    assert ours == public and ours & set(record["nd"]) == public & set(record["nd"])


def test_runtime_features():
    record = CASES["runtime"]
    features = mx.runtime.Features()
    assert list(features) == record["names"] == list(mx.runtime.NAMES)
    assert isinstance(features, dict) == record["is_dict"]
    assert (mx.runtime.Features() is features) == record["same_instance"]
    assert [f.name for f in mx.runtime.feature_list()] == record["names"]
    assert features.is_enabled("MKLDNN") == mx.onednn.available() == features.is_enabled("mkldnn")
    for name in ("CUDA", "CUDNN", "NCCL", "TENSORRT", "DIST_KVSTORE", "JEMALLOC", "TVM_OP"):
        assert not features.is_enabled(name)
    assert features.is_enabled("LAPACK")
    assert repr(features["CUDA"]) == "✖ CUDA" and repr(features["LAPACK"]) == "✔ LAPACK"
    with pytest.raises(MinimxError) as info:   # a RuntimeError, as MXNet's
        features.is_enabled("bogus")
    assert isinstance(info.value, RuntimeError)
    assert record["unknown"]["fragment"] in str(info.value)


def test_engine_bulk_size():
    got = [mx.engine.set_bulk_size(5), mx.engine.set_bulk_size(7)]
    with mx.engine.bulk(3) as scope:
        got.append(mx.engine.set_bulk_size(3))
    got.append(mx.engine.set_bulk_size(0))
    assert got == CASES["engine"]["set_bulk_size"] and scope is not None
    other: list[int] = []   # per thread, as MXNet's
    mx.engine.set_bulk_size(9)
    thread = threading.Thread(target=lambda: other.append(mx.engine.set_bulk_size(1)))
    thread.start()
    thread.join()
    assert other == [0] and mx.engine.set_bulk_size(0) == 9
    with pytest.raises(MinimxError, match="int"):
        mx.engine.set_bulk_size("4")


def test_util_and_context():
    record = CASES["util"]
    assert mx.util.is_np_array() == record["is_np_array"]
    assert mx.util.is_np_shape() == record["is_np_shape"] == mx.is_np_shape()
    assert mx.util.get_gpu_count() == record["get_gpu_count"] == mx.context.num_gpus() == 0
    assert mx.util.set_np_shape(False) == record["set_np_shape_false"]
    assert sorted(n for n in ("is_np_shape", "set_np_shape", "np_shape", "use_np_shape",
                              "is_np_array", "np_array", "use_np_array", "use_np")
                  if hasattr(mx, n)) == record["top_level"]
    name = "MINIMX_MODULE_FUNCTIONS_TEST"
    assert mx.util.getenv(name) == record["getenv_unset"]
    mx.util.setenv(name, "12")
    assert mx.util.getenv(name) == record["getenv_set"]
    mx.util.setenv(name, None)
    assert mx.util.getenv(name) == record["getenv_unset_again"]

    @mx.util.set_module("mxnet.example")
    def example() -> None:
        pass
    assert example.__module__ == record["set_module"]
    with pytest.raises(MinimxError) as gpu_error:
        mx.gpu(0)
    for call in (lambda: mx.context.gpu_memory_info(0), lambda: mx.util.get_gpu_memory(0)):
        with pytest.raises(MinimxError) as info:
            call()
        assert type(info.value) is type(gpu_error.value)
        assert str(info.value) == str(gpu_error.value)


def test_numpy_semantics_stay_off():
    with pytest.raises(MinimxError, match=CASES["util"]["set_np_refused"]["fragment"]):
        mx.util.set_np(shape=False, array=True)
    for call in (lambda: mx.util.set_np(), lambda: mx.util.set_np_shape(True)):
        with pytest.raises(MinimxError, match="no NumPy semantics"):
            call()
    mx.util.reset_np()
    with mx.np_shape(False), mx.np_array(False):
        assert not mx.is_np_shape() and not mx.is_np_array()
    with pytest.raises(MinimxError, match="no NumPy semantics"), mx.np_shape():
        pass

    @mx.use_np
    def numpy_function(x: int) -> int:
        return x
    assert numpy_function.__name__ == "numpy_function"
    with pytest.raises(MinimxError, match="no NumPy semantics"):
        numpy_function(1)
    with pytest.raises(MinimxError, match="can only decorate"):
        mx.use_np_shape(3)


def test_ufuncs_and_operators_take_numpy_scalars():
    # MXNet 1.9.1: mx.nd.add(mx.nd.ones(2), np.bool_(True)) is [2, 2].
    x = mx.nd.ones(2)
    for scalar in (np.bool_(True), np.int64(1), np.float32(1.0)):
        assert mx.nd.add(x, scalar).asnumpy().tolist() == [2, 2]
        assert mx.nd.subtract(scalar, x).asnumpy().tolist() == [0, 0]
        assert (x + scalar).asnumpy().tolist() == [2, 2]
