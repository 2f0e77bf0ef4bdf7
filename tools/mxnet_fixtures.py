"""Write MXNet 1.9.1 oracle fixtures for minimx's tests, and check minimx-written .params.

Runs with MXNet's own Python, never with minimx (it must not import minimx: the
fixtures are what minimx is checked against). Create that environment once:

    python3.11 -m venv venv-mxnet
    venv-mxnet/bin/pip install mxnet==1.9.1 'numpy<1.24' 'scipy<1.12' Pillow
    # the families group also needs (pins keep numpy < 1.24):
    venv-mxnet/bin/pip install gluoncv==0.10.5 gluonnlp==0.10.0 'matplotlib<3.8' \
        'pandas<2.1' 'opencv-python<4.9'

Then, from the repository root:

    venv-mxnet/bin/python tools/mxnet_fixtures.py --out tests/fixtures
    venv-mxnet/bin/python tools/mxnet_fixtures.py --out tests/fixtures --only params,handnet
    venv-mxnet/bin/python tools/mxnet_fixtures.py --check-minimx-params DIR

``--out`` writes these groups (``--only`` picks some) and regenerates
``tests/fixtures/README.md`` with the list of files and their sizes:

- ``params``: NDArray list files of every dtype MXNet 1.9.1 can save, as lists and dicts,
  plus sparse, numpy-semantics (V3) and bfloat16 files, each beside a ``.npz`` with the
  same arrays.
- ``models``: small model-zoo nets with seeded weights (``net.export``), an input and
  MXNet's output.
- ``structure``: every model-zoo net's exported symbol JSON (gzipped, no weights) and an
  info JSON with its argument / auxiliary names and inferred shapes.
- ``handnet``: a hand-built symbolic net covering the core layers: checkpoint, inference
  and training outputs, and gradients of one backward pass.
- ``legacy``: a hand-written MXNet 0.8-style JSON and what MXNet 1.9.1 makes of it.
- ``quantization``: MXNet's entropy thresholds of fixed arrays and its naive and
  entropy calibration ranges of a small conv-relu-fc net over three batches.
- ``more_ops``: like ``tensor_ops``, for the operators added after issue 15 (softmin,
  GroupNorm, gather_nd, the linalg family, Crop ...).
- ``extra_ops``: like ``more_ops``, for CTCLoss, im2col / col2im and the linalg gelqf,
  syevd, extracttrian and maketrian.
- ``model_ops``: issue 15's model operators (boxes, ROI, resizing, sequences, attention,
  RNN), the spatial transformer operators and Correlation on fixed inputs, with MXNet's
  outputs and some input gradients.
- ``io``: ``mx.io.NDArrayIter`` cases (inputs, arguments, steps) and the batches
  MXNet gives, for every ``last_batch_handle`` and across resets.
- ``quantization_ops``: each quantization operator on fixed inputs, with MXNet's outputs.
- ``quantized_net``: a small conv net quantized by ``quantize_model_mkldnn`` (naive and no
  calibration), an input and MXNet's output.
- ``families``: GluonCV / GluonNLP models beyond classification (GluonCV 0.10.5 and
  GluonNLP 0.10.0 installed beside MXNet) with weights from ``tools/seeded_weights.py``,
  their inputs and MXNet's outputs, and the inputs of their NMS.
- ``families_int8``: a few ``families`` models (SSD, YOLOv3, PSPNet, simple pose) quantized
  by ``quantize_model_mkldnn`` (naive, GluonCV's exclusions) and two converted to bfloat16 by
  ``amp.convert_model``, with MXNet's outputs (after ``families``, whose files it reads).
- ``amp``: ``mx.contrib.amp.convert_symbol`` (bfloat16) of the zoo's ResNet-18 v1 and of a
  hand net, with several arguments, and ``convert_model`` of ``resnet18_v1_narrow`` with its
  bfloat16 parameters and MXNet's bfloat16 output.
- ``training``: initializer statistics, optimizer updates on fixed gradients, learning-rate
  schedules, lr/wd multipliers, metrics on fixed predictions, and a small Module.fit.
- ``quantized_plain``: the same float net quantized by plain ``quantize_model`` (after
  ``quantized_net``, whose files it reads).
- ``quantize_graph``: MXNet's two-step ``quantize_graph`` / ``calib_graph`` flow on the
  ``quantization`` and ``quantized_net`` groups' nets (after both, whose files it reads).
- ``viz``: ``mx.viz.print_summary``'s text and ``mx.viz.plot_network``'s DOT source for
  the handnet and three zoo nets.
- ``int8_agreement``: the ``models`` nets quantized by ``quantize_model_mkldnn`` (naive, first
  convolution excluded), MXNet's INT8 and fp32 outputs on a fixed set of images, and how
  well they agree (``benchmarks/int8_agreement.py`` measures minimx the same way).
- ``tensor_ops``: issue 15's tensor operators, cumsum, moments and erfinv on fixed inputs
  (ties, clamped slices, out-of-range indices, erfinv's edges), with MXNet's outputs and
  input gradients.
- ``onnx``: the structure of the ONNX files MXNet's ``mx.onnx.export_model`` writes for a
  few zoo nets (needs ``onnx`` installed beside MXNet).
- ``loss_ops``: the loss heads (regression outputs, SVMOutput, MakeLoss) on fixed inputs,
  with MXNet's outputs and the input gradients they send back.
- ``custom_op``: a small net of two Python custom operators (``mx.operator``): symbol,
  arguments, MXNet's output and gradients, and one ``mx.nd.Custom`` call.
- ``test_utils`` and ``feedforward`` (``tools/mxnet_legacy_fixtures.py``): what
  ``mx.test_utils`` decides on fixed inputs, and a short deterministic
  ``mx.model.FeedForward`` run.
- ``detection_ops``: like ``model_ops``, the contrib operators of MXNet's detection examples
  (SSD's MultiBox*, Faster R-CNN's Proposal, R-FCN's PSROIPooling, SyncBatchNorm,
  BatchNormWithReLU), cases in ``tools/mxnet_detection_fixtures.py``.
- ``deformable_ops``: like ``detection_ops``, Deformable ConvNets' convolutions (offsets
  outside the image, groups and deformable groups) and PSROI pooling, cases in
  ``tools/mxnet_deformable_fixtures.py``.
- ``optimizer_ops``: the optimizer update operators over three steps
  (``tools/mxnet_optimizer_op_fixtures.py``).
- ``random_ops``: like ``more_ops``, for the densities ``_random_pdf_*`` and the modulo family
  (``tools/mxnet_random_fixtures.py``); the samplers' values cannot be MXNet's.
- ``rnn_cells``: ``mx.rnn`` cells unrolled (argument names and shapes, node names, outputs
  on seeded inputs) and a small LSTM language model trained by ``mx.mod.BucketingModule``
  (``tools/mxnet_rnn_fixtures.py``).
- ``transformer``: the operators MXNet's oneDNN backend and INT8 flow put into BERT-style
  graphs (``_sg_mkldnn_selfatt_*``, ``_contrib_quantize_asym``, ``_contrib_quantized_elemwise_mul``,
  ``_contrib_quantized_embedding``) on fixed inputs, and a self-attention encoder partitioned
  and quantized by MXNet (``tools/mxnet_transformer_fixtures.py``).
- ``int8_rnn``: MXNet's INT8 LSTM ``_contrib_quantized_rnn`` run imperatively on seeded
  uint8 data (``tools/mxnet_int8_rnn_fixtures.py``).
- ``recordio``: RecordIO files written by ``mx.recordio`` (raw and packed records, split
  ones included), and ``mx.io.MNISTIter`` / ``mx.io.ImageRecordIter`` batches on small
  synthetic idx and PNG / JPEG record files (``tools/mxnet_recordio_fixtures.py``; needs
  ``pillow`` installed beside MXNet to encode the images).
- ``image``: ``mx.image`` on small synthetic PNG / JPEG files: imdecode, imresize, crops,
  color_normalize, ``CreateAugmenter`` pipelines without randomness and ``ImageIter`` batches
  from a .rec and an image list (``tools/mxnet_image_fixtures.py``; needs ``pillow``).
- ``image_ops``: the ``_image_*`` operators (``mx.nd.image``) on seeded uint8 and float32
  images and batches, with gradients, a Gluon transforms graph, and MXNet's errors for bad
  input (``tools/mxnet_image_op_fixtures.py``).
- ``imagedet``: MXNet's detection data pipeline on small synthetic PNG records: ``imrotate``,
  the detection augmenters under a seeded ``random``, ``ImageDetIter`` and
  ``ImageDetRecordIter`` batches (``tools/mxnet_imagedet_fixtures.py``; needs ``pillow``).
- ``gluon``: ``mx.gluon.SymbolBlock`` on two exported HybridBlocks (outputs, MKLDNN
  partitioning, parameter writes, casts, parameters, messages), and MXNet's run of the
  files minimx's ``export`` writes (``tools/mxnet_gluon_fixtures.py``; runs minimx in a
  subprocess: ``MINIMX_PYTHON``, default ``python3``).
- ``module_functions``: MXNet's module-level Python functions (``mx.nd.add`` ...
  ``logical_xor``, ``concatenate``, ``moveaxis``, ``onehot_encode``, ``load_frombuffer``,
  ``from_numpy``, ``cast_storage``; ``mx.sym.eye`` / ``linspace`` / ``hypot``; the contrib
  ``isinf`` / ``isfinite`` / ``isnan`` / ``rand_zipfian``; ``mx.runtime``, ``mx.engine``,
  ``mx.util``) on fixed inputs, and their errors (``tools/mxnet_module_functions_fixtures.py``).

``.npz`` convention (shared with ``--check-minimx-params``): a list file's arrays are
``arr_0, arr_1, ...`` (``np.savez(path, *arrays)``); a dict file's are keyed by name, in
file order.

``--check-minimx-params DIR`` loads every ``DIR/*.params`` with ``mx.nd.load`` and compares
it with the ``.npz`` of the same stem (kind, names and order, dtype, shape, exact bytes),
printing OK or FAIL per file; the exit status is 1 if any file fails.
"""
from __future__ import annotations

import argparse
import contextlib
import gzip
import hashlib
import io
import json
import os
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from functools import partial
from pathlib import Path

# Before mxnet is imported: results must come from the plain operators, unpartitioned.
os.environ["MXNET_SUBGRAPH_BACKEND"] = "NONE"

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402
from custom_op_defs import build_customnet  # noqa: E402  (tools/, beside this script)
from mxnet.contrib import amp  # noqa: E402
from mxnet.gluon.model_zoo import vision  # noqa: E402
from mxnet.gluon.model_zoo.vision.densenet import DenseNet  # noqa: E402
from mxnet.gluon.model_zoo.vision.resnet import BasicBlockV1, BottleneckV2, ResNetV1, ResNetV2  # noqa: E402
from mxnet_autograd_fixtures import write_autograd  # noqa: E402  (tools/)
from mxnet_control_flow_fixtures import write_control_flow  # noqa: E402  (tools/)
from mxnet_deformable_fixtures import deformable_op_cases  # noqa: E402  (tools/, beside this script)
from mxnet_detection_fixtures import detection_op_cases  # noqa: E402  (tools/, beside this script)
from mxnet_gluon_data_fixtures import write_gluon_data  # noqa: E402  (tools/)
from mxnet_gluon_fixtures import write_gluon  # noqa: E402  (tools/)
from mxnet_image_fixtures import write_image  # noqa: E402  (tools/, beside this script)
from mxnet_image_op_fixtures import write_image_ops  # noqa: E402  (tools/)
from mxnet_imagedet_fixtures import write_imagedet  # noqa: E402  (tools/, beside this script)
from mxnet_int8_rnn_fixtures import write_int8_rnn  # noqa: E402  (tools/, beside this script)
from mxnet_legacy_fixtures import write_feedforward, write_test_utils  # noqa: E402  (tools/)
from mxnet_module_functions_fixtures import write_module_functions  # noqa: E402  (tools/)
from mxnet_monitor_fixtures import write_monitor  # noqa: E402  (tools/)
from mxnet_more_ops_fixtures import write_gap_ops  # noqa: E402  (tools/, beside this script)
from mxnet_multi_context_fixtures import write_multi_context  # noqa: E402  (tools/)
from mxnet_optimizer_op_fixtures import write_optimizer_ops  # noqa: E402  (tools/)
from mxnet_quantize_net_fixtures import write_quantize_net  # noqa: E402  (tools/)
from mxnet_random_fixtures import random_op_cases  # noqa: E402  (tools/, beside this script)
from mxnet_recordio_fixtures import write_recordio  # noqa: E402  (tools/, beside this script)
from mxnet_rnn_fixtures import write_rnn_cells  # noqa: E402  (tools/, beside this script)
from mxnet_transformer_fixtures import write_transformer  # noqa: E402  (tools/)

SAVE_DTYPES = ["float32", "float64", "float16", "uint8", "int8", "int32", "int64", "bool"]
STRUCTURE_MODELS = (
    [f"resnet{d}_v{v}" for v in (1, 2) for d in (18, 34, 50, 101, 152)]
    + [f"mobilenet{m}" for m in ("1.0", "0.75", "0.5", "0.25")]
    + [f"mobilenetv2_{m}" for m in ("1.0", "0.75", "0.5", "0.25")]
    + [f"vgg{d}{bn}" for bn in ("", "_bn") for d in (11, 13, 16, 19)]
    + ["alexnet", "squeezenet1.0", "squeezenet1.1",
       "densenet121", "densenet161", "densenet169", "densenet201", "inceptionv3"])


def _npz(path: Path, arrays: list[np.ndarray] | dict[str, np.ndarray]) -> None:
    if isinstance(arrays, dict):
        np.savez(path, **arrays)
    else:
        np.savez(path, *arrays)


def _nd(values: np.ndarray) -> mx.nd.NDArray:
    return mx.nd.array(values, dtype=values.dtype)


def _random_array(rng: np.random.RandomState, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """Random values that use the dtype's whole range, extremes included."""
    if dtype == "bool":
        return rng.rand(*shape) < 0.5
    if dtype.startswith("float"):
        values = (rng.randn(*shape) * 10).astype(dtype)
        flat = values.reshape(-1)
        flat[:3] = [np.finfo(dtype).max, np.finfo(dtype).tiny, -0.0][:flat.size]
        return values
    info = np.iinfo(dtype)
    values = rng.randint(info.min, info.max, size=shape, dtype=dtype)
    values.reshape(-1)[:2] = [info.min, info.max][:values.size]
    return values


# -- params ---------------------------------------------------------------------------------
def write_params(out: Path) -> None:
    """Every savable dtype as a list and a dict, plus sparse, V3 and bfloat16 files."""
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.RandomState(0)
    shapes = [(5,), (2, 3), (2, 1, 4), (1, 2, 3, 2), (3, 1, 1, 1, 2), (1,)]
    arrays = [_random_array(rng, dt, shapes[i % len(shapes)]) for i, dt in enumerate(SAVE_DTYPES)]
    mx.nd.save(str(out / "dtypes_list.params"), [_nd(a) for a in arrays])
    _npz(out / "dtypes_list", arrays)

    named = {f"arg:w_{dt}": a for dt, a in zip(SAVE_DTYPES, arrays, strict=True)}
    named["aux:bn0_moving_var"] = rng.rand(4).astype("float32")
    named["ünïcode name"] = rng.randn(2, 2).astype("float32")
    mx.nd.save(str(out / "dtypes_dict.params"), {k: _nd(v) for k, v in named.items()})
    _npz(out / "dtypes_dict", named)

    single = rng.randn(2, 3).astype("float32")
    mx.nd.save(str(out / "single_array.params"), _nd(single))
    _npz(out / "single_array", [single])
    mx.nd.save(str(out / "empty_list.params"), [])
    _npz(out / "empty_list", [])

    row_sparse = mx.nd.sparse.row_sparse_array(
        (rng.randn(2, 3).astype("float32"), np.array([1, 3])), shape=(5, 3))
    csr = mx.nd.sparse.csr_matrix(
        (np.array([1.5, -2.0, 3.25], "float64"), np.array([0, 3, 1]), np.array([0, 2, 2, 3])),
        shape=(3, 4), dtype="float64")
    empty_rs = mx.nd.sparse.zeros("row_sparse", (3, 2))
    sparse = {"row_sparse": row_sparse, "csr": csr, "empty_row_sparse": empty_rs}
    mx.nd.save(str(out / "sparse.params"), sparse)
    _npz(out / "sparse", {k: v.asnumpy() for k, v in sparse.items()})

    # -1/3 is not a bfloat16 value: the cast rounds it.
    bf16_values = np.array([[1.0, -2.5, 3.140625], [0.0, 65280.0, -1.0 / 3]], "float32")
    bf16 = mx.nd.amp_cast(_nd(bf16_values), dtype=np.dtype([("bfloat16", np.uint16)]))
    mx.nd.save(str(out / "bfloat16.params"), {"w": bf16})
    bits = mx.nd.load(str(out / "bfloat16.params"))["w"].asnumpy()
    np.savez(out / "bfloat16.npz", w=bits)

    # Numpy-shape semantics write V3 records, the only ones that can hold a 0-d or empty array.
    v3 = {"scalar": np.array(3.5, "float32"), "empty": np.zeros((0, 3), "float32"),
          "ints": np.arange(6, dtype="int64").reshape(2, 3)}
    mx.npx.set_np()
    try:
        mx.npx.save(str(out / "v3_np_shape.params"),
                    {k: mx.np.array(v, dtype=v.dtype) for k, v in v3.items()})
    finally:
        mx.npx.reset_np()
    _npz(out / "v3_np_shape", v3)


# -- models with weights ---------------------------------------------------------------------
def _fresh(make: Callable[[], mx.gluon.HybridBlock]) -> mx.gluon.HybridBlock:
    """A net named as in a fresh process (``resnetv10_``...), whatever was built before."""
    with mx.name.NameManager():
        return make()


def _weight_models() -> list[tuple[str, Callable[[], mx.gluon.HybridBlock], tuple[int, ...]]]:
    """(name, constructor, input shape). Narrow versions of zoo classes keep .params small."""
    return [
        # MobileNet v1 at half of mobilenet0.25's width: 0.25 alone would be 0.9 MB.
        ("mobilenet0.125_c10", lambda: vision.MobileNet(multiplier=0.125, classes=10),
         (2, 3, 32, 32)),
        ("mobilenetv2_0.25_c10", lambda: vision.get_model("mobilenetv2_0.25", classes=10),
         (2, 3, 32, 32)),
        # resnet18_v1's layout (BasicBlockV1, 2-2-2-2) with 1/16 of its channels.
        ("resnet18_v1_narrow",
         lambda: ResNetV1(BasicBlockV1, [2, 2, 2, 2], [4, 4, 8, 16, 32], classes=10),
         (2, 3, 32, 32)),
        # resnet50_v2's blocks (BottleneckV2), one per stage, narrow.
        ("resnet50_v2_narrow",
         lambda: ResNetV2(BottleneckV2, [1, 1, 1, 1], [8, 16, 32, 48, 64], classes=10),
         (2, 3, 32, 32)),
        # Two dense blocks: 56 pixels end at the 7x7 its final AvgPool2D(7) expects.
        ("densenet_narrow", lambda: DenseNet(8, 4, [2, 2], classes=10), (2, 3, 56, 56)),
        # resnet18_v1's layout, 16-40 channels, on 64 pixels: its first stage's 3x3
        # convolutions (16 channels, 16x16 maps) are ones minimx's DNNL backend runs as
        # Winograd, so this checks that path against MXNet end to end.
        ("resnet18_v1_wide16",
         lambda: ResNetV1(BasicBlockV1, [2, 2, 2, 2], [16, 16, 24, 32, 40], classes=10),
         (2, 3, 64, 64)),
    ]


def _randomize_norm_params(net: mx.gluon.HybridBlock, rng: np.random.RandomState) -> None:
    """Xavier leaves BatchNorm as identity (gamma 1, beta 0, mean 0, var 1); tests need more."""
    for name, param in net.collect_params().items():
        shape = param.shape
        if name.endswith("running_var"):
            param.set_data(mx.nd.array(rng.uniform(0.5, 1.5, shape)))
        elif name.endswith(("gamma", "running_mean", "beta")):
            base = 1.0 if name.endswith("gamma") else 0.0
            param.set_data(mx.nd.array(base + rng.uniform(-0.2, 0.2, shape)))


def _run_checkpoint(prefix: Path, data: np.ndarray) -> np.ndarray:
    """Forward the exported files through a plain executor, as minimx will run them."""
    sym, args, auxs = mx.model.load_checkpoint(str(prefix), 0)
    ex = sym.simple_bind(mx.cpu(), grad_req="null", data=data.shape)
    ex.copy_params_from(args, auxs)
    return ex.forward(is_train=False, data=mx.nd.array(data))[0].asnumpy()


def write_models(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for i, (name, make, shape) in enumerate(_weight_models()):
        net = _fresh(make)
        mx.random.seed(100 + i)
        rng = np.random.RandomState(100 + i)
        net.initialize(mx.init.Xavier(magnitude=2.0))
        net.hybridize()
        data = rng.uniform(-1, 1, shape).astype("float32")
        net(mx.nd.array(data))  # materializes deferred shapes before touching the params
        _randomize_norm_params(net, rng)
        gluon_out = net(mx.nd.array(data)).asnumpy()
        net.export(str(out / name), epoch=0)
        exec_out = _run_checkpoint(out / name, data)
        np.testing.assert_allclose(exec_out, gluon_out, rtol=1e-5, atol=1e-5)
        np.savez(out / f"{name}-io.npz", data=data, output=exec_out)


# -- structure of every zoo model ------------------------------------------------------------
def _structure_info(name: str, sym: mx.sym.Symbol, shape: tuple[int, ...]) -> dict:
    arg_shapes, out_shapes, aux_shapes = sym.infer_shape(data=shape)
    graph = json.loads(sym.tojson())
    return {
        "model": name, "mxnet_version": mx.__version__, "input_shape": list(shape),
        "list_arguments": sym.list_arguments(),
        "list_auxiliary_states": sym.list_auxiliary_states(),
        "list_outputs": sym.list_outputs(),
        "arg_shapes": dict(zip(sym.list_arguments(), map(list, arg_shapes), strict=True)),
        "aux_shapes": dict(zip(sym.list_auxiliary_states(), map(list, aux_shapes), strict=True)),
        "output_shapes": [list(s) for s in out_shapes],
        "num_nodes": len(graph["nodes"]),
        "op_counts": dict(sorted(Counter(n["op"] for n in graph["nodes"]).items())),
    }


def _write_gzip(path: Path, text: str) -> None:
    # mtime=0 keeps the bytes identical from one run to the next.
    with gzip.GzipFile(path, "wb", mtime=0) as f:
        f.write(text.encode())


def write_structure(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in STRUCTURE_MODELS:
            shape = (1, 3, 299, 299) if name == "inceptionv3" else (1, 3, 224, 224)
            net = _fresh(partial(vision.get_model, name))
            net.initialize(mx.init.Zero())  # values are never saved; zeros are fastest
            net.hybridize()
            net(mx.nd.zeros(shape))
            prefix = Path(tmp) / name
            net.export(str(prefix), epoch=0)  # its .params (tens of MB) stays in tmp
            text = (prefix.parent / f"{name}-symbol.json").read_text()
            _write_gzip(out / f"{name}-symbol.json.gz", text)
            info = _structure_info(name, mx.sym.load_json(text), shape)
            _write_gzip(out / f"{name}-info.json.gz", json.dumps(info, indent=1) + "\n")
            print(f"  {name}: {info['num_nodes']} nodes", flush=True)


# -- hand-built net --------------------------------------------------------------------------
def build_handnet() -> mx.sym.Symbol:
    """Conv/BN/act/pool/FC/SoftmaxOutput plus one each of the other core layers."""
    data = mx.sym.var("data")
    conv1 = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=4, name="conv1")
    bn1 = mx.sym.BatchNorm(conv1, fix_gamma=False, eps=1e-3, momentum=0.9, name="bn1")
    act1 = mx.sym.Activation(bn1, act_type="relu", name="relu1")
    up = mx.sym.Deconvolution(act1, kernel=(2, 2), stride=(2, 2), num_filter=3, no_bias=False,
                              name="deconv1")
    down = mx.sym.Pooling(up, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool1")
    leaky = mx.sym.LeakyReLU(down, act_type="leaky", slope=0.1, name="leaky1")
    cat = mx.sym.Concat(act1, leaky, dim=1, name="concat1")
    conv2 = mx.sym.Convolution(cat, kernel=(1, 1), num_filter=4, name="conv2")
    added = mx.sym.elemwise_add(conv2, act1, name="add1")
    pool2 = mx.sym.Pooling(added, kernel=(2, 2), stride=(2, 2), pool_type="avg", name="pool2")
    flat = mx.sym.Flatten(pool2, name="flatten1")
    fc1 = mx.sym.FullyConnected(flat, num_hidden=6, name="fc1")
    loss = mx.sym.SoftmaxOutput(fc1, mx.sym.var("softmax_label"), name="softmax")
    pairs = mx.sym.Reshape(fc1, shape=(-1, 2, 3), name="reshape1")
    probs = mx.sym.softmax(pairs, axis=-1, name="pair_softmax")
    return mx.sym.Group([loss, probs])


def _seeded_params(sym: mx.sym.Symbol, shapes: dict, rng: np.random.RandomState
                   ) -> tuple[dict, dict]:
    arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
    args = {}
    for name, shape in zip(sym.list_arguments(), arg_shapes, strict=True):
        if name in shapes:
            continue
        if name.endswith("gamma"):
            args[name] = mx.nd.array(rng.uniform(0.5, 1.5, shape))
        else:
            args[name] = mx.nd.array(rng.normal(0, 0.3, shape))
    auxs = {}
    for name, shape in zip(sym.list_auxiliary_states(), aux_shapes, strict=True):
        low, high = (0.5, 1.5) if name.endswith("var") else (-0.2, 0.2)
        auxs[name] = mx.nd.array(rng.uniform(low, high, shape))
    return args, auxs


def write_handnet(out: Path) -> None:
    """Checkpoint, inputs, inference/training outputs and gradients of one backward pass."""
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.RandomState(7)
    sym = build_handnet()
    shapes = {"data": (2, 3, 8, 8), "softmax_label": (2,)}
    args, auxs = _seeded_params(sym, shapes, rng)
    mx.model.save_checkpoint(str(out / "handnet"), 0, sym, args, auxs)
    record = {"data": rng.uniform(-1, 1, shapes["data"]).astype("float32"),
              "softmax_label": np.array([1, 4], "float32")}
    ex = sym.simple_bind(mx.cpu(), grad_req="write", **shapes)
    feeds = {k: mx.nd.array(v) for k, v in record.items()}
    ex.copy_params_from(args, auxs)
    for i, y in enumerate(ex.forward(is_train=False, **feeds)):
        record[f"infer_out_{i}"] = y.asnumpy()
    out_shapes = [y.shape for y in ex.outputs]
    heads = {"ones": [np.ones(s, "float32") for s in out_shapes],
             "rand": [rng.normal(0, 1, s).astype("float32") for s in out_shapes]}
    for kind, head_grads in heads.items():
        # Fresh moving statistics each time: a training forward updates them.
        ex.copy_params_from(args, auxs)
        for i, y in enumerate(ex.forward(is_train=True, **feeds)):
            record[f"train_out_{i}"] = y.asnumpy()
        ex.backward(out_grads=[mx.nd.array(g) for g in head_grads])
        for i, g in enumerate(head_grads):
            record[f"head_grad_{kind}_{i}"] = g
        for name, grad in ex.grad_dict.items():
            record[f"grad_{kind}:{name}"] = grad.asnumpy()
    for name, value in ex.aux_dict.items():
        record[f"aux_after_train:{name}"] = value.asnumpy()
    np.savez(out / "handnet-io.npz", **record)


# -- quantization ----------------------------------------------------------------------------
def _op_cases(rng: np.random.RandomState) -> list[tuple[str, str, dict, list[np.ndarray]]]:
    """(case, operator, attributes, inputs) for each quantization operator on fixed data."""
    def floats(*shape: int, low: float = -1.0, high: float = 1.0) -> np.ndarray:
        return rng.uniform(low, high, shape).astype("float32")

    def ints(dtype: str, *shape: int) -> np.ndarray:
        info = np.iinfo(dtype)
        return rng.randint(max(info.min, -127), info.max + 1, shape).astype(dtype)

    def rng_of(lo: float, hi: float) -> list[np.ndarray]:
        return [np.array([lo], "float32"), np.array([hi], "float32")]

    def bn_params(channels: int) -> list[np.ndarray]:
        """gamma, beta, moving_mean, moving_var (drawn when called, after the cases before)."""
        return [floats(channels, low=0.5, high=1.5), floats(channels), floats(channels),
                floats(channels, low=0.3, high=2.0)]

    x = floats(2, 3, 5, 5)
    return [
        ("quantize_v2_int8_runtime", "_contrib_quantize_v2", {"out_type": "int8"}, [x]),
        ("quantize_v2_uint8_calib", "_contrib_quantize_v2",
         {"out_type": "uint8", "min_calib_range": "0.0", "max_calib_range": "0.8"}, [x]),
        ("quantize_v2_auto_calib", "_contrib_quantize_v2",
         {"out_type": "auto", "min_calib_range": "-0.7", "max_calib_range": "0.9"}, [x]),
        ("quantize_v2_auto_runtime", "_contrib_quantize_v2", {"out_type": "auto"}, [x]),
        ("quantize_v2_uint8_runtime", "_contrib_quantize_v2", {"out_type": "uint8"},
         [floats(4, 6, low=0.0)]),
        ("quantize_v2_int8_passthrough", "_contrib_quantize_v2", {}, [ints("int8", 3, 4)]),
        ("quantize_int8", "_contrib_quantize", {"out_type": "int8"}, [x, *rng_of(-0.6, 0.9)]),
        ("quantize_uint8", "_contrib_quantize", {}, [floats(4, 5, low=0.0), *rng_of(0.0, 0.7)]),
        ("dequantize_int8", "_contrib_dequantize", {}, [ints("int8", 2, 3, 4),
                                                        *rng_of(-0.5, 1.5)]),
        ("dequantize_uint8", "_contrib_dequantize", {}, [ints("uint8", 3, 4), *rng_of(0.0, 2.0)]),
        ("requantize_runtime", "_contrib_requantize", {},
         [rng.randint(-2**20, 2**20, (2, 3, 4)).astype("int32"), *rng_of(-40.0, 40.0)]),
        ("requantize_calib_int8", "_contrib_requantize",
         {"min_calib_range": "-0.004", "max_calib_range": "0.005"},
         [rng.randint(-2**20, 2**20, (2, 3, 4)).astype("int32"), *rng_of(-40.0, 40.0)]),
        ("requantize_calib_auto", "_contrib_requantize",
         {"out_type": "auto", "min_calib_range": "0.0", "max_calib_range": "0.005"},
         [rng.randint(-2**20, 2**20, (2, 3, 4)).astype("int32"), *rng_of(-40.0, 40.0)]),
        ("quantized_pooling_max", "_contrib_quantized_pooling",
         {"kernel": "(2, 2)", "stride": "(2, 2)", "pool_type": "max"},
         [ints("uint8", 2, 3, 6, 6), *rng_of(0.0, 3.0)]),
        ("quantized_pooling_avg", "_contrib_quantized_pooling",
         {"kernel": "(3, 3)", "stride": "(2, 2)", "pad": "(1, 1)", "pool_type": "avg"},
         [ints("int8", 2, 3, 7, 7), *rng_of(-3.0, 3.0)]),
        ("quantized_pooling_global", "_contrib_quantized_pooling",
         {"kernel": "(1, 1)", "global_pool": "True", "pool_type": "avg"},
         [ints("uint8", 2, 4, 5, 5), *rng_of(0.0, 3.0)]),
        ("quantized_flatten", "_contrib_quantized_flatten", {},
         [ints("int8", 2, 3, 2, 2), *rng_of(-1.0, 2.0)]),
        ("quantized_act_relu", "_contrib_quantized_act", {"act_type": "relu"},
         [ints("int8", 2, 3, 4, 4), *rng_of(-1.0, 2.0)]),
        ("quantized_conv_bias", "_contrib_quantized_conv",
         {"kernel": "(3, 3)", "pad": "(1, 1)", "num_filter": "4"},
         [ints("uint8", 2, 3, 5, 5), ints("int8", 4, 3, 3, 3), ints("int8", 4),
          *rng_of(0.0, 2.0), *rng_of(-0.5, 0.4), *rng_of(-0.1, 0.2)]),
        ("quantized_conv_stride", "_contrib_quantized_conv",
         {"kernel": "(3, 3)", "stride": "(2, 2)", "num_filter": "2", "no_bias": "True"},
         [ints("uint8", 1, 2, 7, 7), ints("int8", 2, 2, 3, 3), *rng_of(0.0, 1.0),
          *rng_of(-0.3, 0.3)]),
        ("quantized_fc_int8", "_contrib_quantized_fully_connected", {"num_hidden": "5"},
         [ints("int8", 2, 3, 4), ints("int8", 5, 12), ints("int8", 5), *rng_of(-1.0, 1.5),
          *rng_of(-0.5, 0.4), *rng_of(-0.2, 0.1)]),
        ("quantized_fc_uint8", "_contrib_quantized_fully_connected",
         {"num_hidden": "3", "no_bias": "True"},
         [ints("uint8", 4, 6), ints("int8", 3, 6), *rng_of(0.0, 1.5), *rng_of(-0.5, 0.4)]),
        ("quantized_add_int8", "_contrib_quantized_elemwise_add", {},
         [ints("int8", 2, 3, 4), ints("int8", 2, 3, 4), *rng_of(-1.0, 1.0), *rng_of(-3.0, 2.0)]),
        ("quantized_add_mixed", "_contrib_quantized_elemwise_add", {},
         [ints("uint8", 2, 3, 4), ints("int8", 2, 3, 4), *rng_of(0.0, 1.0), *rng_of(-3.0, 2.0)]),
        ("quantized_add_mixed_calib", "_contrib_quantized_elemwise_add",
         {"min_calib_range": "-2.5", "max_calib_range": "3.0"},
         [ints("int8", 2, 3, 4), ints("uint8", 2, 3, 4), *rng_of(-1.0, 1.0), *rng_of(0.0, 2.0)]),
        ("quantized_add_uint8_calib", "_contrib_quantized_elemwise_add",
         {"min_calib_range": "0.0", "max_calib_range": "2.5"},
         [ints("uint8", 2, 3, 4), ints("uint8", 2, 3, 4), *rng_of(0.0, 1.0), *rng_of(0.0, 2.0)]),
        ("quantized_concat_mixed", "_contrib_quantized_concat", {"num_args": "2", "dim": "1"},
         [ints("uint8", 2, 3, 4), ints("int8", 2, 2, 4), *rng_of(0.0, 1.0), *rng_of(-3.0, 2.0)]),
        ("quantized_concat_uint8", "_contrib_quantized_concat", {"num_args": "3", "dim": "1"},
         [ints("uint8", 2, 1, 3), ints("uint8", 2, 2, 3), ints("uint8", 2, 1, 3),
          *rng_of(0.0, 1.0), *rng_of(0.0, 1.0), *rng_of(0.0, 0.5)]),
        ("quantized_batch_norm_int8", "_contrib_quantized_batch_norm",
         {"fix_gamma": "False", "eps": "0.001", "min_calib_range": "-2.5",
          "max_calib_range": "3.5"},
         [ints("int8", 2, 4, 5, 5), *bn_params(4), *rng_of(-1.5, 1.0)]),
        ("quantized_batch_norm_uint8", "_contrib_quantized_batch_norm",
         {"fix_gamma": "False", "eps": "1e-05", "min_calib_range": "-1.0",
          "max_calib_range": "0.8"},
         [ints("uint8", 2, 3, 4, 4), *bn_params(3), *rng_of(0.0, 2.0)]),
    ]


def write_quantization_ops(out: Path) -> None:
    """Each quantization operator on fixed inputs: `<case>.npz` (in_<i>, out_<i>) and
    `cases.json` (case -> operator and attributes)."""
    out.mkdir(parents=True, exist_ok=True)
    cases = {}
    for case, op, attrs, inputs in _op_cases(np.random.RandomState(14)):
        outputs = getattr(mx.nd.contrib, op.removeprefix("_contrib_"))(*map(_nd, inputs), **attrs)
        outputs = outputs if isinstance(outputs, list) else [outputs]
        arrays = {f"in_{i}": a for i, a in enumerate(inputs)}
        arrays.update({f"out_{i}": y.asnumpy() for i, y in enumerate(outputs)})
        np.savez(out / f"{case}.npz", **arrays)
        cases[case] = {"op": op, "attrs": attrs}
    (out / "cases.json").write_text(json.dumps(cases, indent=1, sort_keys=True) + "\n")


def build_qnet() -> mx.sym.Symbol:
    """conv-bn-relu, then two residual sums (a uint8 relu branch; an int8 conv-bn branch,
    which MXNet's oneDNN path handles oddly), max pool, FC-relu, FC: what
    quantize_model_mkldnn fuses and quantizes in a ResNet, at its smallest."""
    data = mx.sym.var("data")

    def conv(x: mx.sym.Symbol, name: str) -> mx.sym.Symbol:
        return mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=8, name=name)

    act = mx.sym.Activation(mx.sym.BatchNorm(conv(data, "conv0"), fix_gamma=False, eps=1e-3,
                                             name="bn0"), act_type="relu", name="relu0")
    block = mx.sym.Activation(mx.sym.elemwise_add(conv(act, "conv1"), act, name="add0"),
                              act_type="relu", name="relu1")
    branch = mx.sym.BatchNorm(conv(block, "conv2"), fix_gamma=False, eps=1e-3, name="bn2")
    block = mx.sym.Activation(mx.sym.elemwise_add(conv(block, "conv3"), branch, name="add1"),
                              act_type="relu", name="relu2")
    pool = mx.sym.Pooling(block, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool0")
    hidden = mx.sym.Activation(mx.sym.FullyConnected(pool, num_hidden=16, name="fc0"),
                               act_type="relu", name="relu3")
    return mx.sym.FullyConnected(hidden, num_hidden=5, name="fc1")


def write_quantized_net(out: Path) -> None:
    """`qnet` quantized by quantize_model_mkldnn, naive calibration (`qnet_naive`, and
    channel-wise `qnet_naive_channel`) and none (`qnet_none`): checkpoints and
    `<name>-io.npz` (data, fp32 output, MXNet's output, the
    calibration data); and the float net partitioned by
    MXNet's MKLDNN backend (`qnet_fp32_mkldnn`)."""
    from mxnet.contrib.quantization import quantize_model_mkldnn  # needs MXNet's backends
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.RandomState(15)
    sym = build_qnet()
    shape = (2, 3, 8, 8)
    args, auxs = _seeded_params(sym, {"data": shape}, rng)
    calib = rng.uniform(-1, 1, (8, 3, 8, 8)).astype("float32")
    data = rng.uniform(-1, 1, shape).astype("float32")
    fp32 = _forward(sym, args, auxs, data)
    sym.save(str(out / "qnet-symbol.json"))   # the float net quantize_model_mkldnn was given
    # The float net as MXNet's own oneDNN backend partitions it (fp32 _sg_mkldnn_* nodes).
    mx.model.save_checkpoint(str(out / "qnet_fp32_mkldnn"), 0, sym.get_backend_symbol("MKLDNN"),
                             args, auxs)
    for name, mode, granularity in (("naive", "naive", "tensor-wise"),
                                    ("none", "none", "tensor-wise"),
                                    ("naive_channel", "naive", "channel-wise")):
        qsym, qargs, qauxs = quantize_model_mkldnn(
            sym, args, auxs, ctx=mx.cpu(), calib_mode=mode, quantized_dtype="auto",
            calib_data=mx.io.NDArrayIter(calib, batch_size=2), num_calib_examples=8,
            quantize_granularity=granularity, label_names=None)
        mx.model.save_checkpoint(str(out / f"qnet_{name}"), 0, qsym, qargs, qauxs)
        got = _forward(*mx.model.load_checkpoint(str(out / f"qnet_{name}"), 0), data)
        np.savez(out / f"qnet_{name}-io.npz", data=data, fp32_output=fp32, output=got,
                 calib=calib)


def write_quantized_plain(out: Path) -> None:
    """The quantized_net group's float `qnet` quantized by plain `quantize_model` (no
    fusion), uint8, naive calibration, BatchNorms excluded (quantized, they write int8,
    which MXNet's CPU quantized convolution refuses): `qnet_plain-symbol.json`. MXNet
    cannot run it (its quantized relu declares int8 output, whatever it reads). Its
    calibration binds the float net without MXNet's MKLDNN backend, which 1.9.1
    otherwise switches on for that bind, hiding every layer it fuses from the
    calibration."""
    from mxnet.contrib.quantization import quantize_model  # needs MXNet's contrib module
    os.environ["MXNET_SUBGRAPH_BACKEND"] = "NONE"
    net = out.parent / "quantized_net"
    sym = mx.sym.load(str(net / "qnet-symbol.json"))
    _, args, auxs = mx.model.load_checkpoint(str(net / "qnet_fp32_mkldnn"), 0)
    with np.load(net / "qnet_naive-io.npz") as npz:
        calib = npz["calib"]
    qsym, _, _ = quantize_model(sym, args, auxs, ctx=mx.cpu(), calib_mode="naive",
                                quantized_dtype="uint8", label_names=None,
                                calib_data=mx.io.NDArrayIter(calib, batch_size=4),
                                num_calib_examples=8, excluded_op_names=["BatchNorm"])
    out.mkdir(parents=True, exist_ok=True)
    qsym.save(str(out / "qnet_plain-symbol.json"))


class _RecordingCollector:
    """A ``calib_mode='customize'`` collector as a user writes one for MXNet 1.9.1: it
    records every name the monitor reports, and the min/max of `include_layer`."""

    def __init__(self, include_layer: list[str]) -> None:
        self.include_layer, self.seen, self.min_max_dict = set(include_layer), [], {}

    def collect(self, name: object, arr: object) -> None:
        import ctypes  # only this monitor callback takes MXNet's raw handles
        name = mx.base.py_str(name)
        self.seen.append(name)
        if name in self.include_layer:
            value = mx.nd.NDArray(ctypes.cast(arr, mx.base.NDArrayHandle), writable=False)
            low, high = value.min().asscalar(), value.max().asscalar()
            old = self.min_max_dict.get(name, (low, high))
            self.min_max_dict[name] = (min(old[0], low), max(old[1], high))


def _two_step(sym: mx.sym.Symbol, args: dict, auxs: dict, batches: np.ndarray,
              batch_size: int, collector_for: Callable | None = None, **options: object
              ) -> tuple[tuple, object]:
    """MXNet 1.9.1's documented two-step flow: quantize_graph, the float model run by a
    Module with the collector as its executor's monitor callback, calib_graph."""
    from mxnet.contrib.quantization import calib_graph, quantize_graph
    given = None
    if collector_for is not None:   # customize: the layers quantize_graph would collect
        naive = {**options, "calib_mode": "naive"}
        given = collector_for(quantize_graph(sym, args, auxs, ctx=mx.cpu(), **naive)[3]
                              .include_layer)
    qsym, _, _, collector = quantize_graph(sym, args, auxs, ctx=mx.cpu(),
                                           LayerOutputCollector=given, **options)
    mod = mx.mod.Module(sym, data_names=("data",), label_names=None, context=mx.cpu())
    mod.bind(for_training=False, data_shapes=[("data", (batch_size, *batches.shape[1:]))])
    mod.set_params(args, auxs)
    mod._exec_group.execs[0].set_monitor_callback(collector.collect, monitor_all=True)
    for batch in mx.io.NDArrayIter(batches, batch_size=batch_size):
        mod.forward(batch, is_train=False)
    mx.nd.waitall()
    return calib_graph(qsym, args, auxs, collector, calib_mode=options["calib_mode"],
                       quantized_dtype=options["quantized_dtype"], logger=None), collector


def write_quantize_graph(out: Path) -> None:
    """MXNet's two-step flow (quantize_graph, a Module run feeding the collector,
    calib_graph) on the quantization group's calibnet (naive, entropy, customize) and on
    the quantized_net group's qnet as quantized_plain quantizes it; the layers each
    collector is given and the names a customize collector is shown."""
    os.environ["MXNET_SUBGRAPH_BACKEND"] = "NONE"   # calibrate every layer (see quantized_plain)
    out.mkdir(parents=True, exist_ok=True)
    calib = out.parent / "quantization"
    sym, args, auxs = mx.model.load_checkpoint(str(calib / "calibnet"), 0)
    with np.load(calib / "calibnet-batches.npz") as npz:
        batches = np.concatenate([npz[f"arr_{i}"] for i in range(3)])
    record: dict = {}
    for mode, dtype in (("naive", "auto"), ("entropy", "int8"), ("customize", "uint8")):
        maker = _RecordingCollector if mode == "customize" else None
        # conv0 stays float: MXNet's CPU quantized convolution refuses data below 0.
        (qsym, qargs, qauxs), collector = _two_step(
            sym, args, auxs, batches, 4, maker, calib_mode=mode, quantized_dtype=dtype,
            excluded_sym_names=["conv0"])
        mx.model.save_checkpoint(str(out / f"calibnet_{mode}"), 0, qsym, qargs, qauxs)
        if mode == "customize":
            record["customize_seen"] = collector.seen[:len(collector.seen) // 3]
        else:
            record[f"{mode}_include_layer"] = list(collector.include_layer)
    qnet = out.parent / "quantized_net"
    sym = mx.sym.load(str(qnet / "qnet-symbol.json"))
    _, args, auxs = mx.model.load_checkpoint(str(qnet / "qnet_fp32_mkldnn"), 0)
    with np.load(qnet / "qnet_naive-io.npz") as npz:
        batches = npz["calib"]
    (qsym, qargs, qauxs), _ = _two_step(sym, args, auxs, batches, 4, calib_mode="naive",
                                        quantized_dtype="uint8", quantize_mode="smart",
                                        excluded_op_names=["BatchNorm"])
    mx.model.save_checkpoint(str(out / "qnet_plain"), 0, qsym, qargs, qauxs)
    (out / "collectors.json").write_text(json.dumps(record, indent=1) + "\n")


def _forward(sym: mx.sym.Symbol, args: dict, auxs: dict, data: np.ndarray) -> np.ndarray:
    # bind, not simple_bind: a quantized checkpoint's int8 arguments keep their dtype.
    feeds = {**args, "data": mx.nd.array(data)}
    ex = sym.bind(mx.cpu(), {n: feeds[n] for n in sym.list_arguments()}, grad_req="null",
                  aux_states=auxs)
    return ex.forward(is_train=False)[0].asnumpy()


# -- INT8 agreement on the model fixtures -------------------------------------------------------
# Seeds and counts of the calibration and evaluation images; benchmarks/int8_agreement.py reads
# them from agreement.json and makes the same images with the same generator.
AGREEMENT_IMAGES = {"calib_seed": 1, "calib_count": 16, "calib_batch": 8, "eval_seed": 2,
                    "eval_count": 48}


def agreement_images(seed: int, count: int, shape: tuple[int, ...]) -> np.ndarray:
    """Noise images, each with its own brightness per channel and contrast: on plain noise
    the random-weight nets give one class for every image."""
    rng = np.random.RandomState(seed)
    brightness = rng.uniform(-2, 2, (count, shape[0], 1, 1))
    contrast = rng.uniform(0, 2, (count, 1, 1, 1))
    return (brightness + contrast * rng.normal(0, 1, (count, *shape))).astype("float32")


def agreement(fp32: np.ndarray, int8: np.ndarray) -> dict[str, float]:
    """Top-1 agreement, mean cosine of the logits, and mean cosine of the logits less the fp32
    mean over the images (the part that depends on the image; `fp32_spread` says how big;
    None where the fp32 logits do not depend on the image at all)."""
    def cosine(a: np.ndarray, b: np.ndarray) -> float | None:
        with np.errstate(invalid="ignore"):
            value = np.mean(np.sum(a * b, 1) / np.linalg.norm(a, axis=1)
                            / np.linalg.norm(b, axis=1))
        return float(value) if np.isfinite(value) else None
    mean = fp32.mean(0, dtype="float64")
    return {"top1": float(np.mean(fp32.argmax(1) == int8.argmax(1))),
            "cosine": cosine(fp32.astype("float64"), int8.astype("float64")),
            "centred_cosine": cosine(fp32 - mean, int8 - mean),
            "fp32_spread": float(fp32.std(0, dtype="float64").mean())}


def write_int8_agreement(out: Path) -> None:
    """Each ``models`` net quantized by quantize_model_mkldnn (naive, auto, first convolution
    excluded) on the calibration images: `<name>-int8-symbol.json.gz` (MXNet's quantized
    graph), its fp32 and INT8 outputs on the evaluation images (`outputs.npz`,
    `<name>:fp32`, `<name>:int8`) and `agreement.json` (the images' recipe and each net's
    figures)."""
    from mxnet.contrib.quantization import quantize_model_mkldnn  # needs MXNet's backends
    out.mkdir(parents=True, exist_ok=True)
    record: dict = {"mxnet_version": mx.__version__, "images": AGREEMENT_IMAGES, "models": {}}
    outputs = {}
    for name, _, shape in _weight_models():
        sym, args, auxs = mx.model.load_checkpoint(str(out.parent / "models" / name), 0)
        first_conv = next(n["name"] for n in json.loads(sym.tojson())["nodes"]
                          if n["op"] == "Convolution")
        images = AGREEMENT_IMAGES
        calib = agreement_images(images["calib_seed"], images["calib_count"], shape[1:])
        evaluation = agreement_images(images["eval_seed"], images["eval_count"], shape[1:])
        qsym, qargs, qauxs = quantize_model_mkldnn(
            sym, args, auxs, ctx=mx.cpu(), calib_mode="naive", quantized_dtype="auto",
            excluded_sym_names=[first_conv], label_names=None,
            calib_data=mx.io.NDArrayIter(calib, batch_size=images["calib_batch"]),
            num_calib_examples=images["calib_count"])
        _write_gzip(out / f"{name}-int8-symbol.json.gz", qsym.tojson())
        fp32 = _forward(sym, args, auxs, evaluation)
        int8 = _forward(qsym, qargs, qauxs, evaluation)
        outputs.update({f"{name}:fp32": fp32, f"{name}:int8": int8})
        record["models"][name] = {"excluded": [first_conv],
                                  "eval_sha256": hashlib.sha256(evaluation.tobytes()).hexdigest(),
                                  **agreement(fp32, int8)}
    np.savez(out / "outputs.npz", **outputs)
    (out / "agreement.json").write_text(json.dumps(record, indent=1) + "\n")


# -- model families beyond classification ---------------------------------------------------------
# (name, input shapes, constructor keyword arguments; "builder" names a gluoncv.model_zoo
# function for a model the zoo does not list by name, "proposals" sets a Faster R-CNN's
# proposals before and after NMS). Inputs are small; the segmenters'
# crop_size follows their input, since they resize their output to it. pretrained_base=False:
# nothing can be downloaded (the classifiers take no such argument).
FAMILY_SEED = 15
NO_BASE = {"pretrained_base": False}
CROP48 = {"crop_size": 48, "base_size": 48}
GLUONCV_FAMILIES: list[tuple[str, dict[str, tuple[int, ...]], dict]] = [
    ("ssd_512_mobilenet1.0_voc", {"data": (1, 3, 128, 128)}, NO_BASE),
    ("ssd_300_vgg16_atrous_voc", {"data": (1, 3, 300, 300)}, NO_BASE),  # its smallest input
    ("yolo3_mobilenet1.0_voc", {"data": (1, 3, 128, 128)}, NO_BASE),
    # 32 proposals instead of 300: its second stage runs ResNet's last stage per proposal.
    ("faster_rcnn_resnet50_v1b_voc", {"data": (1, 3, 128, 128)},
     {**NO_BASE, "proposals": (512, 32)}),
    ("fcn_resnet50_voc", {"data": (1, 3, 48, 48)}, {**NO_BASE, **CROP48}),
    # The zoo names only ADE20K (150 classes) versions of these two; Pascal VOC's 21 classes
    # keep the outputs small.
    ("deeplab_resnet50_voc", {"data": (1, 3, 48, 48)},
     {**NO_BASE, **CROP48, "builder": "get_deeplab", "dataset": "pascal_voc",
      "backbone": "resnet50"}),
    ("psp_resnet50_voc", {"data": (1, 3, 48, 48)},
     {**NO_BASE, **CROP48, "builder": "get_psp", "dataset": "pascal_voc",
      "backbone": "resnet50"}),
    ("simple_pose_resnet18_v1b", {"data": (1, 3, 64, 48)}, {}),
    ("resnet50_v1d", {"data": (1, 3, 64, 64)}, {}),
    ("mobilenetv3_small", {"data": (1, 3, 64, 64)}, {}),
    ("resnest50", {"data": (1, 3, 64, 64)}, {}),
]
# Added after the first fourteen models: their inputs are drawn after those models', which
# keep theirs. The R-CNNs keep 16 proposals, as few as Faster R-CNN's 32 for their
# smaller input.
CROP32 = {"crop_size": 32, "base_size": 32}
GLUONCV_MORE_FAMILIES: list[tuple[str, dict[str, tuple[int, ...]], dict]] = [
    ("mask_rcnn_resnet50_v1b_coco", {"data": (1, 3, 96, 96)},
     {**NO_BASE, "proposals": (256, 16)}),
    ("faster_rcnn_fpn_resnet50_v1b_coco", {"data": (1, 3, 96, 96)},
     {**NO_BASE, "proposals": (256, 16)}),
    ("center_net_resnet18_v1b_voc", {"data": (1, 3, 96, 96)}, NO_BASE),
    ("yolo3_darknet53_voc", {"data": (1, 3, 96, 96)}, NO_BASE),
    ("ssd_512_resnet50_v1_voc", {"data": (1, 3, 128, 128)}, NO_BASE),
    ("deeplab_v3b_plus_wideresnet_citys", {"data": (1, 3, 32, 32)}, {**NO_BASE, **CROP32}),
    ("icnet_resnet50_citys", {"data": (1, 3, 32, 32)}, {**NO_BASE, **CROP32}),
    ("danet_resnet50_citys", {"data": (1, 3, 32, 32)}, {**NO_BASE, **CROP32}),
]
# Weights scaled down (seeded_weights' gain): with BatchNorm's fixed statistics each
# residual block otherwise doubles the variance (Darknet-53 has 23, ResNet-50 16), and the
# box sizes, exp of the heads' outputs, overflow float32 for nearly every box.
WEIGHT_GAIN = {"yolo3_darknet53_voc": 0.7, "ssd_512_resnet50_v1_voc": 0.7}
# MXNet 1.9.1's ROIAlign leaves the rows of rois with a negative batch index unwritten: they
# hold whatever its memory held, and differ from run to run. GluonCV's FPN heads pass the
# rois of the other pyramid levels so, then add the levels up. These nets' values are
# MXNet's for GluonCV's other path (`_without_box_encode`): zeros in those rows, as
# minimx's ROIAlign gives them; the fixture keeps the exported graph.
MASKED_ROI_ALIGN = ("faster_rcnn_fpn_resnet50_v1b_coco",)
# The operators whose inputs are kept too: their outputs are unstable under random weights
# (near-ties in the scores reorder boxes), the values before them are not.
UNSTABLE_OPS = ("_contrib_box_nms",)
# Internal outputs bigger than this many values are kept in float16 (SSD-VGG16's NMS input
# would be 4 MB); tests compare them with float16's tolerance.
HALF_ABOVE = 1 << 18


def _family_nets() -> list[tuple[str, mx.gluon.HybridBlock, dict[str, np.ndarray]]]:
    """(name, initialized net, inputs) of each GluonCV and GluonNLP model."""
    # Here, not at the top: only this group needs GluonCV and GluonNLP.
    import gluonnlp
    rng = np.random.RandomState(FAMILY_SEED)
    nets = [_gluoncv_net(name, shapes, kwargs, rng)
            for name, shapes, kwargs in GLUONCV_FAMILIES]
    seq = 8
    # Vocabularies of made-up words (the real ones are downloads): BERT's of its real size.
    bert_vocab = gluonnlp.vocab.BERTVocab(
        gluonnlp.data.count_tokens(f"w{i}" for i in range(30522 - 5)))
    bert, _ = gluonnlp.model.get_model(
        "bert_12_768_12", dataset_name=None, vocab=bert_vocab, pretrained=False,
        use_pooler=True, use_decoder=False, use_classifier=False)
    nets.append(("bert_12_768_12", bert, {
        "data0": rng.randint(0, len(bert_vocab), (1, seq)).astype("float32"),
        "data1": np.array([[0] * (seq // 2) + [1] * (seq // 2)], "float32"),
        "data2": np.array([seq - 2], "float32")}))
    vocab = gluonnlp.Vocab(gluonnlp.data.count_tokens(f"w{i}" for i in range(2000)))
    for lm in ("standard_lstm_lm_200", "awd_lstm_lm_600"):
        zero_dropout = {"dropout": 0} if lm.startswith("standard") else {
            "dropout": 0, "weight_drop": 0, "drop_h": 0, "drop_i": 0, "drop_e": 0}
        net, _ = gluonnlp.model.get_model(lm, vocab=vocab, pretrained=False, **zero_dropout)
        nets.append((lm, net, {"data": rng.randint(0, len(vocab), (seq, 1)).astype("float32")}))
    nets += [_gluoncv_net(name, shapes, kwargs, rng)
             for name, shapes, kwargs in GLUONCV_MORE_FAMILIES]
    # RoBERTa's vocabulary of its real size, made-up words as BERT's; no decoder (the
    # masked-language-model head) as BERT's.
    roberta_vocab = gluonnlp.vocab.BERTVocab(
        gluonnlp.data.count_tokens(f"w{i}" for i in range(50265 - 5)))
    roberta, _ = gluonnlp.model.get_model("roberta_12_768_12", dataset_name=None,
                                          vocab=roberta_vocab, pretrained=False,
                                          use_decoder=False)
    nets.append(("roberta_12_768_12", roberta, {
        "data0": rng.randint(0, len(roberta_vocab), (1, seq)).astype("float32"),
        "data1": np.array([seq - 3], "float32")}))
    return nets


def _gluoncv_net(name: str, shapes: dict[str, tuple[int, ...]], kwargs: dict,
                 rng: np.random.RandomState) -> tuple[str, mx.gluon.HybridBlock,
                                                      dict[str, np.ndarray]]:
    """(name, net, inputs from `rng`) of one entry of GLUONCV_FAMILIES."""
    import gluoncv
    kwargs = dict(kwargs)
    builder = kwargs.pop("builder", None)
    proposals = kwargs.pop("proposals", None)
    net = (getattr(gluoncv.model_zoo, builder)(pretrained=False, **kwargs) if builder
           else gluoncv.model_zoo.get_model(name, pretrained=False, **kwargs))
    if proposals:  # the predefined R-CNNs fix them; their RPN reads these
        net.rpn._test_pre_nms, net.rpn._test_post_nms = proposals
        net._rpn_test_post_nms = proposals[1]
        if hasattr(net, "_rcnn_max_dets"):  # Mask R-CNN's masks, one per detection kept
            net._rcnn_max_dets = min(net._rcnn_max_dets, proposals[1])
    inputs = {k: rng.uniform(-1, 1, s).astype("float32") for k, s in shapes.items()}
    return name, net, inputs


def _unstable_inputs(sym: mx.sym.Symbol) -> list[str]:
    """Names of the internal outputs feeding the UNSTABLE_OPS nodes."""
    nodes = json.loads(sym.tojson())["nodes"]
    names = []
    for node in nodes:
        if node["op"] in UNSTABLE_OPS:
            for source, index, _ in node["inputs"]:
                # MXNet's internal output names; a second output of an op would be
                # `_output<i>`, and none of these graphs feeds NMS from one.
                assert index == 0 and nodes[source]["op"] != "null", node["name"]
                names.append(nodes[source]["name"] + "_output")
    return names


def write_families(out: Path) -> None:
    """Each GluonCV / GluonNLP model of GLUONCV_FAMILIES and _family_nets with seeded weights
    (tools/seeded_weights.py, from names and shapes): `<name>-symbol.json.gz` (the export),
    `<name>.json` (inputs, parameter shapes, weight gain if not 1, internal outputs kept),
    `<name>-io.npz` (inputs, MXNet's outputs `output<i>`, and the internal outputs
    `internal:<name>`)."""
    from seeded_weights import seeded_weights  # tools/ is this script's directory
    out.mkdir(parents=True, exist_ok=True)
    for name, net, inputs in _family_nets():
        net.initialize()
        net.hybridize()
        feeds = [mx.nd.array(v) for v in inputs.values()]
        net(*feeds)  # materializes deferred shapes
        params = net.collect_params()
        shapes = {p.name: tuple(p.shape) for p in params.values()}
        gain = WEIGHT_GAIN.get(name, 1.0)
        weights = seeded_weights(shapes, FAMILY_SEED, gain)
        for p in params.values():
            p.set_data(mx.nd.array(weights[p.name]))
        sym, args, auxs = _export(net, feeds, name)
        data_names = [n for n in sym.list_arguments() if n not in args]
        assert len(data_names) == len(inputs), (name, data_names)
        feeds_by_name = dict(zip(data_names, inputs.values(), strict=True))
        internals = _unstable_inputs(sym)
        reference = sym
        if name in MASKED_ROI_ALIGN:
            with _without_box_encode():  # GluonCV's other ROI path
                net._clear_cached_op()
                reference, _, _ = _export(net, feeds, name)
        values = _outputs(reference, internals, {**args, **feeds_by_name}, auxs)
        heads = len(sym.list_outputs())
        record = {**feeds_by_name, **{f"output{i}": v for i, v in enumerate(values[:heads])},
                  **{f"internal:{n}": v.astype("float16") if v.size > HALF_ABOVE else v
                     for n, v in zip(internals, values[heads:], strict=True)}}
        _write_gzip(out / f"{name}-symbol.json.gz", sym.tojson())
        np.savez_compressed(out / f"{name}-io.npz", **record)
        spec = {"seed": FAMILY_SEED, **({"gain": gain} if gain != 1.0 else {}),
                "inputs": {k: list(v.shape) for k, v in feeds_by_name.items()},
                "internals": internals, "params": {k: list(v) for k, v in shapes.items()},
                "arg_params": sorted(args), "aux_params": sorted(auxs)}
        (out / f"{name}.json").write_text(json.dumps(spec, indent=1) + "\n")
        print(f"  {name}: {len(json.loads(sym.tojson())['nodes'])} nodes", flush=True)


def _export(net: mx.gluon.HybridBlock, feeds: list, name: str
            ) -> tuple[mx.sym.Symbol, dict, dict]:
    """(symbol, arg_params, aux_params) of `net` as net.export writes them."""
    net(*feeds)
    with tempfile.TemporaryDirectory() as tmp:
        net.export(str(Path(tmp) / name), epoch=0)
        return mx.model.load_checkpoint(str(Path(tmp) / name), 0)


@contextlib.contextmanager
def _without_box_encode() -> Iterator[None]:
    """GluonCV 0.10.5 masks the rois of other FPN levels (batch index -1) before ROIAlign
    only where F.contrib has box_encode (MXNet >= 1.6); without it, it runs ROIAlign on every
    roi and zeros the other levels' rows with `where`."""
    encode = mx.sym.contrib.box_encode
    del mx.sym.contrib.box_encode
    try:
        yield
    finally:
        mx.sym.contrib.box_encode = encode


def _outputs(sym: mx.sym.Symbol, internals: list[str], args: dict, auxs: dict
             ) -> list[np.ndarray]:
    """MXNet's outputs of `sym`, then its internal outputs named `internals`."""
    group = mx.sym.Group([sym] + [sym.get_internals()[n] for n in internals])
    ex = group.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in args.items()}, aux_states=auxs,
                    grad_req="null")
    return [y.asnumpy() for y in ex.forward(is_train=False)]


# -- INT8 and bfloat16 on the model families --------------------------------------------------
# (families fixture, input shape): quantized by quantize_model_mkldnn from the families group's
# graph and seeded weights. YOLOv3 at 64x64: its NMS input at 128x128 (20160 boxes) is too big
# to keep.
FAMILIES_INT8 = {"ssd_512_mobilenet1.0_voc": (1, 3, 128, 128),
                 "yolo3_mobilenet1.0_voc": (1, 3, 64, 64),
                 "psp_resnet50_voc": (1, 3, 48, 48),
                 "simple_pose_resnet18_v1b": (1, 3, 64, 48)}
FAMILIES_INT8_SEED, FAMILIES_INT8_CALIB = 16, 2   # calibration images: 2, then 1 to evaluate
# Converted by amp.convert_model (bfloat16): one detector, one segmenter, and PSPNet, whose
# conversion MXNet refuses (its pyramid's Concat reads bfloat16 and float32). Each with the
# values bfloat16 is measured on: SSD's heads before decoding (the decoder's score threshold
# and NMS turn small changes into different boxes), the segmenter's outputs.
FAMILIES_BF16 = {"ssd_512_mobilenet1.0_voc": ["ssd0_concat0_output", "ssd0_concat1_output"],
                 "fcn_resnet50_voc": [], "psp_resnet50_voc": []}


def family_int8_exclusions(name: str, sym: mx.sym.Symbol) -> list[str]:
    """The nodes GluonCV's own INT8 test (tests/model_zoo, `quantize_net`'s
    exclude_layers_match) leaves in float32: names containing 'flatten', and 'concat' too
    in SSD, PSPNet and DeepLab."""
    match = ("flatten", "concat") if any(k in name for k in ("ssd", "psp", "deeplab")) else (
        "flatten",)
    return [n["name"] for n in json.loads(sym.tojson())["nodes"]
            if n["op"] != "null" and any(m in n["name"] for m in match)]


def family_int8_images(shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(calibration images, evaluation image) of one FAMILIES_INT8 model."""
    rng = np.random.RandomState(FAMILIES_INT8_SEED)
    images = rng.uniform(-1, 1, (FAMILIES_INT8_CALIB + 1, *shape[1:])).astype("float32")
    return images[:FAMILIES_INT8_CALIB], images[FAMILIES_INT8_CALIB:]


def _family_checkpoint(families: Path, name: str) -> tuple[mx.sym.Symbol, dict, dict, dict]:
    """(graph, arg_params, aux_params, spec) of one families fixture with its seeded weights."""
    from seeded_weights import seeded_weights  # tools/ is this script's directory
    sym = mx.sym.load_json(gzip.decompress((families / f"{name}-symbol.json.gz").read_bytes())
                           .decode())
    spec = json.loads((families / f"{name}.json").read_text())
    weights = seeded_weights({k: tuple(v) for k, v in spec["params"].items()}, spec["seed"],
                             spec.get("gain", 1.0))
    return (sym, {k: mx.nd.array(weights[k]) for k in spec["arg_params"]},
            {k: mx.nd.array(weights[k]) for k in spec["aux_params"]}, spec)


def _digest(arrays: dict[str, np.ndarray]) -> str:
    """sha256 over the names, dtypes, shapes and bytes of `arrays`, in name order."""
    digest = hashlib.sha256()
    for name, value in sorted(arrays.items()):
        digest.update(f"{name}:{value.dtype}:{value.shape}".encode())
        digest.update(np.ascontiguousarray(value).tobytes())
    return digest.hexdigest()


def write_families_int8(out: Path) -> None:
    """FAMILIES_INT8 quantized by quantize_model_mkldnn (naive, auto, GluonCV's exclusions)
    and FAMILIES_BF16 converted by amp.convert_model: `<name>-int8-symbol.json.gz`,
    `<name>-bf16-symbol.json.gz` (or `<name>-bf16-error.txt`: MXNet's refusal),
    `int8_outputs.npz` (MXNet's INT8 `<name>:output0` and NMS inputs `<name>:internal:<n>`
    on the evaluation image, in float16) and `families_int8.json` (images' seed and digest,
    exclusions, digests of MXNet's quantized parameters and of its dequantize nodes'
    float32 outputs, where each INT8 region ends; how far MXNet's bfloat16 values are from
    its float32 ones)."""
    from mxnet.contrib.quantization import quantize_model_mkldnn  # needs MXNet's backends
    out.mkdir(parents=True, exist_ok=True)
    families = out.parent / "families"
    record: dict = {"seed": FAMILIES_INT8_SEED, "calib_count": FAMILIES_INT8_CALIB,
                    "int8": {}, "bf16": {}}
    halves: dict[str, np.ndarray] = {}
    for name, shape in FAMILIES_INT8.items():
        sym, args, auxs, _ = _family_checkpoint(families, name)
        calib, evaluation = family_int8_images(shape)
        excluded = family_int8_exclusions(name, sym)
        qsym, qargs, qauxs = quantize_model_mkldnn(
            sym, args, auxs, ctx=mx.cpu(), calib_mode="naive", quantized_dtype="auto",
            excluded_sym_names=excluded, label_names=None,
            calib_data=mx.io.NDArrayIter(calib, batch_size=1),
            num_calib_examples=FAMILIES_INT8_CALIB)
        _write_gzip(out / f"{name}-int8-symbol.json.gz", qsym.tojson())
        # the INT8 regions end in dequantize: past them, float32 arithmetic in its own order
        nms, ends = _unstable_inputs(qsym), [n["name"] + "_output" for n in json.loads(
            qsym.tojson())["nodes"] if n["op"] == "_contrib_dequantize"]
        values = _family_values(qsym, nms + ends, {**qargs, "data": evaluation}, qauxs)
        halves.update({f"{name}:{k}": v.astype("float16") for k, v in values.items()
                       if k == "output0" or k[len("internal:"):] in nms})
        record["int8"][name] = {
            "shape": list(shape), "excluded": excluded,
            "images_sha256": _digest({"calib": calib, "evaluation": evaluation}),
            "params_sha256": _digest({k: v.asnumpy() for k, v in {**qargs, **qauxs}.items()}),
            "dequantized_sha256": {n: _digest({n: values[f"internal:{n}"]}) for n in ends}}
    for name, internals in FAMILIES_BF16.items():
        sym, args, auxs, spec = _family_checkpoint(families, name)
        try:
            csym, cargs, cauxs = amp.convert_model(sym, dict(args), dict(auxs),
                                                   target_dtype="bfloat16")
        except mx.MXNetError as exc:  # the converted graph's types contradict
            message = re.sub(r"\[\d\d:\d\d:\d\d\] ", "", str(exc).splitlines()[0])
            (out / f"{name}-bf16-error.txt").write_text(message + "\n")
            continue
        _write_gzip(out / f"{name}-bf16-symbol.json.gz", csym.tojson(remove_amp_cast=False))
        with np.load(families / f"{name}-io.npz") as io:
            feeds = {k: io[k] for k in spec["inputs"]}
        fp32 = _family_values(sym, internals, {**args, **feeds}, auxs)
        bf16 = _family_values(csym, internals, {**cargs, **feeds}, cauxs)
        # the detector's outputs come after NMS: only its heads are measured
        keys = [f"internal:{n}" for n in internals] or list(fp32)
        record["bf16"][name] = {"internals": internals, "error": {
            k: _relative_error(bf16[k], fp32[k]) for k in keys}}
    np.savez_compressed(out / "int8_outputs.npz", **halves)
    (out / "families_int8.json").write_text(json.dumps(record, indent=1) + "\n")


def _family_values(sym: mx.sym.Symbol, internals: list[str], args: dict, auxs: dict
                   ) -> dict[str, np.ndarray]:
    """MXNet's outputs of `sym` (`output<i>`) and internal outputs (`internal:<name>`)."""
    values = _outputs(sym, internals, {k: v.asnumpy() if isinstance(v, mx.nd.NDArray) else v
                                       for k, v in args.items()}, auxs)
    heads = len(sym.list_outputs())
    return {**{f"output{i}": v for i, v in enumerate(values[:heads])},
            **{f"internal:{n}": v for n, v in zip(internals, values[heads:], strict=True)}}


def _relative_error(got: np.ndarray, want: np.ndarray) -> float:
    """Largest difference over the largest value (the families tests' measure)."""
    scale = max(1.0, float(np.abs(want).max()))
    return float(np.abs(got.astype("float64") - want).max() / scale)


# -- calibration -----------------------------------------------------------------------------
def build_calibnet() -> mx.sym.Symbol:
    """conv-relu-fc: the layers whose outputs calibration watches."""
    data = mx.sym.var("data")
    conv = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, name="conv0")
    relu = mx.sym.Activation(conv, act_type="relu", name="relu0")
    return mx.sym.FullyConnected(relu, num_hidden=5, name="fc0")


def write_quantization(out: Path) -> None:
    """MXNet's entropy threshold of fixed arrays, and its calibration of a small net."""
    # Here, not at the top: only this group needs MXNet's contrib module.
    from mxnet.contrib import quantization as q
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.RandomState(14)
    normal = rng.normal(0, 1, 4000).astype("float32")
    arrays = {"normal": normal, "relu": np.maximum(normal, 0),
              "heavy": rng.standard_cauchy(4000).astype("float32")}
    cases = [("normal", "int8"), ("relu", "uint8"), ("relu", "auto"), ("relu", "int8"),
             ("heavy", "int8")]
    thresholds = []
    for name, dtype in cases:
        values = arrays[name]
        th = max(abs(np.min(values)), abs(np.max(values)))
        hist, edges = np.histogram(values, bins=8001, range=(-th, th))
        low, high, best, divergence = q._get_optimal_threshold(
            (hist, edges, np.min(values), np.max(values), th), dtype)
        thresholds.append({"array": name, "quantized_dtype": dtype, "min": float(low),
                           "max": float(high), "threshold": float(best[0]),
                           "divergence": float(divergence[0])})
    np.savez_compressed(out / "threshold-arrays.npz", **arrays)
    (out / "thresholds.json").write_text(json.dumps(thresholds, indent=1) + "\n")

    sym = build_calibnet()
    args, _ = _seeded_params(sym, {"data": (4, 2, 6, 6)}, rng)
    mx.model.save_checkpoint(str(out / "calibnet"), 0, sym, args, {})
    # The second batch reaches further than the first (the histograms widen), the third less.
    batches = [rng.normal(0, scale, (4, 2, 6, 6)).astype("float32") for scale in (1, 1.5, 0.5)]
    np.savez(out / "calibnet-batches.npz", *batches)
    layers = ["data", "conv0_output", "relu0_output", "fc0_output"]
    ranges = {}
    for mode, dtype, limit in [("naive", "int8", None), ("naive", "int8", 3),
                               ("entropy", "int8", None), ("entropy", "auto", None)]:
        mod = mx.mod.Module(sym, data_names=("data",), label_names=None, context=mx.cpu())
        mod.bind(for_training=False, data_shapes=[("data", (4, 2, 6, 6))])
        mod.set_params(args, {})
        calib = mx.io.NDArrayIter(np.concatenate(batches), batch_size=4, shuffle=False)
        if mode == "naive":
            found, count = q._collect_layer_output_min_max(mod, calib, dtype, layers, limit)
        else:
            hists, count = q._collect_layer_histogram(mod, calib, layers, limit)
            if dtype == "int8":  # the histograms themselves, once
                np.savez_compressed(out / "calibnet-histograms.npz", **{
                    f"{layer}:{field}": np.asarray(value) for layer, hist in hists.items()
                    for field, value in zip(("counts", "min", "max", "threshold"),
                                            (hist[0].astype("int32"), *hist[2:]), strict=True)})
            found = q._get_optimal_thresholds(hists, dtype)
        ranges[f"{mode}-{dtype}-{limit}"] = {
            "examples": count,
            "ranges": {k: [float(np.asarray(v).reshape(-1)[0]) for v in pair]
                       for k, pair in found.items()}}
    (out / "calibnet-ranges.json").write_text(json.dumps(ranges, indent=1) + "\n")


# -- legacy JSON -----------------------------------------------------------------------------
def legacy_json() -> dict:
    """A graph as MXNet 0.8 wrote it: ``param`` and ``attr`` keys, two-field inputs,
    ``backward_source_id``, no ``node_row_ptr`` and no ``mxnet_version`` (so 0.8.0).

    As in 0.8 files every operator parameter is written, defaults included. BatchNorm
    lists no moving_mean/moving_var inputs (aux states were not stored before 0.9), and
    ``fc2`` lists no weight/bias, so loading must add ``bn1_moving_*`` and ``fc2_*``.
    ``attr`` carries old-style hidden keys (``ctx_group``, ``lr_mult``), some suffixed with
    an input name (``bias_wd_mult``, ``weight_lr_mult``), which go onto that input. Only
    nodes that list all their inputs carry suffixed keys: on ``fc2`` MXNet 1.9.1 segfaults.
    """
    def var(name: str, attr: dict | None = None) -> dict:
        node = {"op": "null", "param": {}, "name": name, "inputs": [], "backward_source_id": -1}
        if attr:
            node["attr"] = attr
        return node

    def op(op_name: str, name: str, param: dict, inputs: list, attr: dict | None = None) -> dict:
        node = {"op": op_name, "param": param, "name": name,
                "inputs": [[i, 0] for i in inputs], "backward_source_id": -1}
        if attr:
            node["attr"] = attr
        return node

    nodes = [
        var("data"),                                                          # 0
        var("conv1_weight", {"lr_mult": "2.0"}),                              # 1
        var("conv1_bias"),                                                    # 2
        op("Convolution", "conv1", {
            "cudnn_off": "False", "cudnn_tune": "off", "dilate": "(1,1)", "kernel": "(3,3)",
            "no_bias": "False", "num_filter": "4", "num_group": "1", "pad": "(1,1)",
            "stride": "(1,1)", "workspace": "512"}, [0, 1, 2],
           {"ctx_group": "stage1", "bias_wd_mult": "0.0"}),                   # 3
        var("bn1_gamma"),                                                     # 4
        var("bn1_beta"),                                                      # 5
        op("BatchNorm", "bn1", {"eps": "0.001", "fix_gamma": "False", "momentum": "0.9",
                                "use_global_stats": "False"}, [3, 4, 5]),   # 6
        op("Activation", "relu1", {"act_type": "relu"}, [6]),                # 7
        op("Pooling", "pool1", {"kernel": "(2,2)", "pad": "(0,0)", "pool_type": "max",
                                "stride": "(2,2)"}, [7]),                     # 8
        op("Flatten", "flatten1", {}, [8]),                                   # 9
        var("fc1_weight"),                                                    # 10
        var("fc1_bias"),                                                      # 11
        op("FullyConnected", "fc1", {"no_bias": "False", "num_hidden": "8"}, [9, 10, 11],
           {"weight_lr_mult": "0.5"}),                                        # 12
        op("Activation", "tanh1", {"act_type": "tanh"}, [12]),               # 13
        op("FullyConnected", "fc2", {"no_bias": "False", "num_hidden": "3"}, [13]),  # 14
        var("softmax_label"),                                                 # 15
        op("SoftmaxOutput", "softmax", {"grad_scale": "1", "multi_output": "False",
                                        "use_ignore": "False", "ignore_label": "-1"},
           [14, 15]),                                                         # 16
    ]
    arg_nodes = [i for i, n in enumerate(nodes) if n["op"] == "null"]
    return {"nodes": nodes, "arg_nodes": arg_nodes, "heads": [[16, 0]]}


def write_legacy(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    text = json.dumps(legacy_json(), indent=2)
    (out / "legacy08-symbol.json").write_text(text + "\n")
    sym = mx.sym.load_json(text)
    shapes = {"data": (2, 3, 6, 6), "softmax_label": (2,)}
    arg_shapes, out_shapes, aux_shapes = sym.infer_shape(**shapes)
    expected = {
        "mxnet_version": mx.__version__,
        "list_arguments": sym.list_arguments(),
        "list_auxiliary_states": sym.list_auxiliary_states(),
        "list_outputs": sym.list_outputs(),
        "attr_dict": sym.attr_dict(),
        "input_shapes": {k: list(v) for k, v in shapes.items()},
        "arg_shapes": dict(zip(sym.list_arguments(), map(list, arg_shapes), strict=True)),
        "aux_shapes": dict(zip(sym.list_auxiliary_states(), map(list, aux_shapes), strict=True)),
        "output_shapes": [list(s) for s in out_shapes],
        "upgraded_json": json.loads(sym.tojson()),
    }
    (out / "legacy08-expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    rng = np.random.RandomState(11)
    args, auxs = _seeded_params(sym, shapes, rng)
    mx.nd.save(str(out / "legacy08-0000.params"),
               {**{f"arg:{k}": v for k, v in args.items()},
                **{f"aux:{k}": v for k, v in auxs.items()}})
    data = rng.uniform(-1, 1, shapes["data"]).astype("float32")
    ex = sym.simple_bind(mx.cpu(), grad_req="null", **shapes)
    ex.copy_params_from(args, auxs)
    output = ex.forward(is_train=False, data=mx.nd.array(data))[0].asnumpy()
    np.savez(out / "legacy08-io.npz", data=data, output=output)


# -- data iterators --------------------------------------------------------------------------
def _rows(count: int, width: int, dtype: str, first: int = 0) -> np.ndarray:
    """Rows that say where they came from: row i holds first + 10 * i + column."""
    return (first + 10 * np.arange(count)[:, None] + np.arange(width)).astype(dtype)


def _io_cases() -> list[dict]:
    """NDArrayIter cases: (numpy or NDArray) inputs as single arrays, lists and dicts,
    every last_batch_handle, and the steps to take (epoch: iterate to StopIteration;
    next: one next(); reset; hard_reset)."""
    cycle = ["epoch", "reset", "epoch", "reset", "epoch", "reset", "epoch"]
    x, y = _rows(10, 2, "int64"), np.arange(10, dtype="float64")
    cases = [
        {"name": f"{handle}_10_by_3", "data": x, "label": y,
         "kwargs": {"batch_size": 3, "last_batch_handle": handle},
         "steps": cycle + ["reset", "next", "reset", "epoch", "hard_reset", "epoch", "reset",
                           "next", "next", "next", "next", "reset", "epoch"]}
        for handle in ("pad", "discard", "roll_over")]
    cases += [
        {"name": "pad_wraps_4_by_10", "data": _rows(4, 3, "float32"), "label": None,
         "kwargs": {"batch_size": 10}, "steps": ["epoch", "reset", "epoch"]},
        {"name": "roll_over_2_by_3", "data": _rows(2, 2, "float32"), "label": np.arange(2.0),
         "kwargs": {"batch_size": 3, "last_batch_handle": "roll_over"}, "steps": cycle},
        {"name": "roll_over_divisible", "data": _rows(6, 2, "float32"), "label": None,
         "kwargs": {"batch_size": 3, "last_batch_handle": "roll_over"}, "steps": cycle},
        {"name": "list_of_12_names", "data": [_rows(5, 1, "float32", 100 * i) for i in range(12)],
         "label": None, "kwargs": {"batch_size": 5, "data_name": "x"}, "steps": ["epoch"]},
        {"name": "dicts_ndarray_dtypes",
         "data": {"pixels": _nd(_rows(7, 2, "int32")), "aux_in": _rows(7, 1, "float64", 5)},
         "label": {"score": _nd(np.arange(7, dtype="float64")), "cls": np.arange(7)},
         "kwargs": {"batch_size": 4, "last_batch_handle": "pad"}, "steps": ["epoch", "reset",
                                                                            "epoch"]},
        {"name": "list_label_ntc_layout", "data": _rows(5, 6, "float32").reshape(5, 2, 3),
         "label": [np.arange(5.0), np.arange(5.0) * 2],
         "kwargs": {"batch_size": 2, "last_batch_handle": "roll_over", "layout": "NTC",
                    "label_name": "lbl"}, "steps": cycle},
    ]
    return cases


def _io_spec(inputs: object) -> dict | None:
    """An input as JSON: its kind and arrays (values, dtype, whether an NDArray)."""
    def array(value: object) -> dict:
        nd = isinstance(value, mx.nd.NDArray)
        values = value.asnumpy() if nd else value
        return {"values": values.tolist(), "dtype": str(values.dtype), "ndarray": nd}
    if inputs is None:
        return None
    if isinstance(inputs, dict):
        return {"kind": "dict", "arrays": {k: array(v) for k, v in inputs.items()}}
    if isinstance(inputs, list):
        return {"kind": "list", "arrays": [array(v) for v in inputs]}
    return {"kind": "single", "arrays": array(inputs)}


def _io_batch(batch: mx.io.DataBatch) -> dict:
    def arrays(values: list) -> list[dict]:
        return [{"values": v.asnumpy().tolist(), "dtype": np.dtype(v.dtype).name} for v in values]
    return {"data": arrays(batch.data), "label": arrays(batch.label or []), "pad": batch.pad,
            "index": batch.index}


def _io_descs(descs: list) -> list[list]:
    return [[d.name, list(d.shape), np.dtype(d.dtype).name, d.layout] for d in descs]


def _io_run(it: mx.io.NDArrayIter, steps: list[str]) -> list:
    """What each step gives: the batches of an epoch, one batch (None at the end), or None."""
    results: list = []
    for step in steps:
        if step == "epoch":
            results.append([_io_batch(b) for b in it])
        elif step == "next":
            try:
                results.append(_io_batch(it.next()))
            except StopIteration:
                results.append(None)
        else:
            getattr(it, step)()
            results.append(None)
    return results


def write_io(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    cases = []
    for case in _io_cases():
        # before the iterator is made: MXNet's _init_data turns a dict's values into NDArrays
        inputs = {"data": _io_spec(case["data"]), "label": _io_spec(case["label"])}
        it = mx.io.NDArrayIter(case["data"], case["label"], **case["kwargs"])
        cases.append({"name": case["name"], **inputs, "kwargs": case["kwargs"],
                      "steps": case["steps"], "provide_data": _io_descs(it.provide_data),
                      "provide_label": _io_descs(it.provide_label),
                      "results": _io_run(it, case["steps"])})
    record = {"mxnet_version": mx.__version__, "cases": cases}
    (out / "ndarrayiter.json").write_text(json.dumps(record, separators=(",", ":")) + "\n")


# -- tensor operators (issue 15) ---------------------------------------------------------------
def _tensor_op_cases(rng: np.random.RandomState) -> list[tuple[str, str, dict, list[np.ndarray]]]:
    """(case, operator, attributes, inputs) where MXNet's rules are easy to get wrong:
    clamped and negative slices, ties, out-of-range indices, hidden outputs."""
    def floats(*shape: int, low: float = -2.0, high: float = 2.0) -> np.ndarray:
        return rng.uniform(low, high, shape).astype("float32")

    x = floats(2, 3, 4)
    ties = np.array([[1, 3, 3, 0, 3], [2, 2, 1, 1, 0]], "float32")
    halves = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.7, -2.7, 0.0], "float32")
    idx = np.array([[-1, 7.5], [2.6, 2]], "float32")
    cases = [
        ("slice_neg_step", "slice", {"begin": "(None, 2)", "end": "(None, -5)",
                                     "step": "(1, -1)"}, [x]),
        ("slice_clamped", "slice", {"begin": "(-9, 1, -20)", "end": "(9, None, 20)",
                                    "step": "(1, 2, 3)"}, [x]),
        ("slice_like_axes", "slice_like", {"axes": "(-1, 0)"}, [x, floats(1, 5, 2)]),
        ("arange_repeat", "_arange", {"start": "2", "stop": "7", "step": "1.5",
                                      "repeat": "2"}, []),
        ("arange_one_bound_int", "_arange", {"start": "5", "dtype": "int32"}, []),
        ("arange_like_axis", "_contrib_arange_like", {"axis": "-1", "start": "1",
                                                      "step": "0.5", "repeat": "3"}, [x]),
        ("arange_like_all", "_contrib_arange_like", {"start": "-1", "step": "0.25"}, [x]),
        ("where_vector", "where", {}, [np.array([1, 0], "float32"), x, floats(2, 3, 4)]),
        ("where_full", "where", {}, [(x > 0).astype("float32"), x, floats(2, 3, 4)]),
        ("broadcast_axis", "broadcast_axis", {"axis": "(0, 2)", "size": "(3, 2)"},
         [floats(1, 2, 1)]),
        ("broadcast_to", "broadcast_to", {"shape": "(2, 0, 4)"}, [floats(1, 3, 1)]),
        ("broadcast_like_axes", "broadcast_like", {"lhs_axes": "(0,)", "rhs_axes": "(2,)"},
         [floats(1, 3), x]),
        ("stack_last", "stack", {"num_args": "2", "axis": "-1"}, [x, floats(2, 3, 4)]),
        ("repeat_flat", "repeat", {"repeats": "2"}, [floats(2, 3)]),
        ("repeat_axis", "repeat", {"repeats": "3", "axis": "-2"}, [x]),
        ("tile_longer", "tile", {"reps": "(2, 1, 1, 2)"}, [x]),
        ("tile_shorter", "tile", {"reps": "(2,)"}, [x]),
        ("swapaxis", "SwapAxis", {"dim1": "0", "dim2": "2"}, [x]),
        ("reverse", "reverse", {"axis": "(0, 2)"}, [x]),
        ("squeeze_all", "squeeze", {}, [floats(1, 3, 1)]),
        ("one_hot", "one_hot", {"depth": "4", "on_value": "2", "off_value": "-1"},
         [np.array([0, -1, 3, 5, 2.7], "float32")]),
        ("take_clip", "take", {"axis": "1"}, [x, idx]),
        ("take_wrap", "take", {"axis": "-1", "mode": "wrap"}, [x, idx]),
        ("pick_clip", "pick", {"axis": "1"}, [floats(2, 5), np.array([-1, 7.5], "float32")]),
        ("pick_wrap_keep", "pick", {"axis": "0", "mode": "wrap", "keepdims": "True"},
         [floats(3, 4), np.array([-1, 4, 2, 7], "float32")]),
        ("topk_value", "topk", {"k": "2", "ret_typ": "value"}, [ties]),
        ("topk_indices_ascend", "topk", {"k": "3", "is_ascend": "True"}, [ties]),
        ("topk_mask_axis0", "topk", {"k": "1", "axis": "0", "ret_typ": "mask"}, [ties]),
        ("topk_both_flat", "topk", {"k": "4", "axis": "None", "ret_typ": "both",
                                    "dtype": "int32"}, [ties]),
        ("topk_all", "topk", {"k": "0", "ret_typ": "value"}, [x]),
        ("sort_desc", "sort", {"is_ascend": "False", "axis": "-1"}, [ties]),
        ("argsort_desc", "argsort", {"is_ascend": "False", "axis": "0"}, [ties]),
        ("argmax_ties", "argmax", {"axis": "1", "keepdims": "True"}, [ties]),
        ("argmin_flat", "argmin", {}, [ties]),
        ("shape_array", "shape_array", {}, [x]),
        ("size_array", "size_array", {}, [x]),
        ("full", "_full", {"shape": "(2, 3)", "value": "1.5", "dtype": "float16"}, []),
        ("maximum_ties", "broadcast_maximum", {}, [ties, ties[:1]]),
        ("minimum_ties", "_minimum", {}, [ties, ties[::-1]]),
        ("maximum_scalar_ties", "_maximum_scalar", {"scalar": "2"}, [ties]),
        ("power", "broadcast_power", {}, [floats(2, 3, low=0.5), floats(1, 3)]),
        ("rpower_scalar", "_rpower_scalar", {"scalar": "1.5"}, [floats(2, 3)]),
        ("greater_scalar", "_greater_scalar", {"scalar": "2"}, [ties]),
        ("lesser_equal", "broadcast_lesser_equal", {}, [ties, ties[:1]]),
        ("not_equal", "_not_equal", {}, [ties, ties[::-1]]),
        ("logical_xor_scalar", "_logical_xor_scalar", {"scalar": "0"}, [ties]),
        ("blockgrad", "BlockGrad", {}, [x]),
    ]
    unary = ["sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh",
             "arctanh", "rsqrt", "rcbrt", "cbrt", "reciprocal", "erf", "log1p", "expm1", "log2",
             "log10", "degrees", "radians", "sign", "floor", "ceil", "round", "rint", "fix",
             "trunc", "logical_not"]
    for name in unary:
        domain = np.abs(halves) / 3.0 + 0.05 if name in (
            "arcsin", "arccos", "arctanh", "rsqrt", "rcbrt", "log2", "log10") else halves
        cases.append((f"unary_{name}", name, {}, [domain]))
    cases.append(("unary_arccosh", "arccosh", {}, [np.abs(halves) + 1.5]))
    cases += [(f"unary_{name}", name, {}, [np.abs(halves) + 0.25]) for name in ("gamma", "gammaln")]
    return cases + _scan_and_moment_cases(np.random.RandomState(16))


def _scan_and_moment_cases(rng: np.random.RandomState
                           ) -> list[tuple[str, str, dict, list[np.ndarray]]]:
    """cumsum (flattened, per axis, widened dtype, booleans), moments (several axes,
    keepdims) and erfinv at its edges (+-1, beyond, tiny values). Their own generator,
    so that the earlier cases keep their inputs and head gradients."""
    x = rng.uniform(-2, 2, (2, 3, 4)).astype("float32")
    edges = np.array([-1, -0.99999994, -0.9, -0.5, -3e-8, 0, 5e-8, 2e-7, 0.3, 0.75, 0.9999,
                      0.99999994, 1, 1.5, -2], "float32")
    return [
        ("cumsum_flat", "cumsum", {}, [x]),
        ("cumsum_axis", "cumsum", {"axis": "1"}, [x]),
        ("cumsum_axis0_float64", "cumsum", {"axis": "0", "dtype": "float64"}, [x]),
        ("cumsum_int32", "cumsum", {"axis": "2"}, [np.arange(24, dtype="int32").reshape(2, 3, 4)]),
        ("cumsum_bool", "cumsum", {}, [np.array([1, 0, 1, 1], "bool")]),
        ("moments_one_axis", "moments", {"axes": "(1,)"}, [x]),
        ("moments_negative_keepdims", "moments", {"axes": "(-1, 0)", "keepdims": "True"}, [x]),
        ("moments_all", "moments", {"axes": "(0, 1, 2)"}, [x]),
        ("unary_erfinv", "erfinv", {}, [edges]),
        ("unary_erfinv_inside", "erfinv", {}, [rng.uniform(-0.99, 0.99, (3, 5)).astype("float32")]),
    ]


def _nd_function(op: str) -> Callable:
    for space, prefix in ((mx.nd, ""), (mx.nd._internal, ""), (mx.nd.contrib, "_contrib_"),
                          (mx.nd.linalg, "_linalg_")):
        fn = getattr(space, op.removeprefix(prefix), None)
        if fn is not None:
            return fn
    raise KeyError(op)


def _more_op_cases(rng: np.random.RandomState) -> list[tuple[str, str, dict, list[np.ndarray]]]:
    """(case, operator, attributes, inputs) of the operators added after issue 15:
    softmin, softsign, hypot, GroupNorm, coordinate indexing, the linalg family,
    khatri_rao, the finiteness checks, multi_sum_sq and Crop."""
    def floats(*shape: int, low: float = -2.0, high: float = 2.0) -> np.ndarray:
        return rng.uniform(low, high, shape).astype("float32")

    def spd(*lead: int, n: int = 3) -> np.ndarray:
        m = rng.uniform(-1, 1, (*lead, n, n))
        return (m @ np.swapaxes(m, -1, -2) + n * np.eye(n)).astype("float32")

    x = floats(2, 3, 4)
    coords = np.array([[1, 0, 1, 1], [2, 0, 0, 2]], "float32")   # a repeated coordinate
    return [
        ("softmin", "softmin", {"axis": "1"}, [x]),
        ("softmin_temperature", "softmin", {"temperature": "2.5"}, [x]),
        ("softsign", "softsign", {}, [x]),
        ("broadcast_hypot", "broadcast_hypot", {}, [floats(2, 1, 4), floats(3, 1)]),
        ("hypot", "_hypot", {}, [x, floats(2, 3, 4)]),
        ("hypot_scalar", "_hypot_scalar", {"scalar": "1.5"}, [x]),
        ("group_norm", "GroupNorm", {"num_groups": "2", "eps": "0.01"},
         [floats(2, 4, 3, 2), floats(2), floats(2)]),
        ("group_norm_mean_var", "GroupNorm", {"num_groups": "3", "output_mean_var": "True"},
         [floats(2, 6, 5), floats(3), floats(3)]),
        ("gather_nd", "gather_nd", {}, [x, coords]),
        ("gather_nd_negative", "gather_nd", {},
         [x, np.array([[1, -1], [2, -3], [3, 0]], "float32")]),
        ("scatter_nd", "scatter_nd", {"shape": "(3, 4, 2)"},
         [floats(2, 2), np.array([[0, 2], [3, 1]], "float32")]),
        ("batch_take", "batch_take", {}, [floats(4, 3), np.array([0, -1, 2, 7], "int32")]),
        ("reshape_like", "reshape_like", {}, [x, floats(4, 6)]),
        ("reshape_like_ranges", "reshape_like", {"lhs_begin": "-2", "rhs_begin": "1",
                                                 "rhs_end": "-1"}, [x, floats(5, 12, 7)]),
        ("ravel_multi_index", "_ravel_multi_index", {"shape": "(7, 6)"},
         [np.array([[3, 6, 9, -1], [4, 5, 1, 2]], "float32")]),
        ("unravel_index", "_unravel_index", {"shape": "(7, 6)"},
         [np.array([22, 41, 37, 50, 0], "float32")]),
        ("index_copy", "_contrib_index_copy", {},
         [floats(5, 3), np.array([4, 1, 1.7], "float32"), floats(3, 3)]),
        ("khatri_rao", "khatri_rao", {"num_args": "3"},
         [floats(2, 3), floats(3, 3), floats(1, 3)]),
        ("all_finite", "all_finite", {}, [np.array([1, np.inf, 2], "float32")]),
        ("multi_all_finite", "multi_all_finite", {"num_arrays": "2"},
         [x, np.array([np.nan], "float32")]),
        ("multi_sum_sq", "multi_sum_sq", {"num_arrays": "2"}, [x, floats(5)]),
        ("crop_h_w", "Crop", {"num_args": "1", "h_w": "(3, 2)", "offset": "(1, 2)"},
         [floats(1, 2, 5, 6)]),
        ("crop_center_like", "Crop", {"num_args": "2", "center_crop": "True"},
         [floats(1, 2, 5, 6), floats(1, 1, 2, 3)]),
        ("linalg_gemm", "linalg_gemm", {"transpose_a": "True", "alpha": "1.5", "beta": "-0.5"},
         [floats(2, 3, 2), floats(2, 3, 4), floats(2, 2, 4)]),
        ("linalg_gemm_axis", "linalg_gemm", {"transpose_b": "True", "axis": "1"},
         [floats(2, 3, 2, 4), floats(2, 5, 2, 4), floats(2, 3, 2, 5)]),
        ("linalg_gemm2", "linalg_gemm2", {"transpose_b": "True", "alpha": "2"},
         [floats(3, 4), floats(2, 4)]),
        ("linalg_potrf", "linalg_potrf", {}, [spd(2)]),
        ("linalg_potri", "linalg_potri", {}, [np.linalg.cholesky(spd(2)).astype("float32")]),
        ("linalg_trsm", "linalg_trsm", {"rightside": "True", "transpose": "True",
                                         "lower": "False", "alpha": "-1.5"},
         [np.triu(spd()), floats(2, 3)]),
        ("linalg_trsm_left", "linalg_trsm", {}, [np.tril(spd(2)), floats(2, 3, 2)]),
        ("linalg_trmm", "linalg_trmm", {}, [floats(2, 3, 3), floats(2, 3, 2)]),
        ("linalg_trmm_right", "linalg_trmm", {"rightside": "True", "lower": "False",
                                               "transpose": "True", "alpha": "0.5"},
         [floats(3, 3), floats(4, 3)]),
        ("linalg_syrk", "linalg_syrk", {"transpose": "True", "alpha": "0.5"},
         [floats(2, 3, 4)]),
        ("linalg_inverse", "linalg_inverse", {}, [spd(2)]),
        ("linalg_det", "linalg_det", {},
         [spd(2) * np.array([1, -1], "float32")[:, None, None]]),
        ("linalg_det_one", "linalg_det", {}, [spd()]),
        ("linalg_slogdet", "linalg_slogdet", {},
         [spd(2) * np.array([-1, 1], "float32")[:, None, None]]),
        ("linalg_sumlogdiag", "linalg_sumlogdiag", {}, [spd(2)]),
        ("linalg_extractdiag", "linalg_extractdiag", {"offset": "-1"}, [floats(2, 3, 3)]),
        ("linalg_makediag", "linalg_makediag", {"offset": "2"}, [floats(2, 3)]),
    ]


# Operators MXNet gives no gradient (backward raises), and cases whose MXNet gradient
# is wrong (gather_nd's backward writes outside the array for a negative index) or
# unwritten (CTCLoss of labels that cannot fit): their cases record outputs only.
UNGRADED = {"batch_take", "khatri_rao", "all_finite", "multi_all_finite", "multi_sum_sq",
            "gather_nd_negative", "ctc_infeasible"}


def _extra_op_cases(rng: np.random.RandomState) -> list[tuple[str, str, dict, list[np.ndarray]]]:
    """(case, operator, attributes, inputs) of CTCLoss (repeated labels, padding, both
    blank positions, lengths), im2col / col2im (2-D: MXNet 1.9.1 fails on 1-D and 3-D
    when it runs them) and the linalg gelqf, syevd, extracttrian and maketrian."""
    def floats(*shape: int) -> np.ndarray:
        return rng.uniform(-2, 2, shape).astype("float32")

    def symmetric(*shape: int) -> np.ndarray:
        m = floats(*shape)
        return (m + np.swapaxes(m, -1, -2)) / 2

    def labels(rows: list) -> np.ndarray:
        return np.array(rows, "float32")

    cols = {"kernel": "(2, 3)", "stride": "(2, 1)", "dilate": "(1, 2)", "pad": "(1, 1)"}
    return [
        ("ctc_first", "CTCLoss", {},
         [floats(6, 3, 5), labels([[1, 2, 2, 0], [3, 0, 0, 0], [4, 1, 3, 2]])]),
        ("ctc_last", "CTCLoss", {"blank_label": "last"},
         [floats(6, 3, 5), labels([[0, 0, 1, -1], [2, -1, -1, -1], [3, 3, 3, -1]])]),
        ("ctc_lengths", "CTCLoss", {"use_data_lengths": "True", "use_label_lengths": "True"},
         [floats(6, 3, 5), labels([[1, 2, 3, 3], [2, 2, 1, 4], [4, 4, 1, 2]]),
          np.array([6, 4, 5], "float32"), np.array([2, 1, 3], "float32")]),
        ("ctc_data_lengths_last", "ctc_loss", {"use_data_lengths": "True",
                                               "blank_label": "last"},
         [floats(5, 2, 4), labels([[0, 1, 0], [2, 2, -1]]), np.array([3, 5], "float32")]),
        ("ctc_empty_label", "_contrib_CTCLoss", {}, [floats(4, 2, 3), labels([[0, 0], [2, 0]])]),
        ("ctc_infeasible", "CTCLoss", {}, [floats(3, 2, 4), labels([[1, 1, 2], [1, 0, 0]])]),
        ("im2col_2d", "im2col", cols, [floats(2, 3, 5, 6)]),
        ("im2col_plain", "im2col", {"kernel": "(3, 3)"}, [floats(1, 2, 4, 5)]),
        ("col2im_2d", "col2im", {"output_size": "(5, 6)", **cols}, [floats(2, 18, 12)]),
        ("col2im_overlap", "col2im", {"output_size": "(4, 4)", "kernel": "(3, 2)",
                                      "pad": "(1, 0)"}, [floats(1, 12, 12)]),
        ("linalg_gelqf", "linalg_gelqf", {}, [floats(2, 3, 5)]),
        ("linalg_gelqf_square", "linalg_gelqf", {}, [floats(3, 3)]),
        ("linalg_syevd", "_linalg_syevd", {}, [symmetric(2, 4, 4)]),
        ("linalg_syevd_lower", "_linalg_syevd", {}, [floats(3, 3)]),
        ("linalg_extracttrian", "linalg_extracttrian", {}, [floats(2, 4, 4)]),
        ("linalg_extracttrian_upper", "linalg_extracttrian", {"lower": "False"},
         [floats(4, 4)]),
        ("linalg_extracttrian_offset", "linalg_extracttrian", {"offset": "1"},
         [floats(2, 4, 4)]),
        ("linalg_extracttrian_below", "linalg_extracttrian", {"offset": "-2", "lower": "False"},
         [floats(4, 4)]),
        ("linalg_maketrian", "linalg_maketrian", {"lower": "False"}, [floats(2, 6)]),
        ("linalg_maketrian_offset", "linalg_maketrian", {"offset": "-1"}, [floats(10)]),
        ("linalg_maketrian_above", "linalg_maketrian", {"offset": "2"}, [floats(2, 3)]),
    ]


def write_tensor_ops(out: Path, make_cases: Callable = _tensor_op_cases) -> None:
    """Each case of `make_cases` (`_tensor_op_cases`; `_more_op_cases` for the more_ops
    group) run by MXNet: outputs and, where a float input
    takes a gradient, the input gradients for seeded head gradients, all in one
    `cases.npz` (`<case>:in_<i>`, `:out_<i>`, `:head_<i>`, `:grad_<i>`) and `cases.json`."""
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.RandomState(15)
    arrays, cases = {}, {}
    for case, op, attrs, inputs in make_cases(rng):
        nds = list(map(_nd, inputs))
        for a in nds:
            a.attach_grad()
        with mx.autograd.record():
            outputs = _nd_function(op)(*nds, **attrs)
        outputs = outputs if isinstance(outputs, list) else [outputs]
        heads = [rng.uniform(-1, 1, y.shape).astype(y.dtype) for y in outputs]
        graded = (all(y.dtype.kind == "f" for y in heads) and nds
                  and not {op, case} & UNGRADED)
        if graded:
            mx.autograd.backward(outputs, list(map(_nd, heads)))
        arrays.update({f"{case}:in_{i}": a for i, a in enumerate(inputs)})
        arrays.update({f"{case}:out_{i}": y.asnumpy() for i, y in enumerate(outputs)})
        if graded:
            arrays.update({f"{case}:head_{i}": h for i, h in enumerate(heads)})
            arrays.update({f"{case}:grad_{i}": a.grad.asnumpy() for i, a in enumerate(nds)})
        cases[case] = {"op": op, "attrs": attrs, "graded": bool(graded)}
    np.savez_compressed(out / "cases.npz", **arrays)
    (out / "cases.json").write_text(json.dumps(cases, indent=1, sort_keys=True) + "\n")

# -- model operators (issue 15) --------------------------------------------------------------
def _boxes(rng: np.random.RandomState, *lead: int, width: int = 6) -> np.ndarray:
    """Detection rows [class, score, xmin, ymin, xmax, ymax] (corner), clustered so that
    NMS suppresses some; scores distinct (no ties) and some below 0.1."""
    count = int(np.prod(lead))
    centers = rng.uniform(2, 8, (3, 2))
    pick = centers[rng.randint(0, 3, count)] + rng.normal(0, 0.6, (count, 2))
    half = rng.uniform(0.5, 2.0, (count, 2))
    rows = np.zeros((count, width), "float32")
    rows[:, 0] = rng.randint(0, 3, count)
    rows[:, 1] = rng.permutation(count) / count + 0.01
    rows[:, 2:4], rows[:, 4:6] = pick - half, pick + half
    return rows.reshape(*lead, width)


def _corner_to_center(b: np.ndarray) -> np.ndarray:
    c = b.copy()
    c[..., 0:2] = (b[..., 0:2] + b[..., 2:4]) / 2
    c[..., 2:4] = b[..., 2:4] - b[..., 0:2]
    return c


def _rois(rng: np.random.RandomState, count: int, batch: int, size: float) -> np.ndarray:
    lo = rng.uniform(0, size * 0.6, (count, 2))
    hi = lo + rng.uniform(1.0, size * 0.5, (count, 2))
    return np.concatenate([rng.randint(0, batch, (count, 1)), lo, hi], 1).astype("float32")


def _model_op_cases(rng: np.random.RandomState
                    ) -> list[tuple[str, str, dict, list[np.ndarray], bool]]:
    """(case, operator, attributes, inputs, with gradients) for issue 15's model operators."""
    def floats(*shape: int, low: float = -1.0, high: float = 1.0) -> np.ndarray:
        return rng.uniform(low, high, shape).astype("float32")

    boxes = _boxes(rng, 2, 12)
    centered = boxes.copy()
    centered[..., 2:6] = _corner_to_center(boxes[..., 2:6])
    anchors = _boxes(rng, 1, 5)[..., 2:6]
    cases = [
        ("box_nms_default", "_contrib_box_nms", {}, [boxes], True),
        ("box_nms_class", "_contrib_box_nms",
         {"overlap_thresh": "0.3", "id_index": "0", "valid_thresh": "0.1"}, [boxes], True),
        ("box_nms_force_topk", "_contrib_box_nms",
         {"overlap_thresh": "0.4", "id_index": "0", "force_suppress": "True", "topk": "5",
          "background_id": "2"}, [boxes], False),
        ("box_nms_center_to_corner", "_contrib_box_nms",
         {"in_format": "center", "out_format": "corner", "id_index": "0"}, [centered], False),
        ("box_nms_corner_to_center", "_contrib_box_nms",
         {"out_format": "center", "overlap_thresh": "0.2"}, [boxes[0]], False),
        ("box_nms_layout", "_contrib_box_nms",
         {"coord_start": "0", "score_index": "4", "id_index": "5"},
         [np.concatenate([boxes[..., 2:6], boxes[..., 1:2], boxes[..., 0:1]], -1)
          .reshape(2, 2, 6, 6)], False),
        ("box_nms_all_invalid", "_contrib_box_nms", {"valid_thresh": "5"}, [boxes], False),
        ("box_nms_topk0", "_contrib_box_nms", {"topk": "0"}, [boxes], False),
        ("box_iou_corner", "_contrib_box_iou", {}, [boxes[0, :4, 2:6], boxes[:, 4:9, 2:6]], False),
        ("box_iou_center", "_contrib_box_iou", {"format": "center"},
         [centered[0, :4, 2:6], centered[1, :3, 2:6]], False),
        ("box_decode_center", "_contrib_box_decode", {"std0": "0.1", "std1": "0.1",
         "std2": "0.2", "std3": "0.2"}, [floats(2, 5, 4), _corner_to_center(anchors)], False),
        ("box_decode_corner_clip", "_contrib_box_decode",
         {"format": "corner", "clip": "0.5"}, [floats(2, 5, 4, low=-2, high=2), anchors], False),
        ("box_encode", "_contrib_box_encode", {},
         [np.array([[1, -1, 1, 0, 1], [0, 1, 1, -1, 1]], "float32"),
          np.array([[0, 2, 1, 1, 0], [2, 0, 1, 2, 1]], "float32"),
          np.concatenate([anchors, anchors]), boxes[:, :3, 2:6],
          np.array([0, 0.1, 0, 0], "float32"), np.array([0.1, 0.1, 0.2, 0.2], "float32")],
         False),
    ]
    feat = floats(2, 8, 9, 10)
    rois = _rois(rng, 4, 2, 30.0)
    cases += [
        ("roi_align", "_contrib_ROIAlign", {"pooled_size": "(3, 2)", "spatial_scale": "0.3"},
         [feat, rois], True),
        ("roi_align_ratio_aligned", "_contrib_ROIAlign",
         {"pooled_size": "(2, 2)", "spatial_scale": "0.25", "sample_ratio": "2",
          "aligned": "True"}, [feat, rois], True),
        ("roi_align_position_sensitive", "_contrib_ROIAlign",
         {"pooled_size": "(2, 2)", "spatial_scale": "0.3", "position_sensitive": "True"},
         [feat, rois], True),
        ("roi_pooling", "ROIPooling", {"pooled_size": "(3, 3)", "spatial_scale": "0.3"},
         [feat, rois], True),
    ]
    image = floats(2, 3, 5, 7)
    cases += [
        ("resize_up", "_contrib_BilinearResize2D", {"height": "9", "width": "12"}, [image], True),
        ("resize_down_unaligned", "_contrib_BilinearResize2D",
         {"height": "3", "width": "4", "align_corners": "False"}, [image], True),
        ("resize_up_unaligned", "_contrib_BilinearResize2D",
         {"height": "11", "width": "10", "align_corners": "False"}, [image], True),
        ("resize_scale", "_contrib_BilinearResize2D",
         {"scale_height": "2.0", "scale_width": "1.5"}, [image], False),
        ("resize_like", "_contrib_BilinearResize2D", {"mode": "like"},
         [image, floats(1, 1, 8, 3)], False),
        ("resize_odd_scale", "_contrib_BilinearResize2D",
         {"mode": "odd_scale", "scale_height": "2", "scale_width": "0.5"}, [image], False),
        ("resize_to_even_up", "_contrib_BilinearResize2D", {"mode": "to_even_up"}, [image], False),
        ("resize_to_odd_down", "_contrib_BilinearResize2D", {"mode": "to_odd_down"},
         [floats(1, 2, 6, 4)], False),
        ("adaptive_pool_global", "_contrib_AdaptiveAvgPooling2D", {}, [image], True),
        ("adaptive_pool_uneven", "_contrib_AdaptiveAvgPooling2D", {"output_size": "(3, 4)"},
         [image], True),
        ("adaptive_pool_square", "_contrib_AdaptiveAvgPooling2D", {"output_size": "2"},
         [floats(1, 2, 7, 4)], True),
    ]
    seq = floats(5, 3, 4)
    lengths = np.array([2, 5, 1], "float32")
    cases += [
        ("sequence_mask", "SequenceMask", {"use_sequence_length": "True", "value": "-2"},
         [seq, lengths], True),
        ("sequence_mask_axis1", "SequenceMask", {"use_sequence_length": "True", "axis": "1"},
         [floats(3, 5, 2), lengths], True),
        ("sequence_mask_off", "SequenceMask", {}, [seq], False),
        ("sequence_last", "SequenceLast", {"use_sequence_length": "True"}, [seq, lengths], True),
        ("sequence_last_axis1", "SequenceLast", {"use_sequence_length": "True", "axis": "1"},
         [floats(3, 5, 2), lengths], True),
        ("sequence_last_off", "SequenceLast", {}, [seq], False),
        ("sequence_reverse", "SequenceReverse", {"use_sequence_length": "True"},
         [seq, lengths], True),
        ("sequence_reverse_off", "SequenceReverse", {}, [seq], False),
    ]
    heads, dim, length, batch = 2, 3, 4, 2
    qkv = floats(length, batch, 3 * heads * dim)
    att = floats(batch * heads, length, length, low=0.0)
    kv = floats(5, batch, 2 * heads * dim)
    cases += [
        ("selfatt_qk", "_contrib_interleaved_matmul_selfatt_qk", {"heads": str(heads)}, [qkv],
         True),
        ("selfatt_valatt", "_contrib_interleaved_matmul_selfatt_valatt", {"heads": str(heads)},
         [qkv, att], True),
        ("encdec_qk", "_contrib_interleaved_matmul_encdec_qk", {"heads": str(heads)},
         [floats(length, batch, heads * dim), kv], True),
        ("encdec_valatt", "_contrib_interleaved_matmul_encdec_valatt", {"heads": str(heads)},
         [kv, floats(batch * heads, length, 5)], True),
        ("div_sqrt_dim", "_contrib_div_sqrt_dim", {}, [floats(2, 3, 7)], True),
    ]
    cases += [_rnn_case(rng, *spec) for spec in [
        ("rnn_lstm_2layer_bidir", "lstm", 2, True, 3),
        ("rnn_lstm_projection", "lstm", 2, False, 4, 2),
        ("rnn_gru_bidir", "gru", 1, True, 3),
        ("rnn_gru_2layer", "gru", 2, False, 2),
        ("rnn_tanh_bidir_2layer", "rnn_tanh", 2, True, 3),
        ("rnn_relu", "rnn_relu", 1, False, 4),
    ]]
    return cases + _spatial_cases(np.random.RandomState(16)) + _tie_cases(
        np.random.RandomState(17))


def _spatial_cases(rng: np.random.RandomState
                   ) -> list[tuple[str, str, dict, list[np.ndarray], bool]]:
    """The spatial transformer operators and Correlation, with gradients: grids that
    reach outside the image, affine maps that zoom out, FlowNet-like correlations. Their
    own generator, so that the earlier cases keep their inputs and head gradients."""
    def floats(*shape: int, low: float = -1.0, high: float = 1.0) -> np.ndarray:
        return rng.uniform(low, high, shape).astype("float32")

    identity = np.array([1, 0, 0, 0, 1, 0], "float32")
    image = floats(2, 3, 5, 6)
    return [
        ("grid_affine", "GridGenerator", {"transform_type": "affine", "target_shape": "(4, 5)"},
         [identity + floats(2, 6, low=-0.3, high=0.3)], True),
        ("grid_warp", "GridGenerator", {"transform_type": "warp"},
         [floats(2, 2, 3, 4, low=-2, high=2)], True),
        ("sampler_inside_and_out", "BilinearSampler", {},
         [image, floats(2, 2, 4, 7, low=-1.3, high=1.3)], True),
        ("sampler_far_outside", "BilinearSampler", {"cudnn_off": "True"},
         [image, floats(2, 2, 3, 3, low=-3, high=3)], True),
        ("transformer_rotate", "SpatialTransformer",
         {"target_shape": "(4, 4)", "transform_type": "affine", "sampler_type": "bilinear"},
         [floats(2, 3, 6, 5), np.array([[0.8, -0.5, 0.1, 0.5, 0.8, -0.05],
                                       [1.1, 0.2, -0.1, -0.1, 0.9, 0.2]], "float32")], True),
        ("transformer_zoom_out", "SpatialTransformer",
         {"target_shape": "(5, 3)", "transform_type": "affine", "sampler_type": "bilinear"},
         [image, identity * 1.6 + floats(2, 6, low=-0.2, high=0.2)], True),
        ("correlation_default", "Correlation", {}, [image, floats(2, 3, 5, 6)], True),
        ("correlation_padded_strided", "Correlation",
         {"kernel_size": "3", "max_displacement": "2", "stride1": "2", "stride2": "2",
          "pad_size": "2"}, [floats(1, 4, 7, 8), floats(1, 4, 7, 8)], True),
        ("correlation_subtract", "Correlation",
         {"kernel_size": "3", "max_displacement": "1", "pad_size": "1", "is_multiply": "False"},
         [image, floats(2, 3, 5, 6)], True),
    ]


def _tie_cases(rng: np.random.RandomState
               ) -> list[tuple[str, str, dict, list[np.ndarray], bool]]:
    """argsort and topk along axes longer than 16 with many ties (and NaN), where MXNet's
    std::sort and std::partial_sort leave equal values out of index order. Their own
    generator, as `_spatial_cases`."""
    def tied(*shape: int, levels: int = 3) -> np.ndarray:
        return rng.randint(0, levels, shape).astype("float32")

    with_nan = tied(2, 60)
    with_nan[0, 5], with_nan[1, ::7] = np.nan, np.nan
    return [
        ("argsort_ties_descending", "argsort", {"axis": "1", "is_ascend": "False"},
         [tied(2, 40)], False),
        ("argsort_ties_axis0", "argsort", {"axis": "0"}, [tied(50, 2, levels=4)], False),
        ("argsort_ties_nan", "argsort", {"axis": "1"}, [with_nan], False),
        # k * 8 <= 100: std::partial_sort
        ("topk_ties_partial", "topk", {"axis": "1", "k": "5", "ret_typ": "both"},
         [tied(2, 100)], True),
        ("topk_ties_partial_ascend", "topk", {"k": "4", "is_ascend": "True"},
         [tied(3, 64, levels=5)], False),
        ("topk_ties_full", "topk", {"axis": "1", "k": "30", "ret_typ": "value"},
         [tied(2, 100)], True),
    ]


_GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def _rnn_case(rng: np.random.RandomState, case: str, mode: str, layers: int, bidir: bool,
              hidden: int, projection: int = 0) -> tuple:
    """An RNN case with state outputs: data (T=4, N=2, I=3), packed parameters, states."""
    steps, batch, width, dirs = 4, 2, 3, 1 + bidir
    gates, out = _GATES[mode], projection or hidden
    size = gates * hidden * dirs
    count = (width + out + 2) * size + (layers - 1) * (out * dirs + out + 2) * size
    count += projection * hidden * layers * dirs
    attrs = {"mode": mode, "state_size": str(hidden), "num_layers": str(layers),
             "bidirectional": str(bidir), "state_outputs": "True"}
    if projection:
        attrs["projection_size"] = str(projection)
    inputs = [rng.uniform(-1, 1, (steps, batch, width)).astype("float32"),
              rng.uniform(-0.5, 0.5, count).astype("float32"),
              rng.uniform(-1, 1, (layers * dirs, batch, out)).astype("float32")]
    if mode == "lstm":
        inputs.append(rng.uniform(-1, 1, (layers * dirs, batch, hidden)).astype("float32"))
    return case, "RNN", attrs, inputs, not projection


def _mx_nd_op(name: str) -> Callable:
    if name.startswith("_contrib_"):
        return getattr(mx.nd.contrib, name.removeprefix("_contrib_"))
    return getattr(mx.nd._internal if name.startswith("_") else mx.nd, name)


def write_model_ops(out: Path, make_cases: Callable = _model_op_cases) -> None:
    """Each case of `make_cases()`: `<case>.npz` with inputs `in_<i>`, MXNet's outputs
    `out_<i>` and, for cases with gradients, head gradients `head_<i>` and MXNet's input
    gradients `grad_<i>`; `cases.json` gives each case's operator and attributes."""
    out.mkdir(parents=True, exist_ok=True)
    cases = {}
    rng = np.random.RandomState(15)
    for case, op, attrs, inputs, with_grad in make_cases(rng):
        nds = [_nd(a) for a in inputs]
        for x in nds:
            x.attach_grad()
        with mx.autograd.record(train_mode=False) if with_grad else nullcontext():
            outputs = _mx_nd_op(op)(*nds, **attrs)
        outputs = outputs if isinstance(outputs, list) else [outputs]
        arrays = {f"in_{i}": a for i, a in enumerate(inputs)}
        arrays.update({f"out_{i}": y.asnumpy() for i, y in enumerate(outputs)})
        if with_grad:
            heads = [rng.uniform(-1, 1, y.shape).astype("float32") for y in outputs]
            mx.autograd.backward(outputs, [_nd(h) for h in heads], train_mode=False)
            arrays.update({f"head_{i}": h for i, h in enumerate(heads)})
            arrays.update({f"grad_{i}": x.grad.asnumpy() for i, x in enumerate(nds)})
        np.savez(out / f"{case}.npz", **arrays)
        cases[case] = {"op": op, "attrs": attrs}
    (out / "cases.json").write_text(json.dumps(cases, indent=1, sort_keys=True) + "\n")
# -- bfloat16 AMP conversion -----------------------------------------------------------------
def build_ampnet() -> mx.sym.Symbol:
    """One node of each kind convert_symbol treats differently: bf16 ops, bf16/fp32 ops
    (BatchNorm, Pooling, relu, Concat), fp32 ops (Flatten, SliceChannel, softmax),
    conditional ones (softrelu, elu), widest-type sums of known and unknown dtypes."""
    data = mx.sym.var("data")
    conv1 = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=4, name="conv1")
    bn1 = mx.sym.BatchNorm(conv1, fix_gamma=False, name="bn1")
    relu1 = mx.sym.Activation(bn1, act_type="relu", name="relu1")
    pool1 = mx.sym.Pooling(relu1, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool1")
    soft = mx.sym.Activation(mx.sym.Convolution(pool1, kernel=(1, 1), num_filter=4, name="conv2"),
                             act_type="softrelu", name="soft1")
    elu = mx.sym.LeakyReLU(pool1, act_type="elu", name="elu1")
    add1 = mx.sym.elemwise_add(soft, elu, name="add1")
    add2 = mx.sym.broadcast_add(pool1, mx.sym.var("offset"), name="add2")
    cat = mx.sym.Concat(add1, mx.sym.relu(add2, name="relu2"), dim=1, name="cat1")
    halves = mx.sym.SliceChannel(cat, num_outputs=2, name="split1")
    add3 = mx.sym.elemwise_add(halves[0], halves[1], name="add3")
    fc1 = mx.sym.FullyConnected(mx.sym.Flatten(add3, name="flat1"), num_hidden=5, name="fc1")
    return mx.sym.Group([mx.sym.softmax(fc1, name="prob"), fc1])


AMP_CASES = {   # case -> convert_symbol keyword arguments (bfloat16 in every case)
    "default": {},
    "optional_params": {"cast_optional_params": True},
    "excluded": {"excluded_sym_names": ["conv1", "add1", "fc1"]},
    "own_lists": {"target_dtype_ops": ["Convolution"], "fp32_ops": ["FullyConnected"]},
    "conditional": {"conditional_fp32_ops": [("LeakyReLU", "act_type", ["elu"])]},
    "data_names": {"data_names": ["data"]},
}


def write_amp(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    structure = out.parent / "structure" / "resnet18_v1-symbol.json.gz"
    nets = {"ampnet": build_ampnet(),
            "resnet18_v1": mx.sym.load_json(gzip.decompress(structure.read_bytes()).decode())}
    for net, sym in nets.items():
        _write_gzip(out / f"{net}-symbol.json.gz", sym.tojson())
        for case, kwargs in AMP_CASES.items():
            try:
                converted = amp.convert_symbol(sym, target_dtype="bfloat16", **kwargs)
            except mx.MXNetError as exc:  # the converted graph's types contradict
                message = re.sub(r"\[\d\d:\d\d:\d\d\] ", "", str(exc).splitlines()[0])
                (out / f"{net}-{case}-error.txt").write_text(message + "\n")
                continue
            # tojson and save drop amp_cast nodes unless told not to
            _write_gzip(out / f"{net}-{case}-amp.json.gz",
                        converted.tojson(remove_amp_cast=False))
    (out / "cases.json").write_text(json.dumps(AMP_CASES, indent=1) + "\n")
    models = out.parent / "models"
    sym, args, auxs = mx.model.load_checkpoint(str(models / "resnet18_v1_narrow"), 0)
    with np.load(models / "resnet18_v1_narrow-io.npz") as io:
        data = io["data"]
    for optional in (False, True):
        stem = out / f"resnet18_v1_narrow_bf16{'_optional' if optional else ''}"
        csym, cargs, cauxs = amp.convert_model(
            sym, dict(args), dict(auxs), target_dtype="bfloat16",
            cast_optional_params=optional)
        csym.save(f"{stem}-symbol.json", remove_amp_cast=False)
        if optional:
            mx.nd.save(f"{stem}-0000.params", {**{f"arg:{k}": v for k, v in cargs.items()},
                                               **{f"aux:{k}": v for k, v in cauxs.items()}})
        else:  # the parameters stay as they were: only the symbol is new
            assert all((cargs[k].asnumpy() == v.asnumpy()).all() for k, v in args.items())
        ex = csym.simple_bind(mx.cpu(), grad_req="null", data=data.shape)
        ex.copy_params_from(cargs, cauxs)
        output = ex.forward(is_train=False, data=mx.nd.array(data))[0].asnumpy()
        np.savez(f"{stem}-io.npz", data=data, output=output)
    _write_bf16_agreement(out)


def _write_bf16_agreement(out: Path) -> None:
    """Each ``models`` net converted by convert_model (bfloat16, defaults), run by MXNet on
    the INT8 agreement's evaluation images: `bf16_outputs.npz` (`<name>:bf16`) and
    `bf16_agreement.json` (figures against the fp32 outputs, as `agreement`)."""
    images, outputs, record = AGREEMENT_IMAGES, {}, {}
    for name, _, shape in _weight_models():
        sym, args, auxs = mx.model.load_checkpoint(str(out.parent / "models" / name), 0)
        evaluation = agreement_images(images["eval_seed"], images["eval_count"], shape[1:])
        csym, cargs, cauxs = amp.convert_model(sym, dict(args), dict(auxs),
                                               target_dtype="bfloat16")
        fp32 = _forward(sym, args, auxs, evaluation)
        outputs[f"{name}:bf16"] = _forward(csym, cargs, cauxs, evaluation)
        record[name] = agreement(fp32, outputs[f"{name}:bf16"])
    np.savez(out / "bf16_outputs.npz", **outputs)
    (out / "bf16_agreement.json").write_text(json.dumps(record, indent=1) + "\n")
# -- training: initializers, optimizers, schedulers, metrics, Module.fit ---------------------
INIT_CASES = [  # (name, initializer expression, parameter name, shape)
    ("uniform", "mx.init.Uniform(0.07)", "fc_weight", (64, 50)),
    ("normal", "mx.init.Normal(0.5)", "fc_weight", (64, 50)),
    ("xavier_avg", "mx.init.Xavier()", "conv_weight", (32, 16, 3, 3)),
    ("xavier_in_gauss", "mx.init.Xavier('gaussian', 'in', 2)", "conv_weight", (32, 16, 3, 3)),
    ("xavier_out", "mx.init.Xavier(factor_type='out', magnitude=1.5)", "fc_weight", (40, 30)),
    ("msraprelu", "mx.init.MSRAPrelu()", "conv_weight", (32, 16, 3, 3)),
    ("msraprelu_in", "mx.init.MSRAPrelu('in', 0.1)", "fc_weight", (50, 60)),
    ("constant", "mx.init.Constant(0.25)", "fc_weight", (3, 4)),
    ("one", "mx.init.One()", "fc_weight", (2, 3)),
    ("zero", "mx.init.Zero()", "fc_weight", (2, 3)),
    ("xavier_bias", "mx.init.Xavier()", "fc_bias", (5,)),
    ("xavier_gamma", "mx.init.Xavier()", "bn_gamma", (5,)),
    ("xavier_beta", "mx.init.Xavier()", "bn_beta", (5,)),
    ("mixed_bias", "mx.init.Mixed(['.*bias', '.*'], [mx.init.One(), mx.init.Zero()])",
     "fc_bias", (4,)),
    ("orthogonal", "mx.init.Orthogonal()", "fc_weight", (16, 40)),
    ("orthogonal_normal", "mx.init.Orthogonal(1.0, 'normal')", "conv_weight", (40, 4, 2, 2)),
    ("bilinear", "mx.init.Bilinear()", "up_weight", (1, 1, 4, 4)),
    ("bilinear_odd", "mx.init.Bilinear()", "up_weight", (1, 1, 3, 5)),
    ("lstm_bias", "mx.init.LSTMBias(2.0)", "lstm_i2h_weight", (8,)),
]

OPTIMIZER_CASES = [  # (name, optimizer, kwargs, updates)
    ("sgd", "sgd", {"learning_rate": 0.1}, 2),
    ("sgd_wd_clip", "sgd", {"learning_rate": 0.1, "wd": 0.01, "clip_gradient": 0.3,
                            "rescale_grad": 0.5}, 2),
    ("sgd_momentum", "sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.001,
                             "rescale_grad": 0.25}, 3),
    ("sgd_momentum_clip", "sgd", {"learning_rate": 0.05, "momentum": 0.8, "wd": 0.01,
                                  "clip_gradient": 0.2}, 3),
    ("nag", "nag", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}, 3),
    ("adam", "adam", {}, 3),
    ("adam_wd_clip", "adam", {"learning_rate": 0.01, "wd": 0.1, "clip_gradient": 0.5,
                              "beta1": 0.8, "rescale_grad": 2.0}, 3),
    ("rmsprop", "rmsprop", {"learning_rate": 0.01, "wd": 0.01}, 3),
    ("rmsprop_centered", "rmsprop", {"learning_rate": 0.01, "centered": True,
                                     "clip_weights": 0.9, "clip_gradient": 1.0}, 3),
    ("adagrad", "adagrad", {"learning_rate": 0.1, "wd": 0.01, "clip_gradient": 0.8,
                            "rescale_grad": 0.5}, 3),
    ("adadelta", "adadelta", {"rho": 0.8, "epsilon": 1e-4, "wd": 0.01}, 3),
    ("adamax", "adamax", {"wd": 0.01, "clip_gradient": 1.0}, 3),
    ("nadam", "nadam", {"learning_rate": 0.01, "wd": 0.01}, 3),
    ("signum", "signum", {}, 3),
    ("signum_wd_clip", "signum", {"learning_rate": 0.05, "wd": 0.01, "wd_lh": 0.02,
                                  "rescale_grad": 0.5, "clip_gradient": 0.3}, 3,
     {"param": "fc_weight", "lr_mult": 2.0}),
    ("signsgd", "signum", {"learning_rate": 0.1, "momentum": 0.0, "wd": 0.05,
                           "rescale_grad": 2.0, "clip_gradient": 0.1}, 3),
    ("ftrl", "ftrl", {}, 3),
    ("ftrl_wd_clip", "ftrl", {"lamda1": 0.05, "learning_rate": 0.5, "beta": 0.5, "wd": 0.01,
                              "clip_gradient": 0.5, "rescale_grad": 2.0}, 3),
    ("ftrl_bias", "ftrl", {"wd": 0.1}, 2, {"param": "fc_bias", "lr_mult": 0.5}),
    ("ftml", "ftml", {}, 3),
    ("ftml_wd_clip", "ftml", {"learning_rate": 0.05, "beta1": 0.5, "wd": 0.01,
                              "clip_gradient": 0.5, "rescale_grad": 0.5}, 3),
    ("lamb", "lamb", {"learning_rate": 0.01, "wd": 0.01}, 3),
    ("lamb_upper_clip", "lamb", {"learning_rate": 0.01, "upper_bound": 1.5, "clip_gradient": 0.5,
                                 "rescale_grad": 2.0}, 3, {"param": "fc_weight", "lr_mult": 3.0}),
    ("lamb_lower_raw", "lamb", {"learning_rate": 0.01, "lower_bound": 4.0,
                                "bias_correction": False, "wd": 0.1}, 3),
    ("lars", "lars", {"learning_rate": 0.1, "eta": 0.2, "wd": 0.01}, 3),
    ("lars_momentum_clip", "lars", {"learning_rate": 0.1, "momentum": 0.9, "eta": 0.5,
                                    "eps": 0.5, "wd": 0.01, "rescale_grad": 0.5,
                                    "clip_gradient": 0.4}, 3),
    ("lars_schedule", "lars", {"momentum": 0.9, "eta": 0.5, "wd": 0.01}, 4,
     {"param": "fc_weight", "lr_mult": 0.5,
      "scheduler": "mx.lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=0.2)"}),
    ("lars_bias", "lars", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}, 3,
     {"param": "fc_bias"}),
    ("lars_gamma", "lars", {"learning_rate": 0.1, "wd": 0.1}, 3, {"param": "bn_gamma"}),
    ("dcasgd", "dcasgd", {"learning_rate": 0.1, "lamda": 0.5, "wd": 0.01}, 3),
    ("dcasgd_clip", "dcasgd", {"learning_rate": 0.2, "rescale_grad": 0.5, "clip_gradient": 0.4},
     3),
]
# A case's optional fifth entry: the parameter's name (its idx2name), its lr_mult by
# that name, an lr_scheduler expression; `reuse_grad`: one gradient array overwritten
# each update, as a Module's are.

# More cases, drawn after the other records so that their arrays stay as they were:
# LBSGD's warm-up strategies, gradient sums and scheduler (read before it counts), and
# MXNet's ccSGD (SGD's deprecated name) and Test rule.
LATER_OPTIMIZER_CASES = [
    ("lbsgd", "lbsgd", {}, 3),
    ("lbsgd_linear", "lbsgd", {"learning_rate": 0.1, "batch_scale": 2, "warmup_epochs": 2,
                               "updates_per_epoch": 2, "wd": 0.01}, 8),
    ("lbsgd_power2_momentum_clip", "lbsgd",
     {"learning_rate": 0.1, "momentum": 0.9, "batch_scale": 3, "warmup_strategy": "power2",
      "warmup_epochs": 3, "updates_per_epoch": 3, "rescale_grad": 0.5, "clip_gradient": 0.4},
     9),
    ("lbsgd_sqrt_begin", "lbsgd", {"learning_rate": 0.05, "batch_scale": 2,
                                   "warmup_strategy": "sqrt", "warmup_epochs": 4,
                                   "updates_per_epoch": 2, "begin_epoch": 1, "wd": 0.02}, 6),
    ("lbsgd_lars", "lbsgd", {"learning_rate": 0.1, "momentum": 0.5, "warmup_strategy": "lars",
                             "batch_scale": 2, "wd": 0.01}, 6),
    ("lbsgd_lars_each", "lbsgd", {"learning_rate": 1.0, "warmup_strategy": "lars"}, 3),
    ("lbsgd_other_strategy", "lbsgd", {"learning_rate": 0.1, "batch_scale": 2,
                                       "warmup_strategy": "cosine", "warmup_epochs": 1,
                                       "updates_per_epoch": 8}, 4),
    ("lbsgd_schedule", "lbsgd", {"momentum": 0.9, "batch_scale": 2, "warmup_epochs": 1,
                                 "updates_per_epoch": 2}, 6,
     {"param": "fc_weight", "lr_mult": 0.5,
      "scheduler": "mx.lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=0.2)"}),
    ("lbsgd_reused_grad", "lbsgd", {"learning_rate": 0.1, "batch_scale": 2, "warmup_epochs": 1,
                                    "updates_per_epoch": 2}, 6, {"reuse_grad": True}),
    ("ccsgd", "ccsgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01, "rescale_grad": 0.5},
     3),
    ("test", "test", {"rescale_grad": 0.5}, 3),
]

SGLD_CASE = {"learning_rate": 0.25, "wd": 0.1, "rescale_grad": 0.5, "clip_gradient": 0.5}

SCHEDULER_CASES = [  # (name, scheduler expression, updates asked for, in order)
    ("factor", "mx.lr_scheduler.FactorScheduler(step=3, factor=0.5, base_lr=1.0, "
               "stop_factor_lr=0.1)", list(range(0, 20))),
    ("factor_warmup", "mx.lr_scheduler.FactorScheduler(step=2, factor=0.9, base_lr=0.5, "
                      "warmup_steps=4, warmup_begin_lr=0.1)", list(range(0, 12))),
    ("multifactor", "mx.lr_scheduler.MultiFactorScheduler(step=[2, 5, 9], factor=0.1, "
                    "base_lr=1.0)", list(range(0, 12))),
    ("cosine", "mx.lr_scheduler.CosineScheduler(max_update=10, base_lr=1.0, final_lr=0.1, "
               "warmup_steps=3, warmup_mode='constant', warmup_begin_lr=0.05)",
     list(range(0, 14))),
    ("poly", "mx.lr_scheduler.PolyScheduler(max_update=8, base_lr=0.5, pwr=3, final_lr=0.01, "
             "warmup_steps=2, warmup_begin_lr=0.1)", list(range(0, 11))),
]

METRIC_CASES = [  # (name, create arguments, kind of predictions)
    ("acc", ["acc"], "probs"), ("acc_labels", ["acc"], "labels"),
    ("top_k", ["top_k_accuracy", {"top_k": 3}], "probs"), ("ce", ["ce"], "probs"),
    ("mse", ["mse"], "regression"), ("mae", ["mae"], "regression"),
    ("f1_macro", ["f1"], "binary"), ("f1_micro", ["f1", {"average": "micro"}], "binary"),
    ("composite", [["acc", "ce"]], "probs"),
    ("rmse", ["rmse"], "regression"), ("nll_loss", ["nll_loss"], "probs"),
    ("perplexity", ["perplexity", {"ignore_label": None}], "probs"),
    ("perplexity_ignore", ["perplexity", {"ignore_label": 1}], "probs"),
    ("loss", ["loss"], "regression"), ("pearsonr", ["pearsonr"], "regression"),
    ("pearsonr_micro", ["pearsonr", {"average": "micro"}], "regression"),
    ("mcc_macro", ["mcc"], "binary_long"),
    ("mcc_micro", ["mcc", {"average": "micro"}], "binary_long"),
]


def _init_record(rng: np.random.RandomState) -> dict:
    cases = {}
    for name, expr, param, shape in INIT_CASES:
        mx.random.seed(int(rng.randint(1 << 30)))
        arr = mx.nd.zeros(shape)
        eval(expr)(mx.init.InitDesc(param), arr)  # noqa: S307  (our own table)
        v = arr.asnumpy().astype(np.float64)
        cases[name] = {"init": expr, "param": param, "shape": list(shape),
                       "mean": v.mean(), "std": v.std(), "min": v.min(), "max": v.max(),
                       "values": v.ravel().tolist() if v.size <= 16 else None}
    return cases


def _optimizer(opt_name: str, kwargs: dict, setup: dict) -> mx.optimizer.Optimizer:
    """The optimizer of a case, for parameter 0 named and scheduled as `setup` says."""
    extra: dict = {}
    if "param" in setup:
        extra["param_idx2name"] = {0: setup["param"]}
    if "scheduler" in setup:
        extra["lr_scheduler"] = eval(setup["scheduler"])  # noqa: S307  (our own table)
    opt = mx.optimizer.create(opt_name, **kwargs, **extra)
    if "lr_mult" in setup:
        opt.set_lr_mult({setup["param"]: setup["lr_mult"]})
    return opt


def _optimizer_record(rng: np.random.RandomState, arrays: dict, table: list) -> dict:
    cases = {}
    for name, opt_name, kwargs, updates, *extra in table:
        setup = extra[0] if extra else {}
        weight = rng.uniform(-1, 1, (4, 5)).astype(np.float32)
        grads = [rng.normal(0, 1, (4, 5)).astype(np.float32) for _ in range(updates)]
        arrays[f"{name}:weight"] = weight
        updater = mx.optimizer.get_updater(_optimizer(opt_name, kwargs, setup))
        w, reused = mx.nd.array(weight), mx.nd.zeros(weight.shape)
        for k, grad in enumerate(grads):
            arrays[f"{name}:grad_{k}"] = grad
            if setup.get("reuse_grad"):
                reused[:] = grad
            updater(0, reused if setup.get("reuse_grad") else mx.nd.array(grad), w)
            arrays[f"{name}:after_{k}"] = w.asnumpy()
        cases[name] = {"optimizer": opt_name, "kwargs": kwargs, "updates": updates,
                       "setup": setup}
    return cases


def _sgld_record(rng: np.random.RandomState, arrays: dict) -> dict:
    """SGLD's updates without their noise (drawn again after the seed each update
    draws it after, and taken off the weight) and the noise's standard deviations."""
    lr = SGLD_CASE["learning_rate"]
    weight = rng.uniform(-1, 1, (20, 25)).astype(np.float32)
    arrays["sgld:weight"] = weight
    updater = mx.optimizer.get_updater(mx.optimizer.create("sgld", **SGLD_CASE))
    w, stds = mx.nd.array(weight), []
    for k in range(3):
        grad = arrays[f"sgld:grad_{k}"] = rng.normal(0, 1, weight.shape).astype(np.float32)
        mx.random.seed(k)
        noise = mx.nd.random.normal(0, lr ** 0.5, shape=weight.shape)
        mx.random.seed(k)
        updater(0, mx.nd.array(grad), w)
        w -= noise
        arrays[f"sgld:after_{k}"] = w.asnumpy()
        stds.append(float(noise.asnumpy().std()))
    return {"kwargs": SGLD_CASE, "updates": 3, "noise_std": stds}


def _mult_record() -> dict:
    """lr and wd multipliers an optimizer takes from a symbol's attributes and names."""
    data = mx.sym.Variable("data")
    weight = mx.sym.Variable("fc_weight", lr_mult=0.5, wd_mult=2.0)
    bias = mx.sym.Variable("fc_bias", lr_mult=3.0)
    net = mx.sym.FullyConnected(data, weight=weight, bias=bias, num_hidden=4, name="fc")
    net = mx.sym.BatchNorm(net, name="bn")
    net = mx.sym.FullyConnected(net, num_hidden=2, name="out")
    names = [n for n in net.list_arguments() if n != "data"]
    opt = mx.optimizer.create("sgd", learning_rate=0.1, wd=0.01, sym=net,
                              param_idx2name=dict(enumerate(names)))
    return {"names": names, "lr": [opt._get_lr(i) for i in range(len(names))],
            "wd": [opt._get_wd(i) for i in range(len(names))]}


def _metric_inputs(kind: str, rng: np.random.RandomState) -> tuple[list, list]:
    """Two batches of (labels, predictions) of `kind`."""
    batches = []
    for size in (30, 20) if kind == "binary_long" else (6, 5):
        if kind == "regression":
            batches.append((rng.normal(0, 1, (size,)), rng.normal(0, 1, (size,))))
            continue
        classes = 2 if kind.startswith("binary") else 5
        labels = rng.randint(0, classes, size).astype(np.float32)
        probs = rng.dirichlet(np.ones(classes), size).astype(np.float32)
        batches.append((labels, probs.argmax(1).astype(np.float32) if kind == "labels"
                        else probs))
    return [b[0] for b in batches], [b[1] for b in batches]


def _metric_record(rng: np.random.RandomState, arrays: dict) -> dict:
    cases = {}
    for name, args, kind in METRIC_CASES:
        labels, preds = _metric_inputs(kind, rng)
        metric = mx.metric.create(*[a for a in args if not isinstance(a, dict)],
                                  **next((a for a in args if isinstance(a, dict)), {}))
        results = []
        for k, (label, pred) in enumerate(zip(labels, preds, strict=True)):
            arrays[f"{name}:label_{k}"], arrays[f"{name}:pred_{k}"] = label, pred
            metric.update([mx.nd.array(label)], [mx.nd.array(pred)])
            results.append({"get": metric.get(), "global": metric.get_global()})
        metric.reset_local()
        results.append({"get": metric.get(), "global": metric.get_global()})
        cases[name] = {"args": args, "results": results}
    return cases


def build_fitnet() -> mx.sym.Symbol:
    """FullyConnected-relu-FullyConnected-SoftmaxOutput, for the Module.fit record."""
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=8, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def _fit_record(rng: np.random.RandomState, arrays: dict) -> dict:
    """Module.fit from fixed parameters on fixed data (no shuffle, a padded last batch)."""
    data = rng.normal(0, 1, (22, 4)).astype(np.float32)
    label = rng.randint(0, 3, 22).astype(np.float32)
    arrays["fit:data"], arrays["fit:label"] = data, label
    net = build_fitnet()
    shapes, _, _ = net.infer_shape(data=(5, 4))
    init = {n: rng.normal(0, 0.5, s).astype(np.float32)
            for n, s in zip(net.list_arguments(), shapes, strict=True)
            if n not in ("data", "softmax_label")}
    arrays.update({f"fit:init:{n}": v for n, v in init.items()})
    record = {}
    for opt_name, params in (("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.001}),
                             ("adam", {"learning_rate": 0.01})):
        mod = mx.mod.Module(net, context=mx.cpu())
        train = mx.io.NDArrayIter(data, label, batch_size=5)
        mod.fit(train, eval_data=mx.io.NDArrayIter(data, label, batch_size=5),
                optimizer=opt_name, optimizer_params=params, num_epoch=2,
                arg_params={n: mx.nd.array(v) for n, v in init.items()})
        args, _ = mod.get_params()
        arrays.update({f"fit:{opt_name}:{n}": v.asnumpy() for n, v in args.items()})
        record[opt_name] = {"optimizer_params": params,
                            "score": mod.score(mx.io.NDArrayIter(data, label, batch_size=5),
                                               ["acc", "ce"])}
        arrays[f"fit:{opt_name}:predict"] = mod.predict(
            mx.io.NDArrayIter(data, label, batch_size=5)).asnumpy()
    return record


def write_training(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.RandomState(19)
    arrays: dict[str, np.ndarray] = {}
    record = {"mxnet_version": mx.__version__, "init": _init_record(rng),
              "optimizers": _optimizer_record(rng, arrays, OPTIMIZER_CASES),
              "mults": _mult_record(),
              "schedulers": {name: {"scheduler": expr, "updates": updates,
                                    "lr": [sched(n) for sched in [eval(expr)]  # noqa: S307
                                           for n in updates]}
                             for name, expr, updates in SCHEDULER_CASES},
              "metrics": _metric_record(rng, arrays), "fit": _fit_record(rng, arrays),
              "sgld": _sgld_record(rng, arrays)}
    record["optimizers"].update(_optimizer_record(rng, arrays, LATER_OPTIMIZER_CASES))
    (out / "training.json").write_text(json.dumps(record, indent=1) + "\n")
    np.savez_compressed(out / "training-arrays.npz", **arrays)
# -- mx.viz ------------------------------------------------------------------------------------
def _viz_cases(structure: Path) -> list[tuple[str, mx.sym.Symbol, dict | None]]:
    """(case, symbol, input shapes or None) for print_summary and plot_network."""
    def zoo(name: str) -> mx.sym.Symbol:
        with gzip.open(structure / f"{name}-symbol.json.gz", "rt") as f:
            return mx.sym.load_json(f.read())
    image = {"data": (1, 3, 224, 224)}
    return [("handnet", build_handnet(), {"data": (2, 3, 8, 8), "softmax_label": (2,)}),
            ("handnet_noshape", build_handnet(), None),
            ("resnet18_v1", zoo("resnet18_v1"), image),
            ("mobilenet0.25", zoo("mobilenet0.25"), image),
            ("squeezenet1.1", zoo("squeezenet1.1"), image)]


def write_viz(out: Path) -> None:
    """`mx.viz.print_summary`'s text and `mx.viz.plot_network`'s DOT source per case."""
    out.mkdir(parents=True, exist_ok=True)
    record = {"mxnet_version": mx.__version__, "cases": {}}
    for case, sym, shape in _viz_cases(out.parent / "structure"):
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            mx.viz.print_summary(sym, shape=shape)
        dot = mx.viz.plot_network(sym, shape=shape).source
        record["cases"][case] = {"symbol": sym.tojson(), "shape": shape,
                                 "summary": text.getvalue(), "dot": dot}
    _write_gzip(out / "viz.json.gz", json.dumps(record, indent=1) + "\n")


# -- loss heads and custom operators ----------------------------------------------------------
def _loss_op_cases(rng: np.random.RandomState) -> list[tuple[str, str, dict, list[np.ndarray]]]:
    """(case, operator, attributes, [data, label]) for each loss head: grad_scale, several
    outputs per sample, labels shaped as data or flat, margins on both sides."""
    def u(*shape: int) -> np.ndarray:
        return rng.uniform(-2, 2, shape).astype(np.float32)

    classes = rng.randint(0, 4, (5,)).astype(np.float32)
    return [
        ("linreg", "LinearRegressionOutput", {}, [u(4, 3), u(4, 3)]),
        ("linreg_scaled_col", "LinearRegressionOutput", {"grad_scale": 0.5},
         [u(6, 1), u(6)]),
        ("linreg_4d", "LinearRegressionOutput", {}, [u(2, 3, 2, 2), u(2, 3, 2, 2)]),
        ("logreg", "LogisticRegressionOutput", {"grad_scale": 2.0},
         [u(4, 3), rng.randint(0, 2, (4, 3)).astype(np.float32)]),
        ("maereg", "MAERegressionOutput", {"grad_scale": 3.0}, [u(5, 2), u(5, 2)]),
        ("svm_l2", "SVMOutput", {}, [u(5, 4), classes]),
        ("svm_l1", "SVMOutput", {"use_linear": True, "margin": 0.5,
                                 "regularization_coefficient": 2.0}, [u(5, 4), classes]),
        ("svm_l2_margin", "SVMOutput", {"margin": 1.5, "regularization_coefficient": 0.5},
         [u(5, 4), classes]),
        ("makeloss", "MakeLoss", {}, [u(4, 3)]),
        ("makeloss_batch", "MakeLoss", {"grad_scale": 3.0, "normalization": "batch"}, [u(4, 3)]),
        ("makeloss_valid", "MakeLoss", {"grad_scale": 2.0, "normalization": "valid",
                                        "valid_thresh": 0.5}, [u(4, 3)]),
        ("makeloss_valid_none", "MakeLoss", {"normalization": "valid", "valid_thresh": 5.0},
         [u(2, 3)]),
        # Ties: MXNet's gradient is -1 where output == label (not sign's 0).
        ("maereg_ties", "MAERegressionOutput", {}, [np.array([[0, 1.5], [-2, 0]], np.float32),
                                                    np.array([[0, 1.5], [1, -1]], np.float32)]),
    ]


def write_loss_ops(out: Path) -> None:
    """Each loss head of `_loss_op_cases` bound by MXNet (every input takes a gradient):
    its output, and the input gradients of a backward without head gradients, in one
    `cases.npz` (`<case>:in_<i>`, `:out_0`, `:grad_<i>`) and `cases.json`."""
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.RandomState(16)
    arrays, cases = {}, {}
    for case, op, attrs, inputs in _loss_op_cases(rng):
        names = ["data", "label"][:len(inputs)]
        sym = getattr(mx.sym, op)(*[mx.sym.var(n) for n in names], name=case, **attrs)
        ex = sym.bind(mx.cpu(), {n: _nd(a) for n, a in zip(names, inputs, strict=True)},
                      args_grad={n: mx.nd.zeros(a.shape)
                                 for n, a in zip(names, inputs, strict=True)})
        ex.forward(is_train=True)
        ex.backward()
        arrays.update({f"{case}:in_{i}": a for i, a in enumerate(inputs)})
        arrays[f"{case}:out_0"] = ex.outputs[0].asnumpy()
        arrays.update({f"{case}:grad_{i}": ex.grad_dict[n].asnumpy() for i, n in enumerate(names)})
        cases[case] = {"op": op, "attrs": {k: str(v) for k, v in attrs.items()},
                       "label": sym.list_arguments()}
    np.savez_compressed(out / "cases.npz", **arrays)
    (out / "cases.json").write_text(json.dumps(cases, indent=1, sort_keys=True) + "\n")


def write_custom_op(out: Path) -> None:
    """`customnet-symbol.json` (`build_customnet(mx)`), and in `customnet.npz` its
    arguments (`arg:<name>`), MXNet's output and argument gradients (`grad:<name>`) of one
    training forward and backward, and `nd:in`/`nd:out`, the scaled relu run by
    `mx.nd.Custom`."""
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.RandomState(17)
    sym = build_customnet(mx)
    shapes = {"data": (4, 6), "softmax_label": (4,)}
    arg_shapes, _, _ = sym.infer_shape(**shapes)
    args = {n: rng.uniform(-1, 1, s).astype(np.float32)
            for n, s in zip(sym.list_arguments(), arg_shapes, strict=True)}
    args["softmax_label"] = np.array([0, 2, 1, 2], np.float32)
    ex = sym.bind(mx.cpu(), {n: _nd(a) for n, a in args.items()},
                  args_grad={n: mx.nd.zeros(a.shape) for n, a in args.items()})
    ex.forward(is_train=True)
    ex.backward()
    arrays = {f"arg:{n}": a for n, a in args.items()}
    arrays["output"] = ex.outputs[0].asnumpy()
    arrays.update({f"grad:{n}": g.asnumpy() for n, g in ex.grad_dict.items()})
    x = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    arrays["nd:in"] = x
    arrays["nd:out"] = mx.nd.Custom(_nd(x), op_type="fixture_scaled_relu", scale=0.5).asnumpy()
    np.savez_compressed(out / "customnet.npz", **arrays)
    sym.save(str(out / "customnet-symbol.json"))


# -- README ----------------------------------------------------------------------------------
# -- ONNX export -----------------------------------------------------------------------------
ONNX_MODELS = ["resnet18_v1", "resnet18_v2", "mobilenetv2_0.25", "squeezenet1.1", "mobilenet0.25",
               "densenet121", "inceptionv3"]


def _onnx_structure(path: str) -> dict:
    """What an ONNX file holds, less the weights' values: inputs, outputs, nodes, the
    initializers' names and shapes, and the opset."""
    import onnx  # noqa: PLC0415  (installed beside MXNet for this group only)
    from onnx import helper
    model = onnx.load(path)

    def info(value: onnx.ValueInfoProto) -> list:
        dims = value.type.tensor_type.shape.dim
        return [value.name, [d.dim_value if d.HasField("dim_value") else None for d in dims]]

    def attr(a: onnx.AttributeProto) -> object:
        value = helper.get_attribute_value(a)
        return value.decode() if isinstance(value, bytes) else (
            list(value) if isinstance(value, (list, tuple)) else value)

    return {
        "opset": [[o.domain, o.version] for o in model.opset_import],
        "inputs": [info(v) for v in model.graph.input],
        "outputs": [info(v) for v in model.graph.output],
        "initializers": [[t.name, list(t.dims)] for t in model.graph.initializer],
        "nodes": [{"op_type": n.op_type, "inputs": list(n.input), "outputs": list(n.output),
                   "attrs": {a.name: attr(a) for a in n.attribute
                             if a.type != onnx.AttributeProto.TENSOR}}
                  for n in model.graph.node],
    }


def write_onnx(out: Path) -> None:
    """`mx.onnx.export_model` of a few zoo nets (from the exported files, zero weights):
    the structure of each ONNX file, gzipped JSON."""
    import mxnet.onnx as mxonnx  # noqa: PLC0415  (needs onnx, which only this group uses)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in ONNX_MODELS:
            shape = (1, 3, 299, 299) if name == "inceptionv3" else (1, 3, 224, 224)
            net = _fresh(partial(vision.get_model, name))
            net.initialize(mx.init.Zero())
            net.hybridize()
            net(mx.nd.zeros(shape))
            prefix = Path(tmp) / name
            net.export(str(prefix), epoch=0)
            path = mxonnx.export_model(f"{prefix}-symbol.json", f"{prefix}-0000.params",
                                       [shape], np.float32, str(Path(tmp) / f"{name}.onnx"))
            structure = _onnx_structure(path)
            _write_gzip(out / f"{name}-onnx.json.gz", json.dumps(structure) + "\n")
            print(f"  {name}: {len(structure['nodes'])} ONNX nodes", flush=True)


GROUP_NOTES = {
    "quantize_net": "tools/mxnet_quantize_net_fixtures.py: `cases.json` (each case's "
                    "quantize_net_v2 / quantize_net arguments on the gluon group's `cnn`, and "
                    "the quantized block's operators with their calibration ranges), "
                    "`outputs.npz` (`calib` and `eval` images, each case's outputs on `eval`).",
    "gluon_data": "tools/mxnet_gluon_data_fixtures.py: `transforms.npz` (a seeded image and "
                  "batch, and what each deterministic `gluon.data.vision.transforms` case of "
                  "`cases.json` makes of them), `loaders.json` (DataLoader batches, dataset "
                  "selections, RandomSampler orders), `folder/` and `folder.json` "
                  "(ImageFolderDataset; ImageRecordDataset of `recordio/gray.rec`).",
    "gluon": "tools/mxnet_gluon_fixtures.py: `cnn` / `twoio` (`<net>-symbol.json`, "
             "`-0000.params`: HybridBlocks exported by MXNet); `gluon.npz`: their inputs "
             "`<net>:b<batch>:in:<name>` and MXNet's `SymbolBlock.imports` outputs "
             "`:out<k>`, with `hybridize(backend='MKLDNN')` (`<net>:mkldnn:out<k>`), after "
             "writes to parameters (`<net>:written_<plain|mkldnn>:out<k>`) and cast to "
             "float64; `gluon.json`: parameters (names, shapes, dtypes, grad_req) as "
             "imported, after infer_shape, cast to float16 and initialized, selections, "
             "repr, summary, `save_parameters` keys (`<net>-saved.params`) and MXNet's "
             "errors (`cnn-missing.params`, `cnn-extra.params`); `minimx_<net>-*`: what "
             "minimx's `export` writes, and `minimx_export.json` what MXNet made of it.",
    "gap_ops": "`cases.json` / `cases.npz` (tools/mxnet_more_ops_fixtures.py): late-added dense "
               "operators (creation, _split_v2, slice assignment, _histogram, straight-through "
               "and legacy indexing ops, preloaded_multi_*sgd*, Convolution_v1 / Pooling_v1 / "
               "BatchNorm_v1), laid out "
               "as tensor_ops; `legacy_net.json` / `legacy_net.npz` (`in:<arg>`, `output`): "
               "the three legacy layers chained; `optimizers.json` / `optimizers.npz`: the "
               "multi-tensor AdamW / LAMB / group AdaGrad updates over three steps; "
               "`images.npz`: the `_cv*` image operators on OpenCV-encoded images; "
               "`kl_sparse_reg.json` / `.npz`: IdentityAttachKLSparseReg's training steps; "
               "`zipfian.json`: statistics of MXNet's `_sample_unique_zipfian` draws.",
    "test_utils": "`test_utils.json` / `test_utils.npz` (tools/mxnet_legacy_fixtures.py): "
                  "MXNet's almost_equal and assert_almost_equal (message up to the "
                  "arrays) on fixed pairs, check_numeric_gradient's verdict on right and "
                  "wrong custom gradients, the rand_* helpers after np.random.seed(5), and "
                  "a seeded check_symbolic_backward with grad_req 'add'.",
    "feedforward": "`feedforward.npz` / `feedforward.json` "
                   "(tools/mxnet_legacy_fixtures.py): an MLP trained by "
                   "mx.model.FeedForward from fixed parameters on unshuffled data (SGD "
                   "with momentum; and with epoch_size): trained parameters, predictions, "
                   "the callbacks' epochs and batch numbers, validation accuracies, score.",
    "autograd": "`cases.json` / `cases.npz` (tools/mxnet_autograd_fixtures.py): per case the "
                "source of a program recorded under `mx.autograd.record()`, `<case>:in:<x>`, "
                "`:head:<j>`, `:head_grad:<j>` and the gradients `:grad:<x>` (and the "
                "no-gradient `c_*` inputs afterwards, `:after:<x>`) MXNet's backward gives; "
                "cases include pause inside record and a custom Function; `scenarios.json` / "
                "`scenarios.npz`: grad_req 'add', retain_graph, `autograd.grad`, the "
                "recording / training modes, get_symbol, MXNet's error messages and a "
                "linear regression trained by SGD (the sources of the last two inside).",
    "control_flow": "`cases.json` (tools/mxnet_control_flow_fixtures.py): per case the source "
                    "of a program using contrib.foreach / while_loop / cond, its input shapes "
                    "and MXNet's symbol JSON; `arrays.npz`: `<case>:<set>:in:<x>`, `:out:<j>` "
                    "(bound symbol), `:head:<j>`, `:grad:<x>` and `:nd:<j>` (NDArray forms).",
    "rnn_cells": "`rnn_cells.json`: per case of `CELL_CASES` (tools/mxnet_rnn_fixtures.py) "
                 "the cell expression, unroll arguments, argument names and shapes, outputs, "
                 "internals and state_info; `lm`: the corpus, settings, per-batch training "
                 "perplexities and validation perplexities of a BucketingModule LSTM model. "
                 "`rnn_cells.npz`: `<case>:in:<arg>`, `<case>:out:<k>` (MXNet's outputs, then "
                 "states), fused cases' `:unpacked:<name>` and `:init_one`; `lm:init:<p>`, "
                 "`lm:trained:<p>`; `fused_init:<case>`: the parameters mx.init.FusedRNN "
                 "makes per `FUSED_INIT_CASES` (listed under `fused_init` in the JSON).",
    "image": "Source images, `iter.rec` / `iter.idx` / `iter.lst` / `files/`; `cases.json` "
             "lists each call, `results.npz` what MXNet returned "
             "(tools/mxnet_image_fixtures.py).",
    "image_ops": "tools/mxnet_image_op_fixtures.py: `cases.json` / `cases.npz` (`<case>:in_0`, "
                 "`:out_0`, graded cases' `:head_0` and `:grad_0`) of the `_image_*` "
                 "operators on seeded HWC / NHWC uint8 and float32 images (random ones with "
                 "their factor pinned; flips with out= a copy of the input); "
                 "`transforms-symbol.json` / `transforms.npz`: Gluon's CropResize, Resize, "
                 "ToTensor and Normalize hybridized, an image batch and MXNet's output; "
                 "`errors.json`: bad inputs with a fragment of MXNet's message.",
    "imagedet": "`det.rec` / `det.idx` / `det.lst` / `files/` (detection labels, header 2, "
                "objects of 5), `wide.rec` (header 4, objects of 6), `det_ids.lst`; "
                "`cases.json` lists the rotations, detection augmenters (under a seeded "
                "`random`), CreateDetAugmenter lists, ImageDetIter and ImageDetRecordIter "
                "cases; `results.npz` what MXNet returned (tools/mxnet_imagedet_fixtures.py).",
    "recordio": "`raw.rec` / `raw.idx`: `mx.recordio.MXIndexedRecordIO` of the raw and "
                "packed records listed (hex) in `cases.json`; `mnist-*-ubyte`: a synthetic "
                "idx pair; `<name>.rec` / `.idx`: PNG (JPEG for `jpeg`) image records; "
                "`mean.nd`: a mean image. `cases.json` lists each MNISTIter and "
                "ImageRecordIter case (arguments, pads per epoch; `iter`: the uint8 / int8 "
                "and _v1 iterators of `ITER_CASES`); `batches.npz` holds "
                "`<case>:<epoch>:<batch>:data` / `:label` (tools/mxnet_recordio_fixtures.py).",
    "loss_ops": "`cases.npz`: each case of `_loss_op_cases()` in the script (the regression "
                "outputs, SVMOutput, MakeLoss) bound by MXNet: inputs `<case>:in_<i>`, the "
                "output `:out_0` and the input gradients `:grad_<i>` of a backward without "
                "head gradients; `cases.json` gives each case's operator and attributes.",
    "custom_op": "`customnet-symbol.json`: `build_customnet(mx)` (two Python custom operators "
                 "in tools/custom_op_defs.py); `customnet.npz`: its arguments `arg:<name>`, "
                 "MXNet's `output` and gradients `grad:<name>` of one training pass, and "
                 "`nd:in` / `nd:out` of an imperative `mx.nd.Custom` call.",
    "quantization": "`thresholds.json`: `_get_optimal_threshold` (min, max, threshold, "
                    "divergence) of the arrays in `threshold-arrays.npz` (normal, relu'd, "
                    "Cauchy) for several quantized dtypes. `calibnet-*`: a conv-relu-fc "
                    "checkpoint, three batches (`arr_0..2`), MXNet's layer ranges "
                    "(`calibnet-ranges.json`, by `<mode>-<dtype>-<num_calib_examples>`) and "
                    "its merged entropy histograms (`<layer>:counts`, `min`, `max`, "
                    "`threshold`).",
    "params": "NDArray list files written by `mx.nd.save` (V2 records) / `mx.npx.save` "
              "(`v3_np_shape`, V3), each beside a `.npz` of the same arrays. `dtypes_*`: "
              "float32/64/16, uint8, int8, int32, int64, bool with extreme values; "
              "`sparse`: row_sparse and csr records (the `.npz` holds them dense); "
              "`bfloat16`: flag 12 (the `.npz` holds MXNet's view, dtype "
              "`[('bfloat16','<u2')]`); `empty_list`: zero arrays.",
    "models": "Model-zoo nets with seeded weights (Xavier, BatchNorm parameters and "
              "statistics randomized), from `net.export`. `-io.npz` has `data` and MXNet's "
              "inference `output` (run through a symbol executor from the exported files). "
              "`_c10` nets have 10 classes (mobilenetv2_0.25 is the zoo configuration, "
              "mobilenet0.125 the zoo class at half of mobilenet0.25's width); the `_narrow` "
              "ones use the zoo classes (ResNetV1/BasicBlockV1, ResNetV2/BottleneckV2, "
              "DenseNet) with few channels so the weights stay small.",
    "structure": "For each model-zoo net (1000 classes): `net.export` symbol JSON, gzipped "
                 "(weights not kept), and `-info.json.gz` with list_arguments, "
                 "list_auxiliary_states, list_outputs, arg/aux/output shapes inferred by "
                 "MXNet for `input_shape`, node count and op histogram.",
    "handnet": "`build_handnet()` in the script: Convolution, BatchNorm, Activation, "
               "Deconvolution, Pooling (max, avg), LeakyReLU, Concat, elemwise_add, Flatten, "
               "FullyConnected, SoftmaxOutput, Reshape, softmax; `mx.model.save_checkpoint` "
               "files. `handnet-io.npz`: `data`, `softmax_label`, `infer_out_<i>`, "
               "`train_out_<i>` (is_train=True), and for head gradients `ones` and `rand`: "
               "`head_grad_<kind>_<i>` and `grad_<kind>:<arg>` (grad_req write, one backward "
               "from the initial parameters), `aux_after_train:<name>`.",
    "quantization_ops": "One `<case>.npz` per case of `_op_cases()` in the script: inputs "
                        "`in_<i>` and MXNet's outputs `out_<i>`; `cases.json` gives each case's "
                        "operator and attributes.",
    "quantized_net": "`build_qnet()` (conv-bn-relu, conv+sum+relu, max pool, FC) quantized by "
                     "`quantize_model_mkldnn` with `calib_mode` naive (tensor-wise, and "
                     "channel-wise: `naive_channel`) and none "
                     "(`qnet_<mode>-symbol.json`, `-0000.params`); `qnet_<mode>-io.npz`: `data`, "
                     "`fp32_output` (the float net), `output` (MXNet's quantized net) and `calib` "
                     "(the calibration data, in batches of 2). "
                     "`qnet-symbol.json`: the float net; "
                     "`qnet_fp32_mkldnn`: the float net as MXNet's MKLDNN backend partitions it.",
    "amp": "`mx.contrib.amp.convert_symbol(sym, target_dtype='bfloat16', **kwargs)` of "
           "`<net>-symbol.json.gz` (`ampnet`: `build_ampnet()` in the script; `resnet18_v1`: "
           "the zoo's, from `structure/`) for each case of `cases.json`: "
           "`<net>-<case>-amp.json.gz`. `resnet18_v1_narrow_bf16[_optional]`: "
           "`convert_model` of `models/resnet18_v1_narrow` (cast_optional_params False / "
           "True): its symbol, the checkpoint with bfloat16 parameters (True; with False "
           "the parameters stay those of `models/`) and `-io.npz` (`data`, MXNet's "
           "float32 `output` of the converted net). `bf16_outputs.npz` / "
           "`bf16_agreement.json`: each `models` net converted (defaults) and run by MXNet "
           "on the `int8_agreement` evaluation images (`<name>:bf16`), and its figures "
           "against MXNet's fp32 outputs.",
    "quantized_plain": "`qnet_plain-symbol.json`: the quantized_net group's float net "
                       "quantized by plain `quantize_model` (no fusion; uint8, naive "
                       "calibration without MXNet's MKLDNN backend in the calibration bind; "
                       "BatchNorms excluded).",
    "quantize_graph": "MXNet's two-step flow (`quantize_graph`, a Module run with "
                      "`collector.collect` as its executor's monitor callback, "
                      "`monitor_all=True`, no subgraph backend; `calib_graph`): "
                      "`calibnet_<mode>` checkpoints of the quantization group's calibnet, "
                      "conv0 excluded (naive/auto, entropy/int8, customize/uint8 with a "
                      "recording collector) and `qnet_plain` of the quantized_net group's "
                      "float net (smart, uint8, naive, BatchNorms excluded); "
                      "`collectors.json`: the "
                      "`include_layer` of the naive and entropy collectors and the names "
                      "the customize collector was shown over one batch.",
    "int8_agreement": "Each `models` net quantized by `quantize_model_mkldnn` (naive, "
                      "`auto`, first convolution excluded) on 16 calibration images: "
                      "`<name>-int8-symbol.json.gz` (the quantized graph), `outputs.npz` "
                      "(`<name>:fp32`, `<name>:int8`: MXNet's outputs on 48 evaluation "
                      "images) and `agreement.json` (the images' seeds, `agreement_images()` "
                      "in the script; top-1 agreement and cosines of INT8 against fp32).",
    "tensor_ops": "`cases.npz`: each case of `_tensor_op_cases()` in the script (slices, "
                  "broadcasts, indexing, ordering, comparisons, unary math, cumsum, "
                  "moments): inputs "
                  "`<case>:in_<i>`, MXNet's outputs `:out_<i>` and, for cases that take "
                  "gradients, head gradients `:head_<i>` and input gradients `:grad_<i>`; "
                  "`cases.json` gives each case's operator and attributes.",
    "more_ops": "`cases.npz` and `cases.json` as in `tensor_ops/`, for the cases of "
                "`_more_op_cases()` in the script (softmin, softsign, hypot, GroupNorm, "
                "gather_nd / scatter_nd and the other coordinate indexing, the `_linalg_` "
                "family, khatri_rao, all_finite, multi_sum_sq, Crop); no gradients for the "
                "operators and cases of `UNGRADED`.",
    "extra_ops": "`cases.npz` and `cases.json` as in `more_ops/`, for the cases of "
                 "`_extra_op_cases()` in the script (CTCLoss, im2col / col2im, linalg gelqf, "
                 "syevd, extracttrian, maketrian).",
    "model_ops": "One `<case>.npz` per case of `_model_op_cases()` in the script (issue 15's "
                 "detection, resizing, sequence, attention and RNN operators; GridGenerator, "
                 "BilinearSampler, SpatialTransformer, Correlation): inputs `in_<i>`, "
                 "MXNet's outputs `out_<i>`, and for some cases head gradients `head_<i>` and "
                 "MXNet's input gradients `grad_<i>`; `cases.json` gives each case's operator and "
                 "attributes.",
    "optimizer_ops": "`cases.npz` / `cases.json` (tools/mxnet_optimizer_op_fixtures.py): "
                     "the optimizer update operators, three steps each with out=weight: "
                     "inputs `<case>:in_<i>`, every input after step k `:step<k>_<i>` "
                     "(`:step<k>_out` for lamb_update_phase1). `contrib_multi.npz` / "
                     "`.json`: mx.nd.contrib.multi_(mp_)adamw_update and multi_(mp_)lamb_update "
                     "over two weights, three steps (`<case>:in:<list>:<i>`, "
                     "`:step<k>:<list>:<i>`).",
    "random_ops": "`cases.npz` and `cases.json` as in `more_ops/`, for the cases of "
                  "`random_op_cases()` in `tools/mxnet_random_fixtures.py` (the densities "
                  "`_random_pdf_*`, `_mod`, `broadcast_mod`, `_mod_scalar`, `_rmod_scalar`).",
    "detection_ops": "As `model_ops/`, for the cases of `detection_op_cases()` in "
                     "tools/mxnet_detection_fixtures.py: the contrib operators of MXNet's SSD, "
                     "Faster R-CNN and R-FCN examples (MultiBox*, Proposal, MultiProposal, "
                     "PSROIPooling, SyncBatchNorm, BatchNormWithReLU).",
    "deformable_ops": "As `model_ops/`, for the cases of `deformable_op_cases()` in "
                      "tools/mxnet_deformable_fixtures.py: _contrib_DeformableConvolution "
                      "and _contrib_DeformablePSROIPooling (with gradients), "
                      "_contrib_ModulatedDeformableConvolution (outputs only: MXNet has no "
                      "CPU backward for it).",
    "monitor": "tools/mxnet_monitor_fixtures.py: `monitor.json` (per case its symbol, "
               "shapes, grad_req and the rows MXNet's executor monitor callback gave during "
               "backward, with and without monitor_all: name, shape, norm/sqrt(size); a "
               "Module's mx.mon.Monitor rows) and `monitor.npz` (`<case>/<name>`: "
               "arguments and head gradients).",
    "module_functions": "tools/mxnet_module_functions_fixtures.py: `cases.json.gz` (per kind "
                        "of call its cases: arguments, MXNet's value or error type, message "
                        "and the fragment minimx's must hold; symbols' nodes and values; "
                        "Features' names, bulk sizes, util's answers, mx.nd.op / mx.sym.op "
                        "names); `list.params` / `dict.params`: `mx.nd.save` files for "
                        "`load_frombuffer`.",
    "multi_context": "tools/mxnet_multi_context_fixtures.py: `cases.json` (per case the "
                     "slices, metric values and shapes) and `arrays.npz` (`<case>:<name>`: "
                     "outputs, parameters, auxiliary states, gradients) of mx.mod.Module "
                     "over 1-3 CPU contexts (the batch split by work_load_list, gradients "
                     "summed in a 'local' kvstore), trained, fitted, scored and predicted.",
    "int8_rnn": "tools/mxnet_int8_rnn_fixtures.py: `quantized_rnn.json` (per case the RNN "
                "parameters, data scale and shift) and `quantized_rnn.npz` (`<case>:data`, "
                "`:parameters`, `:state`, `:state_cell` and MXNet's outputs `:out<i>`) of "
                "_contrib_quantized_rnn run imperatively, with DNNL_MAX_CPU_ISA=AVX512_CORE; "
                "`lm_<graph>` float LSTM / GRU / RNN language models, `lm_<case>` their "
                "quantized graphs from each quantization flow, and `lm.npz` / `lm.json` "
                "their data, quantized parameters and MXNet's outputs.",
    "transformer": "tools/mxnet_transformer_fixtures.py: `<case>-symbol.json` and `<case>.npz` "
                   "(in_<i>, out_<i>) per operator case (_sg_mkldnn_selfatt_qk / _valatt "
                   "float32 and quantized, _contrib_quantize_asym, "
                   "_contrib_quantized_elemwise_mul, _contrib_quantized_embedding); "
                   "`encoder_fp32` / `encoder_int8` checkpoints of a self-attention block "
                   "partitioned by MXNet's MKLDNN backend and quantized by "
                   "quantize_model_mkldnn (naive), with `-io.npz` (data, output).",
    "legacy": "`legacy08-symbol.json`: MXNet 0.8-style JSON written by hand (`legacy_json()` "
              "in the script). `legacy08-expected.json`: what MXNet 1.9.1 makes of it "
              "(names, attr_dict, shapes, upgraded JSON). `legacy08-0000.params` (arg:/aux: "
              "names) and `legacy08-io.npz` (`data`, `output`) give a numeric check.",
    "training": "`training.json` (with `training-arrays.npz`): statistics (values when "
                "small) of each initializer of `INIT_CASES` under a seed; `OPTIMIZER_CASES`: "
                "the weight after each update on fixed gradients (`setup`: the parameter's "
                "name, lr_mult and lr_scheduler, a reused gradient array), then "
                "`LATER_OPTIMIZER_CASES` (LBSGD, ccSGD, Test) likewise; `sgld`: SGLD's "
                "weights after each update with the update's noise taken off, and the "
                "noise's standard deviations; "
                "`SCHEDULER_CASES`: the "
                "learning rate at each update; the lr / wd multipliers an optimizer takes "
                "from a symbol's attributes and names; `METRIC_CASES`: get / get_global "
                "after each of two batches and after reset_local; `build_fitnet()` trained "
                "by Module.fit (2 epochs, SGD with momentum and Adam) from fixed parameters: "
                "parameters, score and predictions.",
    "viz": "`viz.json.gz`: per case (`_viz_cases()` in the script: the handnet with and "
           "without shapes, three zoo nets from `structure/`), the symbol JSON, the input "
           "shapes, `mx.viz.print_summary`'s printed text and `mx.viz.plot_network`'s DOT "
           "source.",
    "io": "`ndarrayiter.json`: `mx.io.NDArrayIter` cases (`_io_cases()` in the script): "
          "each input (kind single/list/dict, values, dtype, whether an NDArray), the "
          "arguments, the steps taken (epoch, next, reset, hard_reset), provide_data / "
          "provide_label, and what each step gave (batches: data, label, pad, index).",
    "onnx": "`mx.onnx.export_model` (MXNet 1.9.1's exporter, onnx 1.13.1) of the zoo nets of "
            "`ONNX_MODELS` in the script, exported with zero weights: `<name>-onnx.json.gz` "
            "holds the opset, inputs and outputs (names, dims), initializers (names, dims) and "
            "every node (op_type, inputs, outputs, attributes).",
    "families_int8": "`FAMILIES_INT8` in the script quantized by `quantize_model_mkldnn` "
                     "(naive, `auto`, GluonCV's exclusions) from the `families` graphs and "
                     "seeded weights: `<name>-int8-symbol.json.gz`; `FAMILIES_BF16` converted by "
                     "`amp.convert_model`: `<name>-bf16-symbol.json.gz` (`-bf16-error.txt`: "
                     "MXNet's refusal); `int8_outputs.npz` "
                     "(MXNet's INT8 `<name>:output0` and NMS inputs `<name>:internal:<n>` "
                     "on a seeded image, float16); `families_int8.json` (image seed and "
                     "digest, exclusions, digests of MXNet's quantized parameters and "
                     "of its dequantize nodes' outputs, bfloat16's distance from float32).",
    "families": "GluonCV 0.10.5 / GluonNLP 0.10.0 detectors, segmenters, pose, backbones, BERT, "
                "RoBERTa and LSTM language models, exported by MXNet with weights made by "
                "`tools/seeded_weights.py`: `<name>-symbol.json.gz`, `<name>.json` (inputs, "
                "parameter shapes, weight gain, internal outputs kept), `<name>-io.npz` (inputs, "
                "`output<i>`, `internal:<name>`: the inputs of NMS, float16 when large).",
}


def write_readme(root: Path) -> None:
    sections, total = [], 0
    for group, note in GROUP_NOTES.items():
        files = sorted(p for p in (root / group).rglob("*") if p.is_file())
        if not files:
            continue
        size = sum(p.stat().st_size for p in files)
        total += size
        sections += [f"## {group}/ ({size / 1024:.0f} KiB)", "", note, "",
                     "| file | bytes |", "|---|---:|"]
        sections += [f"| {p.relative_to(root / group)} | {p.stat().st_size} |" for p in files]
        sections.append("")
    header = ["# Test fixtures written by MXNet 1.9.1", "",
              f"Total: {total / 1024:.0f} KiB. Generated by `tools/mxnet_fixtures.py` (see its "
              "docstring for the virtualenv); rerun the script rather than editing by hand. "
              "Seeds are fixed, so a rerun reproduces the arrays.", "",
              "`.npz` convention: arrays of a list file are `arr_0, arr_1, ...`; those of a "
              "dict file are keyed by name, in file order.", ""]
    (root / "README.md").write_text("\n".join(header + sections))


# -- the minimx -> MXNet direction -----------------------------------------------------------
def _same(got: mx.nd.NDArray, want: np.ndarray) -> str:
    value = got.asnumpy()
    if value.dtype != want.dtype or value.shape != want.shape:
        return f"{value.dtype}{value.shape} != {want.dtype}{want.shape}"
    return "" if value.tobytes() == want.tobytes() else "values differ"


def check_minimx_params(directory: Path) -> bool:
    files = sorted(directory.glob("*.params"))
    if not files:
        print(f"no .params files in {directory}")
        return False
    all_ok = True
    for path in files:
        npz_path = path.with_suffix(".npz")
        try:
            loaded = mx.nd.load(str(path))
            with np.load(npz_path) as npz:
                want = {k: npz[k] for k in npz.files}
            if isinstance(loaded, dict):
                got = loaded
            else:
                got = {f"arr_{i}": v for i, v in enumerate(loaded)}
            problems = [] if list(got) == list(want) else [f"keys {list(got)} != {list(want)}"]
            for key in got.keys() & want.keys():
                problem = _same(got[key], want[key])
                if problem:
                    problems.append(f"{key}: {problem}")
        except Exception as exc:  # report every file, whatever MXNet raises on one
            problems = [f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1]}"]
        all_ok &= not problems
        print(f"{'OK  ' if not problems else 'FAIL'} {path.name}"
              + ("" if not problems else ": " + "; ".join(problems)))
    return all_ok


GROUPS = {"params": write_params, "models": write_models, "structure": write_structure,
          "handnet": write_handnet, "legacy": write_legacy, "io": write_io,
          "quantization_ops": write_quantization_ops, "quantized_net": write_quantized_net,
          "quantization": write_quantization, "int8_agreement": write_int8_agreement,
          "families": write_families, "families_int8": write_families_int8,
          "tensor_ops": write_tensor_ops,
          "more_ops": partial(write_tensor_ops, make_cases=_more_op_cases),
          "extra_ops": partial(write_tensor_ops, make_cases=_extra_op_cases),
          "model_ops": write_model_ops,
          "detection_ops": partial(write_model_ops, make_cases=detection_op_cases),
          "deformable_ops": partial(write_model_ops, make_cases=deformable_op_cases),
          "random_ops": partial(write_tensor_ops, make_cases=random_op_cases),
          "optimizer_ops": write_optimizer_ops,
          "amp": write_amp, "training": write_training,
          "quantized_plain": write_quantized_plain, "quantize_graph": write_quantize_graph,
          "viz": write_viz, "onnx": write_onnx,
          "loss_ops": write_loss_ops, "custom_op": write_custom_op,
          "rnn_cells": write_rnn_cells, "test_utils": write_test_utils,
          "feedforward": write_feedforward, "recordio": write_recordio,
          "image": write_image, "image_ops": write_image_ops, "imagedet": write_imagedet,
          "transformer": write_transformer, "control_flow": write_control_flow,
          "autograd": write_autograd,
          "gap_ops": write_gap_ops, "int8_rnn": write_int8_rnn,
          "multi_context": write_multi_context, "monitor": write_monitor,
          "module_functions": write_module_functions, "gluon": write_gluon,
          "gluon_data": write_gluon_data, "quantize_net": write_quantize_net}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="fixtures root, e.g. tests/fixtures")
    parser.add_argument("--only", default=",".join(GROUPS),
                        help=f"comma-separated groups (default all: {','.join(GROUPS)})")
    parser.add_argument("--check-minimx-params", type=Path, metavar="DIR",
                        help="load DIR/*.params with MXNet and compare with DIR/*.npz")
    args = parser.parse_args(argv)
    if args.check_minimx_params:
        return 0 if check_minimx_params(args.check_minimx_params) else 1
    if not args.out:
        parser.error("give --out DIR or --check-minimx-params DIR")
    for group in args.only.split(","):
        if group not in GROUPS:
            parser.error(f"unknown group {group!r} (known: {', '.join(GROUPS)})")
        print(f"writing {group}/", flush=True)
        GROUPS[group](args.out / group)
    write_readme(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
