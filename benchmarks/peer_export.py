"""Export the benchmark models for the peer runtimes; runs in MXNet's venv.

Usage: <mxnet venv python> peer_export.py DIR MODEL [MODEL ...]
For each gluon model-zoo MODEL, writes the checkpoint DIR/MODEL-fp32 (seeded
random weights, `dnnl_mxnet_worker.fp32_checkpoint`) and DIR/MODEL.onnx,
the same weights through MXNet 1.9.1's own exporter (`mx.onnx.export_model`,
batch dimension dynamic), which ONNX Runtime and OpenVINO read. MXNet
1.9.1's exporter works with onnx 1.13.1 (and numpy < 1.24 for MXNet).
"""
import sys
from pathlib import Path

import mxnet as mx
import numpy as np
import onnx
from dnnl_mxnet_worker import fp32_checkpoint  # beside this script

SHAPE = (1, 3, 224, 224)
# He's scale (a trained network's): with Xavier's, activations shrink layer by
# layer (MobileNet v1's outputs near 1e-19), on the way to denormal floats.
INIT = mx.init.Xavier(rnd_type="gaussian", factor_type="in", magnitude=2)


def export(model: str, out: Path) -> None:
    sym, args, auxs = fp32_checkpoint(model, SHAPE[0], out, INIT)
    path = str(out / f"{model}.onnx")
    mx.onnx.export_model(sym, {**args, **auxs}, in_shapes=[SHAPE], in_types=[np.float32],
                         onnx_file_path=path, dynamic=True,
                         dynamic_input_shapes=[(None, *SHAPE[1:])])
    # MXNet lists the weights among the graph's inputs too, as older ONNX did;
    # ONNX Runtime then keeps them overridable and folds no BatchNorm into them.
    proto = onnx.load(path)
    weights = {w.name for w in proto.graph.initializer}
    kept = [i for i in proto.graph.input if i.name not in weights]
    del proto.graph.input[:]
    proto.graph.input.extend(kept)
    onnx.save(proto, path)


if __name__ == "__main__":
    for name in sys.argv[2:]:
        export(name, Path(sys.argv[1]))
