"""MXNet 1.9.1 side of benchmarks/dnnl_throughput.py; runs in MXNet's venv.

Usage: <mxnet venv python> dnnl_mxnet_worker.py MODEL BATCH MODE [PREFIX]
MODE ``mkldnn``: the MKLDNN subgraph backend (fused, weight-cached);
``off``: MXNET_MKLDNN_ENABLED=0 must be set by the caller (plain kernels).
Binds the checkpoint PREFIX (epoch 0, as `fp32_checkpoint` writes it) or,
without one, the gluon model-zoo network with random weights, then serves
forwards (worker_protocol.py).
"""
import sys
from pathlib import Path

import mxnet as mx
import numpy as np
from mxnet.gluon.model_zoo import vision
from worker_protocol import serve_forwards  # beside this script: one protocol for all workers


class MXNetSession:
    """A bound executor whose argument ``data`` is the input (worker_protocol.Session)."""

    def __init__(self, ex) -> None:
        self.ex = ex

    def forward(self) -> None:
        self.ex.forward(is_train=False)[0].wait_to_read()

    def set_input(self, data: np.ndarray) -> None:
        self.ex.arg_dict["data"][:] = data

    def output(self) -> np.ndarray:
        return self.ex.outputs[0].asnumpy()


def fp32_checkpoint(model: str, batch: int, out: Path, init=None) -> tuple:
    """Gluon's `model` with seeded random weights (`init`, default Xavier), saved
    as the checkpoint out/MODEL-fp32 (epoch 0); returns its symbol, args and auxs."""
    out.mkdir(parents=True, exist_ok=True)
    mx.random.seed(0)
    net = vision.get_model(model)
    net.initialize(init or mx.init.Xavier())
    net(mx.nd.zeros((batch, 3, 224, 224)))   # completes the deferred initialization
    sym = net(mx.sym.var("data"))
    params = net.collect_params()
    # Copied out of oneDNN's layouts (which save_checkpoint refuses).
    args = {n: mx.nd.array(params[n].data().asnumpy()) for n in sym.list_arguments()
            if n in params}
    auxs = {n: mx.nd.array(params[n].data().asnumpy()) for n in sym.list_auxiliary_states()}
    mx.model.save_checkpoint(str(out / f"{model}-fp32"), 0, sym, args, auxs)
    return sym, args, auxs


def bind_checkpoint(prefix: str, batch: int, backend: str | None):
    """The checkpoint `prefix` (epoch 0) bound for data (BATCH, 3, 224, 224),
    partitioned by MXNet's `backend` when given."""
    sym, args, auxs = mx.model.load_checkpoint(prefix, 0)
    if backend:
        sym = sym.get_backend_symbol(backend)
    feeds = {**args, "data": mx.nd.random.uniform(shape=(batch, 3, 224, 224))}
    return sym.bind(mx.cpu(), {n: feeds[n] for n in sym.list_arguments()}, grad_req="null",
                    aux_states=auxs)


def zoo_executor(model: str, batch: int, backend: str | None):
    """Gluon's `model` with random weights (Xavier), bound for data (BATCH, 3, 224, 224)."""
    net = vision.get_model(model)
    net.initialize(mx.init.Xavier())
    shape = (batch, 3, 224, 224)
    net(mx.nd.zeros(shape))   # completes the deferred initialization
    sym = net(mx.sym.var("data"))
    if backend:
        sym = sym.get_backend_symbol(backend)
    ex = sym.simple_bind(mx.cpu(), grad_req="null", data=shape)
    params = net.collect_params()
    for name, arr in {**ex.arg_dict, **ex.aux_dict}.items():
        if name in params:
            arr[:] = params[name].data()
    ex.arg_dict["data"][:] = mx.nd.random.uniform(shape=shape)
    return ex


def main() -> None:
    model, batch, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    backend = "MKLDNN" if mode == "mkldnn" else None
    ex = (bind_checkpoint(sys.argv[4], batch, backend) if len(sys.argv) > 4
          else zoo_executor(model, batch, backend))
    serve_forwards(MXNetSession(ex))


if __name__ == "__main__":
    main()
