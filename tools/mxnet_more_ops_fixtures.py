"""The ``gap_ops`` fixture group (tools/mxnet_fixtures.py runs it with MXNet 1.9.1): the
dense operators of MXNet's registry minimx added late - creation (``_linspace``,
``_eye``), splitting (``_split_v2``), slice assignment, ``_histogram``, the
straight-through and gradient-shaping contrib operators, legacy indexing
(``_onehot_encode``, ``fill_element_0index``), the ``preloaded_multi_*sgd*`` updates
(their outputs: the new weights) and the legacy layers
``Convolution_v1`` / ``Pooling_v1`` / ``BatchNorm_v1``.

Each case runs one operator through ``mx.nd`` (recorded, not in training mode) on
seeded inputs. `cases.npz` holds `<case>:in_<i>`, `:out_<i>` and, for a graded case,
`:head_<i>` (seeded head gradients) and `:grad_<i>` (the input gradients);
`cases.json` the operator, its attributes and whether it is graded - the layout of
the tensor_ops group, so tests/ops/test_mxnet_tensor_ops.py reads it too.
`legacy_net.json` is a symbol chaining the three legacy layers, with its inputs
and outputs in `legacy_net.npz`.

Runs with MXNet's Python only (no minimx import).
"""
from __future__ import annotations

import json
from pathlib import Path

import mxnet as mx
import numpy as np

# (case, operator, attributes, inputs, graded)
Case = tuple[str, str, dict, list[np.ndarray], bool]


def gap_op_cases(rng: np.random.RandomState) -> list[Case]:
    def floats(*shape: int, low: float = -2.0, high: float = 2.0) -> np.ndarray:
        return rng.uniform(low, high, shape).astype("float32")

    x = floats(3, 4, 5)
    image = floats(2, 3, 6, 5)
    rows = floats(4, 5)
    rows[2] = 0   # MXNet implements _square_sum for row_sparse input only: a missing row
    steps = np.array([-1.5, -0.5, 0.5, 1.5, 2.5, -2.49, 0.0, 3.7], "float32")  # rounding ties
    return [
        ("make_loss", "make_loss", {}, [x], True),
        ("split_v2_indices", "_split_v2", {"indices": "(0, 1, 3)", "axis": "1"}, [x], True),
        ("split_v2_sections_squeeze", "_split_v2",
         {"indices": "()", "sections": "3", "axis": "0", "squeeze_axis": "True"}, [x], True),
        ("split_v2_negative_axis", "_split_v2", {"indices": "(0, 2)", "axis": "-1"}, [x], True),
        ("linspace", "_linspace", {"start": "-1", "stop": "2", "num": "7"}, [], False),
        ("linspace_open_int", "_linspace",
         {"start": "0", "stop": "10", "num": "4", "endpoint": "False", "dtype": "int32"}, [],
         False),
        ("eye", "_eye", {"N": "3"}, [], False),
        ("eye_rect_k", "_eye", {"N": "3", "M": "5", "k": "2", "dtype": "int64"}, [], False),
        ("eye_negative_k", "_eye", {"N": "4", "M": "3", "k": "-1"}, [], False),
        ("histogram_count", "_histogram", {"bin_cnt": "4", "range": "(-1, 1.5)"},
         [floats(20)], False),
        ("histogram_bins", "_histogram", {},
         [floats(5, 6), np.array([-2.0, -0.5, 0.0, 0.25, 2.0], "float32")], False),
        ("index_array", "_contrib_index_array", {}, [x], False),
        ("index_array_axes", "_contrib_index_array", {"axes": "(2, 0)"}, [x], False),
        ("quadratic", "_contrib_quadratic", {"a": "0.5", "b": "-2", "c": "1.25"}, [x], True),
        ("allclose_false", "_contrib_allclose", {}, [x, x + 1e-3], False),
        ("allclose_true", "_contrib_allclose", {"rtol": "1e-3", "atol": "1e-3"},
         [x, x + 1e-4], False),
        ("gradientmultiplier", "_contrib_gradientmultiplier", {"scalar": "-0.5"}, [x], True),
        ("round_ste", "_contrib_round_ste", {}, [steps], True),
        ("sign_ste", "_contrib_sign_ste", {}, [steps], True),
        ("identity_with_attr_like_rhs", "_identity_with_attr_like_rhs", {}, [x, floats(3, 4, 5)],
         True),
        ("grad_add", "_grad_add", {}, [x, floats(3, 4, 5)], False),
        ("square_sum", "_square_sum", {"axis": "1"}, [rows], True),
        ("square_sum_axis0_keepdims", "_square_sum", {"axis": "0", "keepdims": "True"}, [rows],
         True),
        ("slice_assign", "_slice_assign", {"begin": "(0, 1)", "end": "(None, 4)",
                                           "step": "(2, 2)"}, [x, floats(2, 2, 5)], False),
        ("slice_assign_negative", "_slice_assign", {"begin": "(-1, None, 3)", "end": "(0, 2, 0)",
                                                    "step": "(-1, 1, -2)"},
         [x, floats(2, 2, 2)], False),
        ("slice_assign_scalar", "_slice_assign_scalar",
         {"scalar": "7.5", "begin": "(1,)", "end": "(3,)"}, [x], False),
        ("crop_assign", "_crop_assign", {"begin": "(1, 0, 2)", "end": "(2, 4, 5)"},
         [x, floats(1, 4, 3)], False),
        ("crop_assign_scalar", "_crop_assign_scalar",
         {"scalar": "-3", "begin": "(0, 2)", "end": "(2, 3)"}, [x], False),
        ("onehot_encode", "_onehot_encode", {},
         [np.array([2, 0, 4, 1], "float32"), np.zeros((4, 5), "float32")], False),
        ("choose_element_0index", "choose_element_0index", {},
         [floats(4, 5), np.array([0, 4, 2, 9], "float32")], True),
        ("fill_element_0index", "fill_element_0index", {},
         [floats(4, 5), floats(4), np.array([3, 0, 4, 1], "float32")], False),
        *_preloaded_sgd_cases(floats),
        ("convolution_v1", "Convolution_v1",
         {"kernel": "(3, 3)", "num_filter": "4", "stride": "(2, 1)", "pad": "(1, 0)"},
         [image, floats(4, 3, 3, 3), floats(4)], True),
        ("convolution_v1_group_nobias", "Convolution_v1",
         {"kernel": "(2, 2)", "num_filter": "6", "num_group": "3", "no_bias": "True",
          "dilate": "(2, 1)"}, [image, floats(6, 1, 2, 2)], True),
        ("pooling_v1_max", "Pooling_v1", {"kernel": "(2, 2)", "stride": "(2, 2)"}, [image],
         True),
        ("pooling_v1_avg_full", "Pooling_v1",
         {"kernel": "(3, 2)", "stride": "(2, 2)", "pool_type": "avg", "pad": "(1, 0)",
          "pooling_convention": "full"}, [image], True),
        ("pooling_v1_global_sum", "Pooling_v1", {"global_pool": "True", "pool_type": "sum"},
         [image], True),
        # Inference (bound, is_train=False), outputs only: as the tests run the kernel.
        ("batchnorm_v1", "BatchNorm_v1", {"eps": "0.01", "fix_gamma": "False"},
         [image, floats(3), floats(3), floats(3), floats(3, low=0.5, high=2.0)], False),
        ("batchnorm_v1_mean_var", "BatchNorm_v1", {"output_mean_var": "True"},
         [image, floats(3), floats(3), floats(3), floats(3, low=0.5, high=2.0)], False),
    ]


def _preloaded_sgd_cases(floats) -> list[Case]:
    """Two weights, their learning rates and weight decays given as the last two inputs."""
    rates = [np.array([0.1, 0.2], "float32"), np.array([0.05, 0.0], "float32")]
    common = {"num_weights": "2", "rescale_grad": "0.5", "clip_gradient": "0.6"}
    w, v = floats(3, 4, low=-1, high=1), floats(3, 4, low=-1, high=1)
    w16, v16 = w.astype("float16"), v.astype("float16")
    g, h, m, n = floats(3, 4), floats(3, 4), floats(3, 4), floats(3, 4)
    return [
        ("preloaded_multi_sgd", "preloaded_multi_sgd_update", common, [w, g, v, h, *rates],
         False),
        ("preloaded_multi_sgd_mom", "preloaded_multi_sgd_mom_update",
         {**common, "momentum": "0.9"}, [w, g, m, v, h, n, *rates], False),
        ("preloaded_multi_mp_sgd", "preloaded_multi_mp_sgd_update", common,
         [w16, g.astype("float16"), w, v16, h.astype("float16"), v, *rates], False),
        ("preloaded_multi_mp_sgd_mom", "preloaded_multi_mp_sgd_mom_update",
         {**common, "momentum": "0.9"},
         [w16, g.astype("float16"), m, w, v16, h.astype("float16"), n, v, *rates], False),
    ]


def _nd_function(op: str):
    short = op.removeprefix("_contrib_")
    for space in (mx.nd.contrib, mx.nd, mx.nd._internal) if short != op else (
            mx.nd, mx.nd._internal):
        fn = getattr(space, short, None)
        if fn is not None:
            return fn
    raise KeyError(op)


def _run_case(rng: np.random.RandomState, case: Case) -> tuple[dict, dict]:
    name, op, attrs, inputs, graded = case
    if op == "BatchNorm_v1":   # mx.nd.BatchNorm_v1 takes no moving statistics: bind it
        return _run_batchnorm_v1(case)
    nds = [mx.nd.array(a, dtype=a.dtype) for a in inputs]
    if op == "_square_sum":  # MXNet has no dense kernel; minimx's dense one matches this
        nds = [a.tostype("row_sparse") for a in nds]
    for a in nds:
        a.attach_grad()
    if op.startswith("preloaded_"):   # MXNet infers no output dtype for these: give out=
        stride = (len(nds) - 2) // int(attrs["num_weights"])
        attrs = {**attrs, "out": [mx.nd.zeros(w.shape, dtype=w.dtype) for w in nds[:-2:stride]]}
    with mx.autograd.record(train_mode=False):
        outputs = _nd_function(op)(*nds, **attrs)
    attrs = {k: v for k, v in attrs.items() if k != "out"}
    outputs = outputs if isinstance(outputs, list) else [outputs]
    arrays = {f"{name}:in_{i}": a for i, a in enumerate(inputs)}
    arrays.update({f"{name}:out_{i}": y.asnumpy() for i, y in enumerate(outputs)})
    if graded:
        heads = [rng.uniform(-1, 1, y.shape).astype(y.dtype) for y in outputs]
        mx.autograd.backward(outputs, [mx.nd.array(h, dtype=h.dtype) for h in heads])
        arrays.update({f"{name}:head_{i}": h for i, h in enumerate(heads)})
        arrays.update({f"{name}:grad_{i}": a.grad.asnumpy() for i, a in enumerate(nds)})
    return arrays, {"op": op, "attrs": attrs, "graded": graded}


def _run_batchnorm_v1(case: Case) -> tuple[dict, dict]:
    name, op, attrs, inputs, graded = case
    net = mx.sym.BatchNorm_v1(mx.sym.var("data"), **attrs)
    names = net.list_arguments() + net.list_auxiliary_states()
    values = dict(zip(names, map(mx.nd.array, inputs), strict=True))
    exe = net.bind(mx.cpu(), {k: values[k] for k in net.list_arguments()},
                   aux_states={k: values[k] for k in net.list_auxiliary_states()})
    outputs = exe.forward(is_train=False)
    arrays = {f"{name}:in_{i}": a for i, a in enumerate(inputs)}
    arrays.update({f"{name}:out_{i}": y.asnumpy() for i, y in enumerate(outputs)})
    return arrays, {"op": op, "attrs": attrs, "graded": graded}


def _legacy_net(rng: np.random.RandomState) -> tuple[mx.sym.Symbol, dict, list]:
    """Convolution_v1 -> BatchNorm_v1 -> Activation -> Pooling_v1, run for inference."""
    data = mx.sym.var("data")
    net = mx.sym.Convolution_v1(data, kernel=(3, 3), num_filter=4, pad=(1, 1), name="conv")
    net = mx.sym.BatchNorm_v1(net, fix_gamma=False, name="bn")
    net = mx.sym.Activation(net, act_type="relu", name="relu")
    net = mx.sym.Pooling_v1(net, kernel=(2, 2), stride=(2, 2), pool_type="avg", name="pool")
    arg_shapes, _, aux_shapes = net.infer_shape(data=(2, 3, 6, 6))
    shapes = dict(zip(net.list_arguments() + net.list_auxiliary_states(),
                      arg_shapes + aux_shapes, strict=True))
    values = {name: rng.uniform(0.5 if "var" in name else -1, 1.5, shape).astype("float32")
              for name, shape in shapes.items()}
    exe = net.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in values.items()
                              if k in net.list_arguments()},
                   aux_states={k: mx.nd.array(values[k]) for k in net.list_auxiliary_states()})
    return net, values, [y.asnumpy() for y in exe.forward(is_train=False)]


def write_gap_ops(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.RandomState(21)
    arrays, cases = {}, {}
    for case in gap_op_cases(rng):
        case_arrays, cases[case[0]] = _run_case(rng, case)
        arrays.update(case_arrays)
    np.savez_compressed(out / "cases.npz", **arrays)
    (out / "cases.json").write_text(json.dumps(cases, indent=1, sort_keys=True) + "\n")
    net, values, outputs = _legacy_net(rng)
    (out / "legacy_net.json").write_text(net.tojson() + "\n")
    np.savez_compressed(out / "legacy_net.npz", output=outputs[0],
                        **{f"in:{k}": v for k, v in values.items()})
