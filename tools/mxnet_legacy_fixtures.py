"""The ``test_utils`` and ``feedforward`` fixture groups of `mxnet_fixtures.py`: what MXNet
1.9.1's `mx.test_utils` decides on fixed inputs, and a short deterministic
`mx.model.FeedForward` training run.

Runs with MXNet's Python only (never minimx). Inputs are stored beside MXNet's answers,
so the tests repeat each call with minimx on the same values.
"""
from __future__ import annotations

import contextlib
import io
import json
import warnings
from pathlib import Path

import mxnet as mx
import numpy as np
from custom_op_defs import register  # tools/, beside this script
from mxnet import test_utils as tu

register(mx)   # the tu_square operator the gradient cases use


def _f32(*values: float) -> np.ndarray:
    return np.array(values, np.float32)


def _almost_equal_cases(rng: np.random.RandomState) -> list[tuple[str, np.ndarray, np.ndarray,
                                                                  dict]]:
    """(case, a, b, keyword arguments) around the default tolerances of each dtype."""
    many = rng.uniform(-1, 1, (4, 5)).astype(np.float32)
    shifted = many.copy()
    shifted.ravel()[:15] += np.linspace(0.01, 0.15, 15, dtype=np.float32)
    return [
        ("f32_within_assert_only", _f32(1, 2), _f32(1, 2.0001), {}),
        ("f32_outside", _f32(1, 2, 3, 4), _f32(1, 2.01, 3, 4.1), {}),
        ("f64_close", np.array([1.0]), np.array([1.000001]), {}),
        ("f64_tiny_atol", np.array([0.0, 1.0]), np.array([1e-19, 1.0]), {}),
        ("nan_unequal", _f32(np.nan, 1), _f32(np.nan, 1), {}),
        ("nan_equal", _f32(np.nan, 1), _f32(np.nan, 1), {"equal_nan": True}),
        ("f16_loose", np.array([1.0, 3.0], np.float16), np.array([1.05, 3.0], np.float16), {}),
        ("f16_vs_f32", np.array([1.0], np.float16), _f32(1.09), {}),
        ("explicit_tols", _f32(1, 10), _f32(1.05, 11.5), {"rtol": 0.1, "atol": 0.0}),
        ("int32", np.array([1, 2], np.int32), np.array([1, 3], np.int32), {}),
        ("many_mismatches", many, shifted, {}),
        ("scalar", np.array(1.0, np.float32), np.array(1.1, np.float32), {}),
        ("nd_both", _f32(0.5, 0.25, 3), _f32(0.5, 0.25, 3.01), {"nd": True}),
        ("nd_mixed_dtype", _f32(0.5, 2), np.array([0.5, 2.00001]), {"nd": True}),
    ]


def _assert_message(a: object, b: object, kwargs: dict) -> str | None:
    """MXNet's assert_almost_equal message up to the arrays (None if it passes); the lines
    it prints on the way are dropped, and numpy's print options restored after."""
    options = np.get_printoptions()
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            tu.assert_almost_equal(a, b, **kwargs)
    except AssertionError as exc:
        return str(exc).split("\n ACTUAL:")[0]
    finally:
        np.set_printoptions(**options)
    return None


# minimx's defaults (MXNet 1.x's before 1.6); 1.9.1's None picks eps 1/512, rtol 1e-4 in float32
GRADIENT_DEFAULTS = {"numeric_eps": 1e-3, "rtol": 1e-2}


def _gradient_cases(rng: np.random.RandomState) -> list[tuple[str, mx.sym.Symbol, dict, dict]]:
    """(case, symbol, location, check_numeric_gradient keyword arguments)."""
    x = mx.sym.var("x")
    w, b = mx.sym.var("w"), mx.sym.var("b")
    away = rng.uniform(0.3, 1.0, (3, 4)) * rng.choice([-1.0, 1.0], (3, 4))   # not near 0
    return [
        ("square_right", mx.sym.Custom(x, op_type="tu_square", factor=2, name="sq"),
         {"x": away}, {}),
        ("square_wrong", mx.sym.Custom(x, op_type="tu_square", factor=3, name="sq"),
         {"x": away}, {}),
        ("square_slightly_wrong", mx.sym.Custom(x, op_type="tu_square", factor=2.1, name="sq"),
         {"x": away}, {}),
        ("fc_tanh", mx.sym.tanh(mx.sym.FullyConnected(x, w, b, num_hidden=3, name="fc")),
         {"x": rng.uniform(-1, 1, (2, 4)), "w": rng.uniform(-1, 1, (3, 4)),
          "b": rng.uniform(-1, 1, (3,))}, {}),
        ("fc_grad_nodes", mx.sym.FullyConnected(x, w, b, num_hidden=3, name="fc"),
         {"x": rng.uniform(-1, 1, (2, 4)), "w": rng.uniform(-1, 1, (3, 4)),
          "b": rng.uniform(-1, 1, (3,))}, {"grad_nodes": ["w"]}),
        ("square_wrong_loose", mx.sym.Custom(x, op_type="tu_square", factor=2.1, name="sq"),
         {"x": away}, {"rtol": 0.1}),
    ]


def _symbolic_backward_record(arrays: dict[str, np.ndarray]) -> dict:
    """check_symbolic_backward with grad_req 'add' returns its seeded random start plus the
    gradient: `backward:<name>` (np.random seeded with 11 before the call)."""
    a, b = mx.sym.var("a"), mx.sym.var("b")
    sym = a * b + a
    loc = {"a": np.arange(6, dtype=np.float32).reshape(2, 3) / 4,
           "b": np.ones((2, 3), np.float32) * 0.5}
    head = np.full((2, 3), 2.0, np.float32)
    expected = {"a": head * (loc["b"] + 1), "b": head * loc["a"]}
    np.random.seed(11)
    got = tu.check_symbolic_backward(sym, loc, [head], expected, grad_req="add")
    arrays.update({f"backward:{k}": v.asnumpy() for k, v in got.items()})
    arrays.update({f"backward_in:{k}": v for k, v in loc.items()})
    return {"expression": "a * b + a", "head": 2.0, "seed": 11}


def write_test_utils(out: Path) -> None:
    """`test_utils.json` and `test_utils.npz`: almost_equal and assert_almost_equal on each
    `_almost_equal_cases` pair (`eq:<case>:a`/`:b`), check_numeric_gradient's verdict on each
    `_gradient_cases` symbol (`grad:<case>:<arg>`), the shapes and arrays of the rand_*
    helpers after ``np.random.seed(5)`` (`random:*`), and a seeded check_symbolic_backward."""
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.RandomState(29)
    arrays: dict[str, np.ndarray] = {}
    equal = {}
    for case, a, b, kwargs in _almost_equal_cases(rng):
        nd = kwargs.pop("nd", False)
        arrays[f"eq:{case}:a"], arrays[f"eq:{case}:b"] = a, b
        left, right = ((mx.nd.array(a, dtype=a.dtype), mx.nd.array(b, dtype=b.dtype)) if nd
                       else (a, b))
        equal[case] = {"kwargs": kwargs, "nd": nd,
                       "almost_equal": bool(tu.almost_equal(a, b, **kwargs)),
                       "assert": _assert_message(left, right, kwargs)}
    gradients = {}
    for case, sym, location, kwargs in _gradient_cases(rng):
        arrays.update({f"grad:{case}:{k}": v.astype(np.float32) for k, v in location.items()})
        np.random.seed(3)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                tu.check_numeric_gradient(sym, location, **{**GRADIENT_DEFAULTS, **kwargs})
            passed = True
        except AssertionError:
            passed = False
        gradients[case] = {"symbol": sym.tojson(), "kwargs": kwargs, "passed": passed}
    np.random.seed(5)
    shapes = {"2d": tu.rand_shape_2d(), "3d": tu.rand_shape_3d(4, 5, 6),
              "nd": [int(d) for d in tu.rand_shape_nd(4, 3)]}
    arrays["random:arrays_0"], arrays["random:arrays_1"] = tu.random_arrays((2, 3), (4,))
    arrays["random:ndarray"] = tu.rand_ndarray((3, 2)).asnumpy()
    record = {"mxnet_version": mx.__version__, "almost_equal": equal, "gradients": gradients,
              "random_shapes": shapes, "symbolic_backward": _symbolic_backward_record(arrays)}
    (out / "test_utils.json").write_text(json.dumps(record, indent=1) + "\n")
    np.savez_compressed(out / "test_utils.npz", **arrays)


# -- mx.model.FeedForward ---------------------------------------------------------------------
def build_mlp() -> mx.sym.Symbol:
    data = mx.sym.var("data")
    net = mx.sym.FullyConnected(data, num_hidden=16, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


FEEDFORWARD_CASES = {   # case: FeedForward keyword arguments besides symbol and arg_params
    "sgd_momentum": {"num_epoch": 3, "optimizer": "sgd", "learning_rate": 0.1, "momentum": 0.9,
                     "wd": 0.001, "numpy_batch_size": 16},
    "epoch_size": {"num_epoch": 3, "epoch_size": 3, "optimizer": "sgd", "learning_rate": 0.2,
                   "numpy_batch_size": 16},
    # Data parallel: each context trains on its slice of a batch (16 over [2, 1]: 11 / 5).
    "two_contexts": {"num_epoch": 2, "optimizer": "sgd", "learning_rate": 0.1, "momentum": 0.9,
                     "numpy_batch_size": 16},
}
FEEDFORWARD_CONTEXTS = {"two_contexts": 2}   # case: CPU contexts (one where not named)
FEEDFORWARD_WORK_LOADS = {"two_contexts": [2, 1]}


def write_feedforward(out: Path) -> None:
    """`feedforward.npz`: data `X`, labels `y`, the initial `init:<param>`, and per case of
    `FEEDFORWARD_CASES` (trained on an unshuffled NDArrayIter of batch 16, validated on
    the first 32 rows given as a numpy pair) the trained `<case>:<param>` and
    `<case>:predict` (predict of the numpy X); `feedforward.json`: per case the
    (epoch, nbatch) pairs batch-end callbacks saw, the epochs of epoch-end callbacks, the
    validation accuracy per epoch and the score of the training data."""
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.RandomState(31)
    x = rng.uniform(-1, 1, (50, 8)).astype(np.float32)
    y = x[:, :3].argmax(axis=1).astype(np.float32)
    sym = build_mlp()
    arg_shapes, _, _ = sym.infer_shape(data=(16, 8))
    init = {n: rng.uniform(-0.3, 0.3, s).astype(np.float32)
            for n, s in zip(sym.list_arguments(), arg_shapes, strict=True)
            if n not in ("data", "softmax_label")}
    arrays = {"X": x, "y": y, **{f"init:{n}": v for n, v in init.items()}}
    record: dict = {"mxnet_version": mx.__version__, "cases": {}}
    for case, kwargs in FEEDFORWARD_CASES.items():
        seen: dict = {"batches": [], "epochs": [], "validation": []}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            model = mx.model.FeedForward(
                sym, ctx=[mx.cpu(i) for i in range(FEEDFORWARD_CONTEXTS.get(case, 1))],
                arg_params={n: mx.nd.array(v) for n, v in init.items()}, **kwargs)
        model.fit(mx.io.NDArrayIter(x, y, batch_size=16, shuffle=False),
                  eval_data=(x[:32], y[:32]), work_load_list=FEEDFORWARD_WORK_LOADS.get(case),
                  batch_end_callback=lambda p, s=seen: s["batches"].append([p.epoch, p.nbatch]),
                  epoch_end_callback=lambda e, *_, s=seen: s["epochs"].append(e),
                  eval_end_callback=lambda p, s=seen: s["validation"].append(
                      p.eval_metric.get()[1]))
        arrays.update({f"{case}:{n}": v.asnumpy() for n, v in model.arg_params.items()})
        arrays[f"{case}:predict"] = model.predict(x)
        seen["score"] = model.score(mx.io.NDArrayIter(x, y, batch_size=16))
        record["cases"][case] = {"kwargs": kwargs, "contexts": FEEDFORWARD_CONTEXTS.get(case, 1),
                                 "work_load_list": FEEDFORWARD_WORK_LOADS.get(case), **seen}
    (out / "feedforward.json").write_text(json.dumps(record, indent=1) + "\n")
    np.savez_compressed(out / "feedforward.npz", **arrays)
