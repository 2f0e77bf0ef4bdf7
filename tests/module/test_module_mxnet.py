"""`Module.fit` equals MXNet 1.9.1's, parameter by parameter: the same small net
(FullyConnected-relu-FullyConnected-SoftmaxOutput), the same starting
parameters and data (22 examples in batches of 5: the last one padded), two
epochs with SGD (momentum, weight decay) and with Adam; then `score` and
`predict` on the same data. Fixtures: tests/fixtures/training, group training."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import minimx as mx

FIXTURES = Path(__file__).parents[1] / "fixtures" / "training"
RECORD = json.loads((FIXTURES / "training.json").read_text())["fit"]
ARRAYS = np.load(FIXTURES / "training-arrays.npz")


def build_fitnet() -> mx.sym.Symbol:
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=8, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


@pytest.mark.parametrize("optimizer", sorted(RECORD))
def test_fit_score_predict_equal_mxnets(optimizer: str) -> None:
    data, label = ARRAYS["fit:data"], ARRAYS["fit:label"]
    init = {k.split(":")[2]: mx.nd.array(v) for k, v in ARRAYS.items()
            if k.startswith("fit:init:")}

    def batches() -> mx.io.NDArrayIter:
        return mx.io.NDArrayIter(data, label, batch_size=5)
    mod = mx.mod.Module(build_fitnet(), context=mx.cpu())
    mod.fit(batches(), eval_data=batches(), optimizer=optimizer,
            optimizer_params=RECORD[optimizer]["optimizer_params"], num_epoch=2,
            arg_params=init)
    args, _ = mod.get_params()
    for name, value in args.items():
        np.testing.assert_allclose(value.asnumpy(), ARRAYS[f"fit:{optimizer}:{name}"],
                                   rtol=1e-5, atol=1e-6, err_msg=name)
    (acc_name, acc), (ce_name, ce) = mod.score(batches(), ["acc", "ce"])
    (want_acc_name, want_acc), (want_ce_name, want_ce) = RECORD[optimizer]["score"]
    assert (acc_name, ce_name) == (want_acc_name, want_ce_name)
    assert acc == pytest.approx(want_acc) and ce == pytest.approx(want_ce, rel=1e-5)
    np.testing.assert_allclose(mod.predict(batches()).asnumpy(),
                               ARRAYS[f"fit:{optimizer}:predict"], rtol=1e-5, atol=1e-6)
