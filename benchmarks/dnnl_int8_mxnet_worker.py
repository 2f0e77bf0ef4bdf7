"""MXNet 1.9.1 side of benchmarks/dnnl_int8_models.py; runs in MXNet's venv.

Usage:
  <mxnet venv python> dnnl_int8_mxnet_worker.py export MODEL BATCH DIR
      Builds the gluon model-zoo network with random weights (Xavier) and
      quantizes it with quantize_model_mkldnn: naive calibration on random
      data, first convolution excluded (as MXNet's examples do), uint8/int8
      by `auto`. Writes DIR/MODEL-fp32 and DIR/MODEL-int8 checkpoints.
  <mxnet venv python> dnnl_int8_mxnet_worker.py serve PREFIX BATCH
      Binds the checkpoint PREFIX (epoch 0) for data (BATCH, 3, 224, 224) (or
      the shape in PREFIX-shape.json), prints "ready", then answers each line N
      on stdin as worker_protocol.py describes.
"""
import json
import sys
from pathlib import Path

import mxnet as mx
import numpy as np
from dnnl_mxnet_worker import MXNetSession, bind_checkpoint, fp32_checkpoint  # beside this script
from mxnet.contrib.quantization import quantize_model_mkldnn
from worker_protocol import serve_forwards  # one protocol for all workers


def export(model: str, batch: int, out: Path) -> None:
    sym, args, auxs = fp32_checkpoint(model, batch, out)
    first_conv = next(n["name"] for n in json.loads(sym.tojson())["nodes"]
                      if n["op"] == "Convolution")
    calib = np.random.RandomState(0).uniform(0, 1, (16, 3, 224, 224)).astype("float32")
    qsym, qargs, qauxs = quantize_model_mkldnn(
        sym, args, auxs, ctx=mx.cpu(), calib_mode="naive", quantized_dtype="auto",
        excluded_sym_names=[first_conv], calib_data=mx.io.NDArrayIter(calib, batch_size=8),
        num_calib_examples=16, label_names=None)
    mx.model.save_checkpoint(str(out / f"{model}-int8"), 0, qsym, qargs, qauxs)


def serve(prefix: str, batch: int) -> None:
    backend = "MKLDNN_QUANTIZE" if "int8" in prefix else "MKLDNN"
    serve_forwards(MXNetSession(bind_checkpoint(prefix, batch, backend)))


if __name__ == "__main__":
    if sys.argv[1] == "export":
        export(sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]))
    else:
        serve(sys.argv[2], int(sys.argv[3]))
