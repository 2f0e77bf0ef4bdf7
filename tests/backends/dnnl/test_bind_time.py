"""A DNNL bind infers each graph once and compiles the oneDNN plans then: what
oneDNN refuses is raised by bind, naming the node, not by the first forward."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import minimx as mx
from minimx import onednn
from minimx.backends.dnnl.lower import Lowering
from tests.executor.test_bind_once import Counts, _net


def test_one_dnnl_bind_builds_and_infers_each_graph_once(monkeypatch):
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "DNNL")
    net = _net()
    counts = Counts(monkeypatch)
    ex = net.simple_bind(mx.cpu(), grad_req="null", data=(2, 3, 8, 8))
    # Graphs: the user's (16 nodes); the DNNL node's inner graph, which takes
    # the whole net, before (16) and after (14) fusing the conv chain; the
    # partitioned graph (data, softmax_label, the DNNL node and its 8 other
    # inputs: 11); the conv chain's graph (10). Each is built once; the
    # user's, the partitioned one, the DNNL node's graph and the chain's are
    # inferred once each, the last two when the partitioned graph is.
    assert counts.built() == [(10, 1), (11, 1), (14, 1), (16, 1), (16, 1)]
    assert counts.inferred() == [(rule, size, 1) for rule in ("infer_shape", "infer_type")
                                 for size in (10, 11, 14, 16)]
    counts.clear()
    ex.forward(data=np.ones((2, 3, 8, 8)))
    ex.outputs[0].wait_to_read()
    assert not counts.graphs and not counts.runs


def _avg_pool_net() -> mx.sym.Symbol:
    """A convolution, then avg pooling whose 'full' windows reach past the
    padding for some input sizes (MXNet's divisor is then one oneDNN lacks)."""
    x = mx.sym.Convolution(mx.sym.Variable("data"), num_filter=4, kernel=(3, 3), name="conv0")
    return mx.sym.Pooling(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg",
                          pooling_convention="full", name="pool0")


def test_a_shape_onednn_cannot_lower_is_refused_by_simple_bind():
    # Partitioned without shapes, the selector takes the pooling; the file's
    # _sg_dnnl node meets the refused shape only when bound.
    part = _avg_pool_net().get_backend_symbol("DNNL")
    assert [n.op for n in part._topo() if not n.is_variable] == ["_sg_dnnl"]
    ok = part.simple_bind(mx.cpu(), grad_req="null", data=(1, 3, 11, 11))
    assert ok.forward()[0].shape == (1, 4, 5, 5)
    with pytest.raises(mx.BackendError, match=r"^DNNL lowering: pool0 \(Pooling\): oneDNN "
                                              "cannot average like MXNet over these windows"):
        part.simple_bind(mx.cpu(), grad_req="null", data=(1, 3, 10, 10))
    with pytest.raises(mx.BackendError, match=r"DNNL lowering: pool0 \(Pooling\)"):
        ok.reshape(data=(1, 3, 10, 10))


def test_what_onednn_refuses_at_compile_names_the_node_at_bind(monkeypatch):
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "DNNL")
    threads = []

    def refused(*args, **kwargs):
        threads.append(threading.current_thread().name)
        raise mx.BackendError("oneDNN pooling primitive descriptor failed: unimplemented")

    monkeypatch.setattr(onednn, "pooling", refused)
    with pytest.raises(mx.BackendError,
                       match=r"^DNNL lowering: pool0 \(Pooling\): oneDNN pooling primitive "
                             "descriptor failed: unimplemented$"):
        _avg_pool_net().simple_bind(mx.cpu(), grad_req="null", data=(1, 3, 11, 11))
    # Compiled on the one oneDNN thread, as every oneDNN call of the backend.
    assert len(threads) == 1 and threads[0].startswith("minimx-onednn")


def test_the_plan_compiled_at_bind_runs_with_the_weights_set_after_it(monkeypatch):
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "DNNL")
    compiles = []
    real = Lowering.compile
    monkeypatch.setattr(Lowering, "compile", lambda self, *a: compiles.append(1) or real(self, *a))
    net = _avg_pool_net()
    ex = net.simple_bind(mx.cpu(), grad_req="null", data=(2, 3, 11, 11))
    assert len(compiles) == 1
    rng = np.random.default_rng(0)
    values = {n: rng.standard_normal(a.shape).astype(np.float32) for n, a in ex.arg_dict.items()}
    out = ex.forward(**values)[0].asnumpy()
    assert len(compiles) == 1
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "")
    plain = net.simple_bind(mx.cpu(), grad_req="null", data=(2, 3, 11, 11))
    np.testing.assert_allclose(out, plain.forward(**values)[0].asnumpy(), rtol=1e-5, atol=1e-5)


def test_a_training_bind_plans_its_gradient_pass_at_bind():
    # A DNNL node has no gradient: binding its file for training is refused by
    # the bind, which plans the training program, not by the first backward.
    part = _avg_pool_net().get_backend_symbol("DNNL")
    with pytest.raises(mx.MinimxError, match=r"\(_sg_dnnl\): the operator has no gradient, "
                                             "but a gradient must flow through it"):
        part.simple_bind(mx.cpu(), grad_req="write", data=(1, 3, 11, 11))
