"""Running a symbol on the numpy path and partitioned by DNNL, and comparing.

fp32 tolerance: rtol 1e-4 and atol 1e-4 times the largest output magnitude
(oneDNN sums in other orders, and folds BatchNorm into the weights).
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pytest

import minimx as mx
from minimx import onednn
from minimx.backends.dnnl import batch_parts
from minimx.backends.dnnl.state import DnnlState
from minimx.graph import Graph

RTOL = 1e-4
ATOL = 1e-4

# INT8 nodes (and the INT8 LSTM) run in oneDNN only where its ISA has VNNI.
vnni = pytest.mark.skipif(not onednn.available() or not onednn.exact_int8(),
                          reason="oneDNN's ISA here has no VNNI: INT8 nodes stay on numpy")


def random_arrays(sym, shapes: Mapping[str, tuple], seed: int = 0) -> tuple[dict, dict]:
    """Arguments (normal) and auxiliary states (moving_var positive) for `sym`."""
    rng = np.random.default_rng(seed)
    arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
    args = {n: rng.standard_normal(s).astype(np.float32)
            for n, s in zip(sym.list_arguments(), arg_shapes, strict=True)}
    aux = {n: (rng.random(s) + 0.5).astype(np.float32) if n.endswith("var")
           else rng.standard_normal(s).astype(np.float32)
           for n, s in zip(sym.list_auxiliary_states(), aux_shapes, strict=True)}
    return args, aux


def bind(sym, args: dict, aux: dict):
    return sym.bind(mx.cpu(), {k: mx.nd.array(v, dtype=v.dtype) for k, v in args.items()},
                    grad_req="null", aux_states={k: mx.nd.array(v) for k, v in aux.items()})


def outputs(sym, args: dict, aux: dict) -> list[np.ndarray]:
    return [o.asnumpy() for o in bind(sym, args, aux).forward()]


def partitioned(sym, shapes: Mapping[str, tuple]):
    return mx.subgraph.partition(sym, "DNNL", shapes=dict(shapes))


def dnnl_nodes(sym) -> list:
    return [n for n in Graph(sym.outputs).nodes if n.op == "_sg_dnnl"]


def outer_ops(sym) -> list[str]:
    return [n.op for n in Graph(sym.outputs).nodes if not n.is_variable]


def inner_ops(node) -> list[str]:
    return [n.op for n in Graph(node.subgraphs[0].outputs).nodes if not n.is_variable]


def assert_close(actual: list, expected: list) -> None:
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected, strict=True):
        scale = max(1.0, float(np.abs(e).max(initial=0)))
        np.testing.assert_allclose(a, e, rtol=RTOL, atol=ATOL * scale)


def check(sym, shapes: Mapping[str, tuple], seed: int = 0):
    """Partition `sym`, compare both paths, and return the partitioned symbol."""
    part = partitioned(sym, shapes)
    args, aux = random_arrays(sym, shapes, seed)
    assert_close(outputs(part, args, aux), outputs(sym, args, aux))
    return part


def quantized_mkldnn(sym, shape: tuple[int, ...], **options) -> tuple:
    """`sym` with random weights (BatchNorm variances positive), quantized by
    `quantize_model_mkldnn` with naive calibration on two random batches in
    [0, 1) and `options`, and an input a little beyond the calibration data:
    (qsym, qargs, qaux, x)."""
    rng = np.random.default_rng(0)
    arg_shapes, _, aux_shapes = sym.infer_shape(data=shape)
    args = {n: mx.nd.array(rng.normal(0, 0.3, s).astype(np.float32))
            for n, s in zip(sym.list_arguments(), arg_shapes, strict=True) if n != "data"}
    aux = {n: mx.nd.array((rng.random(s) + 0.5 if n.endswith("var")
                           else rng.normal(0, 0.1, s)).astype(np.float32))
           for n, s in zip(sym.list_auxiliary_states(), aux_shapes, strict=True)}
    calib = [rng.uniform(0, 1, shape).astype(np.float32) for _ in range(2)]
    qsym, qargs, qaux = mx.contrib.quantization.quantize_model_mkldnn(
        sym, args, aux, calib_mode="naive", calib_data=calib, label_names=(), **options)
    return qsym, qargs, qaux, rng.uniform(0, 1.2, shape).astype(np.float32)


def forward_quantized(sym, qargs: dict, qaux: dict, x: np.ndarray) -> tuple:
    """The first output of `sym` bound to a quantized checkpoint's arrays (their
    dtypes kept) on `x`, and the DNNL subgraphs' states."""
    feeds = {**qargs, "data": mx.nd.array(x)}
    ex = sym.bind(mx.cpu(), {n: feeds[n] for n in sym.list_arguments()}, grad_req="null",
                  aux_states=qaux)
    out = ex.forward(is_train=False)[0].asnumpy()
    return out, [s for s in ex._runner.operator_states().values() if isinstance(s, DnnlState)]


def image_by_image(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make `batch_parts` split every batch it can into single images, whatever
    the layers' sizes and weights (and whatever MINIMX_DNNL_BATCH_PARTS says)."""
    monkeypatch.setattr(batch_parts, "PART_BYTES", 0)
    monkeypatch.setattr(batch_parts, "MIN_PIXELS", 0)
    monkeypatch.setattr(batch_parts, "ACTIVATION_TO_WEIGHT", 0)
    monkeypatch.delenv("MINIMX_DNNL_BATCH_PARTS", raising=False)


def convolution_kernels(state: DnnlState, own: str) -> dict[str, str]:
    """The kernel of each convolution step of `state`'s compiled plan, by owner
    node: oneDNN's (``conv[...]``) or minimx's kernel `own` (``dw8_conv[...]``)."""
    return {owner: name for owner, name in state.compiled.plan.step_names()
            if name.startswith(("conv", own))}
