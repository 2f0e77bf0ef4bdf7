"""The ``module_functions`` fixture group (tools/mxnet_fixtures.py writes it with MXNet 1.9.1):
what MXNet's module-level Python functions give.

`mx.nd`'s ufuncs (``add`` ... ``logical_xor``, ``maximum``, ``minimum``, ``power``) over
NDArray / number mixes, broadcasting shapes and int and float dtypes; ``concatenate``,
``moveaxis``, ``onehot_encode``, ``load_frombuffer`` (of ``list.params`` / ``dict.params``,
written here by ``mx.nd.save``), ``from_numpy`` and ``cast_storage``; `mx.sym`'s ``eye``,
``linspace``, ``hypot``, ``maximum``, ``minimum``, ``power`` and ``cast_storage`` (the
graph's nodes and its values); `mx.nd.contrib`'s ``isinf``, ``isfinite``, ``isnan`` and
``rand_zipfian`` (its deterministic parts); `mx.runtime`'s features; `mx.engine`'s bulk
size; `mx.util`'s and `mx.context`'s GPU and numpy-semantics queries; the names in
``mx.nd.op`` / ``mx.sym.op``.

``cases.json.gz`` holds one list per kind of call. A value is written as ``{"nd": values,
"dtype": name, "shape": dims}`` (an NDArray; ``"np"`` for a numpy array), ``{"num": value,
"type": name}`` (a Python or numpy number), ``{"seq": [...], "kind": "list"|"tuple"}``,
``{"map": {...}}``, ``{"sym": name}`` (a Variable), ``{"bytes": hex, "kind": name}`` or
``{"py": value}`` (None, a string). A call's outcome is its value, or ``{"error": type,
"message": last line, "fragment": text}``, where ``fragment`` is the part of MXNet's
message that minimx's must hold too (None when minimx words it otherwise).
"""
from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mxnet as mx
import numpy as np

# mx.nd's ufunc-style functions, as `_ufunc_helper` defines them.
UFUNCS = ["add", "subtract", "multiply", "divide", "true_divide", "modulo", "power", "maximum",
          "minimum", "equal", "not_equal", "greater", "greater_equal", "lesser",
          "lesser_equal", "logical_and", "logical_or", "logical_xor"]


def encode(value: Any) -> Any:
    """`value` as JSON."""
    if isinstance(value, (mx.nd.NDArray, np.ndarray)):
        values = value.asnumpy() if isinstance(value, mx.nd.NDArray) else value
        return {"nd" if isinstance(value, mx.nd.NDArray) else "np": values.tolist(),
                "dtype": values.dtype.name, "shape": list(values.shape),
                "c_contiguous": bool(values.flags.c_contiguous)}
    if isinstance(value, mx.sym.Symbol):
        return {"sym": value.name}
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": value.hex(), "kind": type(value).__name__}
    if isinstance(value, (list, tuple)):
        return {"seq": [encode(v) for v in value],
                "kind": type(value).__name__}
    if isinstance(value, dict):
        return {"map": {k: encode(v) for k, v in value.items()}}
    if isinstance(value, (bool, int, float, np.generic)) and not isinstance(value, np.str_):
        number = value.item() if isinstance(value, np.generic) else value
        return {"num": number, "type": type(value).__name__}
    return {"py": value}


def outcome(call: Callable[[], Any], fragment: str | None = None) -> Any:
    """`call`'s value encoded, or its error (checking `fragment` is in the message)."""
    try:
        return encode(call())
    except Exception as exc:  # every kind MXNet raises is recorded
        message = str(exc).strip().splitlines()[-1] if str(exc).strip() else ""
        if fragment is not None:
            assert fragment in str(exc), (fragment, str(exc))
        return {"error": type(exc).__name__, "message": message, "fragment": fragment}


def _nd(values: Any, dtype: str) -> mx.nd.NDArray:
    return mx.nd.array(np.asarray(values), dtype=dtype)


def _case(cases: list, name: str, fn: Callable[..., Any], args: list,
          kwargs: dict | None = None, fragment: str | None = None, **extra: Any) -> None:
    """One call ``fn(*args, **kwargs)`` recorded as `name` with its outcome."""
    kwargs = kwargs or {}
    cases.append({"call": name, "args": [encode(a) for a in args],
                  "kwargs": {k: encode(v) for k, v in kwargs.items()},
                  "outcome": outcome(lambda: fn(*args, **kwargs), fragment),
                  **extra})


def ufunc_cases() -> list:
    cases: list = []
    lhs_values = [[-7, 7, 3], [1, -2, 5]]          # (2, 3); no zero: integer division
    rhs_values = [[2, -3, 2], [-2, 3, 3]]
    row, col = [[2, -3, 1]], [[3], [-2]]            # (1, 3), (2, 1): broadcasting
    for name in UFUNCS:
        fn = getattr(mx.nd, name)
        for dtype in ("float32", "int32", "uint8", "float64", "int64"):
            lhs = _nd(lhs_values, dtype)
            for a, b in [(lhs, _nd(rhs_values, dtype)), (lhs, _nd(row, dtype)),
                         (_nd(col, dtype), lhs), (_nd([1, 2, 3], dtype), lhs),
                         (lhs, 2), (lhs, -3), (lhs, 2.5), (lhs, -1.5),
                         (3, lhs), (-2.5, lhs), (lhs, np.float32(1.5)), (lhs, True)]:
                _case(cases, name, fn, [a, b])
        # Two numbers: a plain Python result.
        for a, b in [(7, -3), (-7, 3), (2.5, 2), (0, 1.5), (3, 3), (True, 0),
                     (np.float32(1.5), 2)]:
            _case(cases, name, fn, [a, b])
        # Floats' edges: modulo and division by zero, negative zero, nan, inf.
        edge = _nd([-7.5, 7, 3, -0.0, np.nan, np.inf], "float32")
        for b in [_nd([2, -2, 0, 3, 1, 2], "float32"), -2, 0.0]:
            _case(cases, name, fn, [edge, b])
        _case(cases, name, fn, [5, edge])
        # Errors: operand types, shapes and dtypes.
        x = _nd([[1, 2, 3]], "float32")
        _case(cases, name, fn, [x, "x"], fragment="not supported")
        _case(cases, name, fn, [x, None], fragment="not supported")
        for other in ["x", [1, 2, 3], None]:
            _case(cases, name, fn, [other, x])
        _case(cases, name, fn, [x, _nd([1, 2], "float32")])
        _case(cases, name, fn, [x, _nd([[1, 2, 3]], "int32")])
    return cases


def concatenate_cases() -> list:
    cases: list = []
    for dtype in ("float32", "int32"):
        a = _nd(np.arange(24).reshape(2, 3, 4), dtype)
        b = _nd(np.arange(100, 124).reshape(2, 3, 4), dtype)
        for axis in (0, 1, 2):
            shape = [2, 3, 4]
            shape[axis] = 1
            c = _nd(np.arange(-12, 0)[:int(np.prod(shape))].reshape(shape), dtype)
            _case(cases, "concatenate", mx.nd.concatenate, [[a, b, c]], {"axis": axis})
        _case(cases, "concatenate", mx.nd.concatenate, [[a]])
        _case(cases, "concatenate", mx.nd.concatenate, [[a, b], 1, False])
    a = _nd([[1, 2]], "float32")
    cases.append({"call": "concatenate_identity", "always_copy": False,
                  "is_input": mx.nd.concatenate([a], always_copy=False) is a})
    cases.append({"call": "concatenate_identity", "always_copy": True,
                  "is_input": mx.nd.concatenate([a]) is a})
    f32 = _nd([[1, 2]], "float32")
    for args, kwargs in [([(f32, f32)], {}), ([[]], {}), ([[f32, f32.astype("int32")]], {}),
                         ([[f32, _nd([[1, 2, 3]], "float32")]], {}), ([[1, f32]], {}),
                         ([[f32, 1]], {}), ([[f32]], {"axis": 5}),
                         ([[f32, f32]], {"axis": -1})]:
        _case(cases, "concatenate", mx.nd.concatenate, args, kwargs)
    return cases


def moveaxis_cases() -> list:
    cases: list = []
    x = _nd(np.arange(60).reshape(3, 4, 5), "float32")
    for source, destination, fragment in [
            (0, 2, None), (-1, 0, None), ([0, 1], [-1, -2], None), ((0, 2), (2, 0), None),
            (1, 1, None), ([2, 0, 1], [0, 1, 2], None),
            (5, 0, "Source should verify 0 <= source < tensor.ndim"),
            (0, -4, "Destination should verify 0 <= destination < tensor.ndim"),
            ([0, 1], [0], "must have the same number of elements"),
            ([0, 0], [1, 2], "repeated axis"), ("a", 0, None), (1.0, 0, None)]:
        _case(cases, "moveaxis", mx.nd.moveaxis, [x, source, destination], fragment=fragment)
    return cases


def onehot_cases() -> list:
    cases: list = []
    for indices, out in [([1, 4, 0], np.zeros((3, 5), "float32")),
                         ([1, -1, 2.7], np.ones((3, 5), "float32")),
                         ([3, 7, -0.5], np.ones((3, 5), "float32")),
                         ([3, 0], np.full((2, 4), 7, "float64")),
                         ([1, 2], np.ones((3, 5), "float32")),
                         ([1, 2, 0], np.zeros((3, 5), "int32"))]:
        _case(cases, "onehot_encode", mx.nd.onehot_encode,
              [_nd(indices, "float32"), _nd(out, str(out.dtype))])
    return cases


def load_frombuffer_cases(out: Path) -> list:
    cases: list = []
    listed = [_nd(np.arange(6).reshape(2, 3), "float32"), _nd([1, -2, 3], "int64"),
              _nd([[0.5]], "float16"), _nd([1, 0, 1], "uint8")]
    named = {"arg:w": _nd(np.arange(4).reshape(2, 2), "float64"), "aux:m": _nd([7], "int32")}
    for name, data in [("list.params", listed), ("dict.params", named)]:
        mx.nd.save(str(out / name), data)
        _case(cases, "load_frombuffer", lambda n: mx.nd.load_frombuffer((out / n).read_bytes()),
              [name], file=name)
    for buf in [b"", b"\x12\x01\x00\x00\x00\x00\x00\x00", bytearray(b"abc")]:
        _case(cases, "load_frombuffer", mx.nd.load_frombuffer, [buf])
    return cases


def from_numpy_cases() -> list:
    cases: list = []
    for dtype in ("float32", "float64", "float16", "uint8", "int8", "int32", "int64", "bool"):
        source = np.arange(6).astype(dtype).reshape(2, 3)
        for zero_copy in (True, False):
            # A copy each time: MXNet's zero-copy marks the numpy array read-only.
            _case(cases, "from_numpy", lambda s, z: mx.nd.from_numpy(s.copy(), zero_copy=z),
                  [source, zero_copy],
                  fragment="is not supported" if zero_copy and dtype == "int8" else None)
    strided = np.arange(6.0).reshape(2, 3).T
    for zero_copy in (True, False):
        _case(cases, "from_numpy", mx.nd.from_numpy, [strided], {"zero_copy": zero_copy},
              fragment="Only c-contiguous arrays are supported" if zero_copy else None)
    return cases


def cast_storage_cases() -> list:
    cases: list = []
    for dtype in ("float32", "int32"):
        x = _nd([[1, 0, 2], [0, 0, 3]], dtype)
        copy = mx.nd.cast_storage(x, "default")
        cases.append({"call": "cast_storage_copy", "dtype": dtype, "is_input": copy is x,
                      "stype": copy.stype})
        _case(cases, "cast_storage", mx.nd.cast_storage, [x, "default"])
    x = _nd([[1, 0]], "float32")
    for stype in ("csr", "row_sparse"):   # MXNet makes sparse arrays (densified here)
        _case(cases, "cast_storage", lambda a, s: mx.nd.cast_storage(a, s).tostype("default"),
              [x, stype])
    _case(cases, "cast_storage", mx.nd.cast_storage, [x, "bogus"], fragment="valid values are")
    _case(cases, "cast_storage", mx.nd.cast_storage, [x], fragment="stype")
    return cases


def _nodes(sym: mx.sym.Symbol) -> list:
    return [[n["op"], n["name"], n.get("attrs", {})] for n in json.loads(sym.tojson())["nodes"]]


# Symbol function calls, made in order under one NameManager (their automatic names
# count from 0), evaluated with x = SYMBOL_DATA.
SYMBOL_CALLS = [
    "mx.sym.eye(3)", "mx.sym.eye(2, 3, 1, dtype='int32')", "mx.sym.eye(4, k=-1, name='e')",
    "mx.sym.linspace(0, 1, 5)",
    "mx.sym.linspace(-1, 2, 4, endpoint=False, dtype='float64', name='ls')",
    "mx.sym.hypot(x, x)", "mx.sym.hypot(x, 3)", "mx.sym.hypot(2.5, x)",
    "mx.sym.maximum(x, 2)", "mx.sym.maximum(-1, x)", "mx.sym.minimum(x, x)",
    "mx.sym.minimum(x, np.float32(0.1))", "mx.sym.power(2, x)", "mx.sym.power(x, 2.5)",
    "mx.sym.pow(x, x)", "mx.sym.cast_storage(x, stype='default')",
    "mx.sym.Group(list(mx.sym.contrib.rand_zipfian(x, 4, 10)))",
]
SYMBOL_DATA = [[3, -4, 0.5], [1.5, 2, -0.25]]


def symbol_cases() -> list:
    """Each Symbol function's graph (op, name, attributes per node) and values (but
    rand_zipfian's, random: its inferred dtypes and shapes), then calls on numbers and
    errors."""
    cases: list = []
    x = mx.sym.var("x")
    with mx.name.NameManager():
        for source in SYMBOL_CALLS:
            sym = eval(source, {"mx": mx, "np": np, "x": x})  # noqa: S307  (our own calls)
            case = {"call": source, "nodes": _nodes(sym)}
            if "rand_zipfian" in source:
                case["infer_type"] = [np.dtype(d).name for d in sym.infer_type(x="float32")[1]]
                case["infer_shape"] = [list(s) for s in sym.infer_shape(x=(3,))[1]]
            else:
                inputs = {"x": mx.nd.array(SYMBOL_DATA)} if sym.list_arguments() else {}
                case["values"] = encode(sym.eval(**inputs)[0])
            cases.append(case)
    for call, args in [("hypot", [3, 4]), ("hypot", [3.5, -1]), ("maximum", [2, 3.5]),
                       ("maximum", [-1, -2]), ("minimum", [2, 3.5]), ("power", [2, 3]),
                       ("power", [2.0, -1]), ("pow", [-2, 3])]:
        _case(cases, call, getattr(mx.sym, call), args)
    for call, args in [("hypot", [x, "a"]), ("maximum", ["a", x]), ("minimum", [None, 1]),
                       ("power", [[1], x])]:
        _case(cases, call, getattr(mx.sym, call), args, fragment="not supported")
    _case(cases, "contrib.rand_zipfian", mx.sym.contrib.rand_zipfian,
          [_nd([0, 3], "float32"), 4, 10], fragment="unexpected type")
    return cases


def contrib_cases() -> list:
    cases: list = []
    special = [np.inf, -np.inf, np.nan, -1, 0, 2.5, -0.0]
    for dtype in ("float32", "float64", "float16"):
        x = _nd(special, dtype)
        for name in ("isinf", "isfinite", "isnan"):
            _case(cases, name, getattr(mx.nd.contrib, name), [x])
    ints = _nd([[-3, 0], [5, 7]], "int32")
    for name in ("isinf", "isfinite", "isnan"):
        _case(cases, name, getattr(mx.nd.contrib, name), [ints])
    # rand_zipfian: the expected counts follow from the classes; the draws are seeded,
    # but by MXNet's generator, not minimx's.
    true_classes = _nd([0, 3, 9, 1], "float32")
    mx.random.seed(7)
    _case(cases, "rand_zipfian", mx.nd.contrib.rand_zipfian, [true_classes, 6, 10])
    return cases


def runtime_record() -> dict:
    features = mx.runtime.Features()
    record: dict = {"names": list(features.keys()),
                    "mxnet_enabled": [f.enabled for f in mx.runtime.feature_list()],
                    "repr": [repr(f) for f in mx.runtime.feature_list()],
                    "same_instance": mx.runtime.Features() is features,
                    "is_dict": isinstance(features, dict),
                    "lower_case": features.is_enabled("mkldnn")}
    record["unknown"] = outcome(lambda: features.is_enabled("bogus"),
                                "Feature 'BOGUS' is unknown, known features are:")
    return record


def engine_record() -> dict:
    steps = [mx.engine.set_bulk_size(5), mx.engine.set_bulk_size(7)]
    with mx.engine.bulk(3):
        steps.append(mx.engine.set_bulk_size(3))
    steps.append(mx.engine.set_bulk_size(0))
    return {"set_bulk_size": steps}


def util_record() -> dict:
    record = {"is_np_array": mx.util.is_np_array(), "is_np_shape": mx.util.is_np_shape(),
              "get_gpu_count": mx.util.get_gpu_count(), "num_gpus": mx.context.num_gpus(),
              "set_np_shape_false": mx.util.set_np_shape(False),
              "getenv_unset": mx.util.getenv("MXNET_MODULE_FUNCTIONS_UNSET")}
    mx.util.setenv("MXNET_MODULE_FUNCTIONS_SET", "12")
    record["getenv_set"] = mx.util.getenv("MXNET_MODULE_FUNCTIONS_SET")
    mx.util.setenv("MXNET_MODULE_FUNCTIONS_SET", None)
    record["getenv_unset_again"] = mx.util.getenv("MXNET_MODULE_FUNCTIONS_SET")

    @mx.util.set_module("mxnet.example")
    def example() -> None:
        pass
    record["set_module"] = example.__module__
    record["gpu_memory_info"] = outcome(lambda: mx.context.gpu_memory_info(0))
    record["set_np_refused"] = outcome(lambda: mx.util.set_np(shape=False, array=True),
                                       "NumPy Shape semantics is required")
    record["top_level"] = sorted(n for n in ("is_np_shape", "set_np_shape", "np_shape",
                                            "use_np_shape", "is_np_array", "np_array",
                                            "use_np_array", "use_np") if hasattr(mx, n))
    return record


def op_module_record() -> dict:
    return {"nd": sorted(n for n in dir(mx.nd.op) if not n.startswith("__")),
            "sym": sorted(n for n in dir(mx.sym.op) if not n.startswith("__")),
            "nd_same_function": mx.nd.op.Convolution is mx.nd.Convolution,
            "module_names": [mx.nd.op.__name__, mx.sym.op.__name__]}


def write_module_functions(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    record = {"ufuncs": ufunc_cases(), "concatenate": concatenate_cases(),
              "moveaxis": moveaxis_cases(), "onehot_encode": onehot_cases(),
              "load_frombuffer": load_frombuffer_cases(out), "from_numpy": from_numpy_cases(),
              "cast_storage": cast_storage_cases(), "symbol": symbol_cases(),
              "contrib": contrib_cases(), "runtime": runtime_record(),
              "engine": engine_record(), "util": util_record(), "op_modules": op_module_record()}
    with gzip.GzipFile(out / "cases.json.gz", "wb", mtime=0) as f:  # the same bytes each run
        f.write((json.dumps(record, separators=(",", ":")) + "\n").encode())
    print(f"  {sum(len(v) for v in record.values() if isinstance(v, list))} cases", flush=True)
