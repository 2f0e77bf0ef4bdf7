"""`mx.rnn` cells equal MXNet 1.9.1's: each case of the fixture (an expression both
libraries evaluate, `CELL_CASES` in tools/mxnet_rnn_fixtures.py) unrolled gives
MXNet's argument names and shapes, node names and state_info, and its outputs and
last states on MXNet's seeded inputs; a fused cell's unpacked weights and its
initializer equal MXNet's. Fixtures: tests/fixtures/rnn_cells, group rnn_cells."""
from __future__ import annotations

import inspect
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import minimx as mx

FIXTURES = Path(__file__).parents[1] / "fixtures" / "rnn_cells"
CASES = json.loads((FIXTURES / "rnn_cells.json").read_text())["cases"]
ARRAYS = np.load(FIXTURES / "rnn_cells.npz")


def stack(*cells: mx.rnn.BaseRNNCell) -> mx.rnn.SequentialRNNCell:
    """The fixture expressions' helper: a SequentialRNNCell of `cells`."""
    seq = mx.rnn.SequentialRNNCell()
    for cell in cells:
        seq.add(cell)
    return seq


def flat(states: list) -> list:
    return [s for item in states for s in (flat(item) if isinstance(item, list) else [item])]


def unrolled(case: dict) -> tuple[mx.rnn.BaseRNNCell, mx.sym.Symbol]:
    cell = eval(case["expr"])  # noqa: S307  (the fixture's table)
    with warnings.catch_warnings(), mx.name.NameManager():
        warnings.simplefilter("ignore")  # FusedRNNCell's advice on NTC
        outputs, states = cell.unroll(case["length"], inputs=mx.sym.Variable("data"),
                                      layout=case["layout"], merge_outputs=case["merge"])
    outputs = outputs if isinstance(outputs, list) else [outputs]
    return cell, mx.sym.Group(outputs + flat(states))


@pytest.mark.parametrize("name", sorted(CASES))
def test_structure_equals_mxnets(name: str) -> None:
    case = CASES[name]
    cell, net = unrolled(case)
    arg_shapes, out_shapes, _ = net.infer_shape(data=tuple(case["data_shape"]))
    assert [[n, list(s)] for n, s in zip(net.list_arguments(), arg_shapes, strict=True)] \
        == case["arguments"]
    assert net.list_outputs() == case["outputs"]
    assert [list(s) for s in out_shapes] == case["output_shapes"]
    # minimx's Dropout shows its mask among the internals (MXNet's hides it).
    internals = [n for n in net.get_internals().list_outputs() if not n.endswith("_mask")]
    assert internals == case["internals"]
    assert [dict(i, shape=list(i["shape"])) for i in cell.state_info] == case["state_info"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_outputs_equal_mxnets(name: str) -> None:
    case = CASES[name]
    _, net = unrolled(case)
    args = {n: mx.nd.array(ARRAYS[f"{name}:in:{n}"]) for n in net.list_arguments()}
    outputs = net.bind(mx.cpu(), args).forward(is_train=False)
    assert len(outputs) == len(case["outputs"])
    for k, out in enumerate(outputs):
        np.testing.assert_allclose(out.asnumpy(), ARRAYS[f"{name}:out:{k}"],
                                   rtol=1e-5, atol=1e-6, err_msg=f"{name} output {k}")


@pytest.mark.parametrize("name", [n for n in sorted(CASES) if "unpacked" in CASES[n]])
def test_fused_weights_equal_mxnets(name: str) -> None:
    case = CASES[name]
    cell, net = unrolled(case)
    param = f"{cell._prefix}parameters"
    vector = mx.nd.array(ARRAYS[f"{name}:in:{param}"])
    unpacked = cell.unpack_weights({param: vector})
    assert [[n, list(v.shape)] for n, v in sorted(unpacked.items())] == case["unpacked"]
    for n, v in unpacked.items():
        np.testing.assert_array_equal(v.asnumpy(), ARRAYS[f"{name}:unpacked:{n}"])
    np.testing.assert_array_equal(cell.pack_weights(unpacked)[param].asnumpy(),
                                  vector.asnumpy())
    filled = mx.nd.zeros(vector.shape)
    mx.init.One()(mx.init.InitDesc(param, net.attr_dict()[param]), filled)
    np.testing.assert_array_equal(filled.asnumpy(), ARRAYS[f"{name}:init_one"])


@pytest.mark.parametrize("name", [n for n in sorted(CASES) if "unpacked" in CASES[n]])
def test_unfused_cell_computes_the_fused_outputs(name: str) -> None:
    """unfuse() with unpack_weights' weights gives the fused cell's outputs."""
    case = CASES[name]
    fused, fused_net = unrolled(case)
    stack_cell = fused.unfuse()
    outputs, _ = stack_cell.unroll(case["length"], inputs=mx.sym.Variable("data"),
                                   layout=case["layout"], merge_outputs=True)
    param = f"{fused._prefix}parameters"
    weights = stack_cell.pack_weights(
        fused.unpack_weights({param: mx.nd.array(ARRAYS[f"{name}:in:{param}"])}))
    args = dict(weights, data=mx.nd.array(ARRAYS[f"{name}:in:data"]))
    got = outputs.bind(mx.cpu(), {n: args[n] for n in outputs.list_arguments()}).forward()[0]
    np.testing.assert_allclose(got.asnumpy(), ARRAYS[f"{name}:out:0"], rtol=1e-5, atol=1e-6)
    assert sorted(stack_cell.params._params) == sorted(weights)


def test_conv_cells_have_mxnets_public_base() -> None:
    # MXNet 1.9.1's BaseConvRNNCell's arguments, in its order
    assert list(inspect.signature(mx.rnn.BaseConvRNNCell).parameters) == [
        "input_shape", "num_hidden", "h2h_kernel", "h2h_dilate", "i2h_kernel", "i2h_stride",
        "i2h_pad", "i2h_dilate", "i2h_weight_initializer", "h2h_weight_initializer",
        "i2h_bias_initializer", "h2h_bias_initializer", "activation", "prefix", "params",
        "conv_layout"]
    for cell in (mx.rnn.ConvRNNCell, mx.rnn.ConvLSTMCell, mx.rnn.ConvGRUCell):
        assert issubclass(cell, mx.rnn.BaseConvRNNCell)
    base = mx.rnn.BaseConvRNNCell((1, 2, 4, 4), 3)
    assert base.state_info[0]["shape"] == (0, 3, 4, 4)
    with pytest.raises(NotImplementedError, match="abstract class for convolutional RNN"):
        base(mx.sym.Variable("x"), base.begin_state())


def test_a_users_cell_written_as_mxnets_own_unrolls() -> None:
    # MXNet's cells set self._num_hidden and squash with self._get_activation.
    class Elman(mx.rnn.BaseRNNCell):
        def __init__(self, num_hidden: int, prefix: str = "elman_") -> None:
            super().__init__(prefix=prefix)
            self._num_hidden = num_hidden
            self._weight = self.params.get("i2h_weight")

        @property
        def state_info(self) -> list[dict]:
            return [{"shape": (0, self._num_hidden), "__layout__": "NC"}]

        def __call__(self, inputs, states):
            self._counter += 1
            name = f"{self._prefix}t{self._counter}_"
            i2h = mx.sym.FullyConnected(inputs, weight=self._weight, no_bias=True,
                                        num_hidden=self._num_hidden, name=f"{name}i2h")
            out = self._get_activation(i2h + states[0], "tanh", name=f"{name}out")
            return out, [out]

    outputs, _ = Elman(4).unroll(2, [mx.sym.Variable(f"x{i}") for i in range(2)])
    group = mx.sym.Group(outputs)
    assert group.infer_shape(x0=(3, 5), x1=(3, 5))[1] == [(3, 4), (3, 4)]
    x = np.ones((3, 5), np.float32)
    weight = np.full((4, 5), 0.1, np.float32)
    got = group.eval(x0=mx.nd.array(x), x1=mx.nd.array(x), elman_i2h_weight=mx.nd.array(weight))
    first = np.tanh(x @ weight.T)
    np.testing.assert_allclose(got[1].asnumpy(), np.tanh(x @ weight.T + first), rtol=1e-6)
