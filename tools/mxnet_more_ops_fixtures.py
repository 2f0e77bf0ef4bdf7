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

The last operators added have their own seed: `multi_lars`, `_contrib_RROIAlign` and
`_contrib_hawkesll` (graded for lda, alpha and beta, the inputs MXNet differentiates;
the others' recorded gradients are zero) join `cases.*`; the multi-tensor AdamW and LAMB
updates and `_contrib_group_adagrad_update` run three steps with out= the weights, in
`optimizers.json` (operator, each step's attributes, the inputs written) and
`optimizers.npz` (`<case>:in_<i>` before, `:after_<i>` every input after); `images.npz`
holds OpenCV-encoded PNG and JPEG images (`<image>:bytes`) with MXNet's `_cvimdecode`
(`:decode_<flag>_<to_rgb>`) and `_cvimresize` (`:resize_<w>_<h>_<interp>`,
`:resize_float_7_4_2` of the float32 image) of them.

The four added last have a third seed: `_contrib_calibrate_entropy` (histograms of
seeded normal and relu values, and the all-zero, one-spike, one-level and fractional
edge cases) and `_cvcopyMakeBorder` (every border type, each dtype OpenCV takes, margins
wider than the image) join `cases.*`; `kl_sparse_reg.npz` holds three training steps of
a bound `IdentityAttachKLSparseReg` (`<case>:data_<step>`, `:head_`, `:out_`, `:grad_`
and `:moving_avg_` after the step; attributes in `kl_sparse_reg.json`); `zipfian.json`
statistics of `_sample_unique_zipfian` over many rows (mean and spread of the tries, the
counts of each row's first sample).

Runs with MXNet's Python only (no minimx import).
"""
from __future__ import annotations

import json
from pathlib import Path

import mxnet as mx
import numpy as np

# (case, operator, attributes, inputs, graded: True, or the inputs MXNet differentiates)
Case = tuple[str, str, dict, list[np.ndarray], bool | tuple[int, ...]]


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


def late_op_cases(rng: np.random.RandomState) -> list[Case]:
    """The last operators added (their own seed, so the earlier cases keep their values)."""
    def floats(*shape: int, low: float = -2.0, high: float = 2.0) -> np.ndarray:
        return rng.uniform(low, high, shape).astype("float32")

    sums = [np.array([4.0, 0.0, 9.0, 0.25], "float32"), np.array([1.0, 2.0, 0.0, 0.5], "float32")]
    return [
        ("multi_lars", "multi_lars", {"eta": "0.5", "eps": "1e-3", "rescale_grad": "2"},
         [floats(4, low=0.01, high=0.5), *sums, np.array([0.01, 0.1, 0.0, 0.2], "float32")],
         False),
        *_rroi_align_cases(floats),
        *_hawkesll_cases(rng, floats),
    ]


def _rroi_align_cases(floats) -> list[Case]:
    """Rotated boxes (batch, cx, cy, w, h, degrees), some leaving the map; no backward."""
    maps = floats(2, 3, 7, 8)
    rois = np.array([[0, 3.5, 3.0, 4.0, 2.5, 30.0], [1, 6.0, 1.0, 6.0, 3.0, -75.0],
                     [0, 1.0, 6.5, 0.5, 0.4, 180.0], [1, 12.0, 10.0, 9.0, 5.0, 45.0]], "float32")
    return [
        ("rroi_align", "_contrib_RROIAlign", {"pooled_size": "(2, 3)", "spatial_scale": "1"},
         [maps, rois], False),
        ("rroi_align_scaled_sampling", "_contrib_RROIAlign",
         {"pooled_size": "(3, 2)", "spatial_scale": "0.5", "sampling_ratio": "2"},
         [maps, rois * np.array([1, 2, 2, 2, 2, 1], "float32")], False),
    ]


def _hawkesll_cases(rng: np.random.RandomState, floats) -> list[Case]:
    """Graded: MXNet differentiates lda, alpha and beta only (the other inputs: zero)."""
    n, k, t = 3, 2, 5
    inputs = [floats(n, k, low=0.5, high=2.0), floats(k, low=0.1, high=0.5),
              floats(k, low=0.5, high=2.0), floats(n, k, low=0.0, high=1.0),
              floats(n, t, low=0.1, high=1.0), rng.randint(0, k, (n, t)).astype("int32"),
              np.array([5, 2, 0], "float32"), np.array([6.0, 3.0, 1.5], "float32")]
    return [("hawkesll", "_contrib_hawkesll", {}, inputs, (0, 1, 2))]


def final_op_cases(rng: np.random.RandomState) -> list[Case]:
    """The four added last (their own seed): _contrib_calibrate_entropy on histograms
    MXNet's calibration makes and on its edge cases, _cvcopyMakeBorder for every
    border type and dtype OpenCV takes."""
    return [*_calibrate_cases(rng), *_border_cases(rng)]


def _calibrate_cases(rng: np.random.RandomState) -> list[Case]:
    def histogram(values: np.ndarray, bins: int) -> list[np.ndarray]:
        th = float(np.abs(values).max())
        counts, edges = np.histogram(values, bins=bins, range=(-th, th))
        return [counts.astype("float32"), edges.astype("float32")]

    normal = rng.normal(0, 1, 5000)
    relu = np.maximum(rng.normal(0, 1, 3000), 0)
    edges = np.linspace(-1, 1, 12).astype("float32")
    spike = np.zeros(11, "float32")
    spike[5] = 7
    return [
        ("calibrate_symmetric", "_contrib_calibrate_entropy", {"num_quantized_bins": "31"},
         histogram(normal, 201), False),
        ("calibrate_default_levels", "_contrib_calibrate_entropy", {},
         histogram(normal, 801), False),
        ("calibrate_one_sided", "_contrib_calibrate_entropy", {"num_quantized_bins": "63"},
         histogram(relu, 301), False),
        ("calibrate_all_zero", "_contrib_calibrate_entropy", {"num_quantized_bins": "3"},
         [np.zeros(11, "float32"), edges], False),
        ("calibrate_one_spike", "_contrib_calibrate_entropy", {"num_quantized_bins": "3"},
         [spike, edges], False),
        ("calibrate_one_level", "_contrib_calibrate_entropy", {"num_quantized_bins": "1"},
         [np.arange(11, dtype="float32"), edges], False),
        # MXNet's loop keeps the window's counts as whole numbers for its levels
        ("calibrate_fractional", "_contrib_calibrate_entropy", {"num_quantized_bins": "3"},
         [np.arange(11, dtype="float32") + 0.6, edges], False),
    ]


def _border_cases(rng: np.random.RandomState) -> list[Case]:
    """Margins wider than the image too (OpenCV reflects and wraps again)."""
    colour = rng.randint(0, 256, (4, 5, 3)).astype("uint8")
    margins = {"top": "1", "bot": "6", "left": "7", "right": "2"}
    cases = [(f"border_type_{t}", "_cvcopyMakeBorder", {**margins, "type": str(t)}, [colour],
              False) for t in (0, 1, 2, 3, 4, 17, 20)]
    floats = rng.uniform(-3, 3, (3, 2, 4)).astype("float32")
    return cases + [
        ("border_values_uint8", "_cvcopyMakeBorder",
         {**margins, "values": "(300.0, -4.0, 2.5)"}, [colour], False),
        ("border_value_uint8", "_cvcopyMakeBorder", {**margins, "value": "77.5"}, [colour],
         False),
        ("border_values_float32", "_cvcopyMakeBorder",
         {**margins, "values": "(0.1, -2.5, 1e30, 7.0)"}, [floats], False),
        ("border_value_float64", "_cvcopyMakeBorder", {**margins, "value": "-1.25"},
         [floats.astype("float64")], False),
        ("border_values_int32", "_cvcopyMakeBorder",
         {**margins, "values": "(2.5, 3.5, -1e12, 1.4)"},
         [rng.randint(-1000, 1000, (3, 2, 4)).astype("int32")], False),
        ("border_reflect101_one_pixel", "_cvcopyMakeBorder",
         {"top": "2", "bot": "1", "left": "3", "right": "0", "type": "4"},
         [colour[:1, :1]], False),
        ("border_wrap_float32", "_cvcopyMakeBorder",
         {"top": "0", "bot": "5", "left": "3", "right": "9", "type": "3"}, [floats], False),
    ]


def kl_sparse_reg_runs(rng: np.random.RandomState) -> tuple[dict, dict]:
    """IdentityAttachKLSparseReg bound and run three training steps (forward, backward
    with seeded head gradients): each step's output, data gradient and moving_avg after.
    Sigmoid-like data in (0.05, 0.95); a 3-D case whose axes 1 and -1 agree (MXNet
    averages over every axis but the last)."""
    arrays, runs = {}, {}
    for name, shape, attrs in (
            ("defaults", (5, 4), {}),
            ("params", (6, 3), {"sparseness_target": "0.3", "penalty": "0.05",
                                "momentum": "0.6"}),
            ("three_axes", (2, 3, 3), {"penalty": "0.01"})):
        net = mx.sym.IdentityAttachKLSparseReg(mx.sym.var("data"), name="reg", **attrs)
        exe = net.simple_bind(mx.cpu(), data=shape)
        for step in range(3):
            data = rng.uniform(0.05, 0.95, shape).astype("float32")
            head = rng.uniform(-1, 1, shape).astype("float32")
            exe.arg_dict["data"][:] = data
            out = exe.forward(is_train=True)[0].asnumpy()
            exe.backward(mx.nd.array(head))
            arrays.update({f"{name}:data_{step}": data, f"{name}:head_{step}": head,
                           f"{name}:out_{step}": out,
                           f"{name}:grad_{step}": exe.grad_dict["data"].asnumpy(),
                           f"{name}:moving_avg_{step}": exe.aux_dict["reg_moving_avg"].asnumpy()})
        runs[name] = {"attrs": attrs, "steps": 3}
    return arrays, runs


def zipfian_statistics() -> dict:
    """Mean tries per row and the frequency of each first sample over many rows of
    MXNet's _sample_unique_zipfian: its distribution, not its stream."""
    mx.random.seed(3)
    stats = {}
    for range_max, shape in ((10, (20000, 5)), (1000, (4000, 50)), (8, (5000, 8))):
        samples, tries = mx.nd._internal._sample_unique_zipfian(range_max=range_max,
                                                                shape=shape)
        tries = tries.asnumpy()
        first = np.bincount(samples.asnumpy()[:, 0], minlength=range_max)[:10]
        stats[f"{range_max}_{shape[1]}"] = {
            "range_max": range_max, "shape": list(shape), "mean_tries": float(tries.mean()),
            "std_tries": float(tries.std()), "first_sample_counts": first.tolist()}
    return stats


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
    graded_inputs = range(len(nds)) if graded is True else graded or ()
    for i in graded_inputs:
        nds[i].attach_grad()
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
        arrays.update({f"{name}:grad_{i}": a.grad.asnumpy() if i in graded_inputs
                       else np.zeros(a.shape, a.dtype) for i, a in enumerate(nds)})
    return arrays, {"op": op, "attrs": attrs, "graded": bool(graded)}


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


# (case, operator, the attributes of each step, inputs, the inputs the outputs overwrite)
Run = tuple[str, str, list[dict], list[np.ndarray], list[int]]


def optimizer_runs(rng: np.random.RandomState) -> list[Run]:
    """Multi-tensor updates run for three steps with out= the weights, the states
    updated in place, as MXNet's optimizers call them."""
    def floats(*shape: int, low: float = -1.0, high: float = 1.0) -> np.ndarray:
        return rng.uniform(low, high, shape).astype("float32")

    def weight_groups(mixed: bool) -> list[np.ndarray]:
        arrays = []
        for shape in ((3, 4), (5,)):
            w = floats(*shape)
            arrays += [w.astype("float16") if mixed else w,
                       floats(*shape, low=-2, high=2).astype("float16" if mixed else "float32"),
                       floats(*shape, low=-0.1, high=0.1), floats(*shape, low=0, high=0.1),
                       *[w] * mixed]
        return arrays

    adamw = {"num_weights": "2", "lrs": "(0.1, 0.05)", "wds": "(0.01, 0.0)",
             "etas": "(1.0, 0.5)", "clip_gradient": "0.8"}
    lamb = {"num_tensors": "2", "learning_rates": "(0.1, 0.05)", "wds": "(0.01, 0.0)",
            "rescale_grad": "0.5", "lower_bound": "0.1", "upper_bound": "2.0"}
    lamb_steps = [{**lamb, "step_count": f"({t}, {t + 2})"} for t in (1, 2, 3)]
    rescale = np.array([0.5], "float32")
    return [
        ("multi_adamw", "_multi_adamw_update", [adamw] * 3, weight_groups(False) + [rescale],
         [0, 4]),
        ("multi_mp_adamw", "_multi_mp_adamw_update", [adamw] * 3,
         weight_groups(True) + [rescale], [0, 5]),
        ("multi_lamb", "_multi_lamb_update", lamb_steps, weight_groups(False), [0, 4]),
        ("multi_lamb_no_bias_correction", "_multi_lamb_update",
         [{**step, "bias_correction": "False", "clip_gradient": "0.3"} for step in lamb_steps],
         weight_groups(False), [0, 4]),
        ("multi_mp_lamb", "_multi_mp_lamb_update", lamb_steps, weight_groups(True), [0, 5]),
        ("group_adagrad", "_contrib_group_adagrad_update",
         [{"lr": "0.1", "rescale_grad": "0.5", "clip_gradient": "0.6"}] * 3,
         [floats(4, 3), floats(4, 3, low=-2, high=2), floats(4, 1, low=0, high=1)], [0]),
    ]


def _run_steps(run: Run) -> tuple[dict, dict]:
    name, op, steps, inputs, written = run
    nds = [mx.nd.array(a, dtype=a.dtype) for a in inputs]
    if op == "_contrib_group_adagrad_update":   # MXNet's CPU kernel: row_sparse grad only
        nds[1] = nds[1].tostype("row_sparse")
    for attrs in steps:
        _nd_function(op)(*nds, **attrs, out=[nds[i] for i in written])
    arrays = {f"{name}:in_{i}": a for i, a in enumerate(inputs)}
    arrays.update({f"{name}:after_{i}": a.asnumpy() for i, a in enumerate(nds)})
    return arrays, {"op": op, "steps": steps, "written": written}


def _png_and_jpeg(rng: np.random.RandomState) -> dict[str, bytes]:
    """Small images encoded by OpenCV (MXNet's own codec): colour PNG and JPEG, grey PNG."""
    import cv2  # MXNet's venv has OpenCV; the images are made by the codec MXNet uses
    colour = rng.randint(0, 256, (6, 9, 3)).astype("uint8")
    colour[:, :4] = colour[:, :4] // 2 + 60   # a smoother patch for the JPEG
    grey = rng.randint(0, 256, (5, 7)).astype("uint8")
    return {"colour_png": cv2.imencode(".png", colour)[1].tobytes(),
            "colour_jpeg": cv2.imencode(".jpg", colour, [cv2.IMWRITE_JPEG_QUALITY, 90])[1]
            .tobytes(),
            "grey_png": cv2.imencode(".png", grey)[1].tobytes()}


def image_arrays(rng: np.random.RandomState) -> dict[str, np.ndarray]:
    """`<image>:bytes`, its `_cvimdecode` with each flag / to_rgb, and `_cvimresize`s of
    the RGB decode (uint8, and float32 with bicubic)."""
    arrays = {}
    for name, data in _png_and_jpeg(rng).items():
        buf = mx.nd.array(np.frombuffer(data, np.uint8), dtype="uint8")
        arrays[f"{name}:bytes"] = np.frombuffer(data, np.uint8)
        for flag, to_rgb in ((1, True), (1, False), (0, True)):
            arrays[f"{name}:decode_{flag}_{int(to_rgb)}"] = mx.nd._internal._cvimdecode(
                buf, flag=flag, to_rgb=to_rgb).asnumpy()
        rgb = mx.nd._internal._cvimdecode(buf)
        for w, h, interp in ((4, 3, 1), (13, 8, 0), (5, 11, 3)):
            arrays[f"{name}:resize_{w}_{h}_{interp}"] = mx.nd._internal._cvimresize(
                rgb, w=w, h=h, interp=interp).asnumpy()
        arrays[f"{name}:resize_float_7_4_2"] = mx.nd._internal._cvimresize(
            rgb.astype("float32"), w=7, h=4, interp=2).asnumpy()
    return arrays


def write_gap_ops(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.RandomState(21)
    arrays, cases = {}, {}
    late = np.random.RandomState(22)   # for what came later: the earlier values stay
    final = np.random.RandomState(23)   # and for the last four, likewise
    for case_rng, case in [(rng, c) for c in gap_op_cases(rng)] + [
            (late, c) for c in late_op_cases(late)] + [
            (final, c) for c in final_op_cases(final)]:
        case_arrays, cases[case[0]] = _run_case(case_rng, case)
        arrays.update(case_arrays)
    np.savez_compressed(out / "cases.npz", **arrays)
    (out / "cases.json").write_text(json.dumps(cases, indent=1, sort_keys=True) + "\n")
    arrays, runs = {}, {}
    for run in optimizer_runs(late):
        run_arrays, runs[run[0]] = _run_steps(run)
        arrays.update(run_arrays)
    np.savez_compressed(out / "optimizers.npz", **arrays)
    (out / "optimizers.json").write_text(json.dumps(runs, indent=1, sort_keys=True) + "\n")
    np.savez_compressed(out / "images.npz", **image_arrays(late))
    arrays, runs = kl_sparse_reg_runs(final)
    np.savez_compressed(out / "kl_sparse_reg.npz", **arrays)
    (out / "kl_sparse_reg.json").write_text(json.dumps(runs, indent=1, sort_keys=True) + "\n")
    (out / "zipfian.json").write_text(json.dumps(zipfian_statistics(), indent=1,
                                                 sort_keys=True) + "\n")
    net, values, outputs = _legacy_net(rng)
    (out / "legacy_net.json").write_text(net.tojson() + "\n")
    np.savez_compressed(out / "legacy_net.npz", output=outputs[0],
                        **{f"in:{k}": v for k, v in values.items()})
