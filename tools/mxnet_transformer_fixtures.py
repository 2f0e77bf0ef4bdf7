"""The ``transformer`` fixture group (tools/mxnet_fixtures.py writes it with MXNet 1.9.1):
the operators MXNet's oneDNN backend and INT8 flow put into BERT-style graphs.

- ``<case>-symbol.json`` and ``<case>.npz`` (in_<i>, out_<i>): each of
  `_sg_mkldnn_selfatt_qk` / `_sg_mkldnn_selfatt_valatt` (float32, and quantized: int32,
  calibrated int8, float output), `_contrib_quantize_asym`,
  `_contrib_quantized_elemwise_mul` and `_contrib_quantized_embedding` on fixed inputs,
  as one-node symbols (the fused ones hold MXNet's own subgraph).
- ``encoder_fp32`` and ``encoder_int8`` checkpoints with ``<name>-io.npz`` (data, output):
  a one-layer self-attention block with BERT's interleaved qkv projection, partitioned by
  ``get_backend_symbol('MKLDNN')`` and quantized by ``quantize_model_mkldnn`` (naive).

Runs with MXNet's Python only (no minimx import).
"""
from __future__ import annotations

import json
from pathlib import Path

import mxnet as mx
import numpy as np

T, B, UNITS, HEADS = 5, 2, 8, 2


def _node_symbol(op: str, attrs: dict, n_inputs: int) -> mx.sym.Symbol:
    names = [f"x{i}" for i in range(n_inputs)]
    return getattr(mx.sym.contrib, op.removeprefix("_contrib_"))(
        *map(mx.sym.var, names), **attrs, name="node")


def _fused(interleaved: str, attrs: dict) -> mx.sym.Symbol:
    """The fused node MXNet makes of one interleaved product, with `attrs` (the
    quantized ones also take the ranges of their int8 inputs, after them)."""
    n_base = 1 if interleaved.endswith("qk") else 2
    sym = _node_symbol(interleaved, {"heads": HEADS}, n_base).get_backend_symbol("MKLDNN")
    graph = json.loads(sym.tojson())
    node = graph["nodes"][-1]
    node["attrs"].update({k: str(v) for k, v in attrs.items()})
    if attrs.get("quantized"):
        ranges = ["min_qkv", "max_qkv", "min_att", "max_att"][:2 * n_base]
        for name in ranges:
            graph["nodes"].insert(-1, {"op": "null", "name": name, "inputs": []})
            graph["arg_nodes"].append(len(graph["nodes"]) - 2)
        last = len(graph["nodes"]) - 1
        node["inputs"] = [[i, 0, 0] for i in range(last)]
        graph["heads"] = [[last, i, 0] for i in range(1 if attrs.get("enable_float_output") else 3)]
        graph["node_row_ptr"] = list(range(last + 1)) + [last + len(graph["heads"])]
    return mx.sym.load_json(json.dumps(graph))


def _cases(rng: np.random.RandomState) -> list[tuple[str, mx.sym.Symbol, list[np.ndarray]]]:
    def ints(dtype: str, *shape: int) -> np.ndarray:
        info = np.iinfo(dtype)
        return rng.randint(info.min, int(info.max) + 1, shape).astype(dtype)

    def rng_of(lo: float, hi: float) -> list[np.ndarray]:
        return [np.array([lo], "float32"), np.array([hi], "float32")]

    qkv = rng.normal(0, 1, (T, B, 3 * UNITS)).astype("float32")
    att = rng.uniform(0, 1, (B * HEADS, T, T)).astype("float32")
    qkv8, att8 = ints("int8", T, B, 3 * UNITS), ints("uint8", B * HEADS, T, T)
    qk, va = "_contrib_interleaved_matmul_selfatt_qk", "_contrib_interleaved_matmul_selfatt_valatt"
    q = {"quantized": True}
    calib = {"min_calib_range": -3.5, "max_calib_range": 4.25}
    mul = "_contrib_quantized_elemwise_mul"
    small = rng.randint(-40, 41, (3, 4, 5)).astype("int8")
    cases = [
        ("selfatt_qk_fp32", _fused(qk, {}), [qkv]),
        ("selfatt_qk_int32", _fused(qk, q), [qkv8, *rng_of(-2.0, 1.5)]),
        ("selfatt_qk_calib", _fused(qk, {**q, **calib}), [qkv8, *rng_of(-2.0, 1.5)]),
        ("selfatt_qk_float", _fused(qk, {**q, "enable_float_output": True}),
         [qkv8, *rng_of(-2.0, 1.5)]),
        ("selfatt_valatt_fp32", _fused(va, {}), [qkv, att]),
        ("selfatt_valatt_int32", _fused(va, q), [qkv8, att8, *rng_of(-2.0, 1.5),
                                                 *rng_of(0.0, 0.9)]),
        ("selfatt_valatt_calib", _fused(va, {**q, **calib}),
         [qkv8, att8, *rng_of(-2.0, 1.5), *rng_of(0.0, 0.9)]),
        ("selfatt_valatt_float", _fused(va, {**q, "enable_float_output": True}),
         [qkv8, att8, *rng_of(-2.0, 1.5), *rng_of(0.0, 0.9)]),
        ("quantize_asym_3d", _node_symbol("_contrib_quantize_asym", {}, 1), [qkv]),
        ("quantize_asym_3d_calib", _node_symbol("_contrib_quantize_asym",
                                                {"min_calib_range": -1.5, "max_calib_range": 2.0},
                                                1), [qkv]),
        ("elemwise_mul_int32", _node_symbol(mul, {}, 6),
         [ints("int8", 3, 4, 5), ints("int8", 3, 4, 5), *rng_of(-1.0, 2.0), *rng_of(-0.5, 0.25)]),
        ("elemwise_mul_calib", _node_symbol(mul, {"min_calib_range": -0.3,
                                                  "max_calib_range": 0.35}, 6),
         [small, small[::-1].copy(), *rng_of(-1.0, 2.0), *rng_of(-0.5, 0.25)]),
        ("elemwise_mul_float", _node_symbol(mul, {"enable_float_output": True}, 6),
         [ints("int8", 3, 4, 5), ints("int8", 3, 4, 5), *rng_of(-1.0, 2.0), *rng_of(-0.5, 0.25)]),
        ("embedding", _node_symbol("_contrib_quantized_embedding",
                                   {"input_dim": 6, "output_dim": 4}, 4),
         [np.array([[0, 5, 2], [7, -1, 3.7]], "float32"), ints("int8", 6, 4),
          *rng_of(-0.7, 0.9)]),
    ]
    return cases


def write_transformer_ops(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for case, sym, inputs in _cases(np.random.RandomState(21)):
        args = {n: mx.nd.array(x, dtype=x.dtype)
                for n, x in zip(sym.list_arguments(), inputs, strict=True)}
        outputs = sym.bind(mx.cpu(), args, grad_req="null").forward(is_train=False)
        sym.save(str(out / f"{case}-symbol.json"))
        np.savez(out / f"{case}.npz", **{f"in_{i}": x for i, x in enumerate(inputs)},
                 **{f"out_{i}": y.asnumpy() for i, y in enumerate(outputs)})


def build_encoder() -> mx.sym.Symbol:
    """Self-attention with BERT's interleaved qkv projection (GluonNLP's BERT layout,
    (T, B, units)), residual, LayerNorm, a GELU feed-forward: what MXNet's
    transformer fusion matches."""
    x = mx.sym.var("data")
    qkv = mx.sym.FullyConnected(x, num_hidden=3 * UNITS, flatten=False, name="qkv")
    att = mx.sym.contrib.interleaved_matmul_selfatt_qk(qkv, heads=HEADS, name="qk")
    att = mx.sym.softmax(att, axis=-1, name="att_softmax")
    ctx = mx.sym.contrib.interleaved_matmul_selfatt_valatt(qkv, att, heads=HEADS, name="valatt")
    proj = mx.sym.FullyConnected(ctx, num_hidden=UNITS, flatten=False, name="proj")
    h = mx.sym.LayerNorm(proj + x, name="ln0")
    ffn = mx.sym.FullyConnected(h, num_hidden=2 * UNITS, flatten=False, name="ffn1")
    ffn = mx.sym.LeakyReLU(ffn, act_type="gelu", name="gelu")
    ffn = mx.sym.FullyConnected(ffn, num_hidden=UNITS, flatten=False, name="ffn2")
    return mx.sym.LayerNorm(ffn + h, name="ln1")


def _run(sym: mx.sym.Symbol, args: dict, data: np.ndarray) -> np.ndarray:
    feeds = {**args, "data": mx.nd.array(data)}
    ex = sym.bind(mx.cpu(), {n: feeds[n] for n in sym.list_arguments()}, grad_req="null")
    return ex.forward(is_train=False)[0].asnumpy()


def write_encoder(out: Path) -> None:
    from mxnet.contrib.quantization import quantize_model_mkldnn  # needs MXNet's backends
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.RandomState(22)
    sym = build_encoder()
    shapes, _, _ = sym.infer_shape(data=(T, B, UNITS))
    args = {n: mx.nd.array(rng.normal(0, 0.4, s) if not n.endswith("gamma") else
                           rng.uniform(0.5, 1.5, s))
            for n, s in zip(sym.list_arguments(), shapes, strict=True) if n != "data"}
    data = rng.normal(0, 1, (T, B, UNITS)).astype("float32")
    calib = rng.normal(0, 1, (4 * T, B, UNITS)).astype("float32")
    fused = sym.get_backend_symbol("MKLDNN")
    mx.model.save_checkpoint(str(out / "encoder_fp32"), 0, fused, args, {})
    np.savez(out / "encoder_fp32-io.npz", data=data, output=_run(fused, args, data))
    # quantize_model_mkldnn's calibration iterator batches along axis 0: the sequence axis.
    qsym, qargs, _ = quantize_model_mkldnn(
        sym, args, {}, ctx=mx.cpu(), calib_mode="naive", quantized_dtype="auto",
        calib_data=mx.io.NDArrayIter({"data": calib}, batch_size=T), num_calib_examples=4 * T,
        label_names=None)
    mx.model.save_checkpoint(str(out / "encoder_int8"), 0, qsym, qargs, {})
    np.savez(out / "encoder_int8-io.npz", data=data, output=_run(qsym, qargs, data),
             fp32_output=_run(sym, args, data))


def write_transformer(out: Path) -> None:
    """The whole group (see the module docstring)."""
    write_transformer_ops(out)
    write_encoder(out)
