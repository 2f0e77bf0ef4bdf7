"""`mx.mod.BucketingModule` trains MXNet's bucketing LSTM language model
(example/rnn/bucketing/lstm_bucketing.py, one small layer) as MXNet 1.9.1 does:
the same corpus in `mx.rnn.BucketSentenceIter` buckets, the same starting
parameters and seeds give MXNet's perplexity after every batch, its validation
perplexities and its trained parameters; the buckets run on one set of
parameter arrays; checkpoints load back. Fixtures: tests/fixtures/rnn_cells,
group rnn_cells (`_train_lm` in tools/mxnet_rnn_fixtures.py)."""
from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.base import MinimxError

FIXTURES = Path(__file__).parents[1] / "fixtures" / "rnn_cells"
LM = json.loads((FIXTURES / "rnn_cells.json").read_text())["lm"]
ARRAYS = np.load(FIXTURES / "rnn_cells.npz")


def sym_gen(seq_len: int) -> tuple[mx.sym.Symbol, tuple, tuple]:
    """The example's network: embedding, LSTM unrolled, a softmax over the words."""
    data, label = mx.sym.Variable("data"), mx.sym.Variable("softmax_label")
    embed = mx.sym.Embedding(data=data, input_dim=LM["vocab"], output_dim=LM["embed"],
                             name="embed")
    cell = mx.rnn.LSTMCell(num_hidden=LM["hidden"], prefix="lstm_l0_")
    outputs, _ = cell.unroll(seq_len, inputs=embed, merge_outputs=True)
    pred = mx.sym.Reshape(outputs, shape=(-1, LM["hidden"]))
    pred = mx.sym.FullyConnected(data=pred, num_hidden=LM["vocab"], name="pred")
    label = mx.sym.Reshape(label, shape=(-1,))
    return mx.sym.SoftmaxOutput(data=pred, label=label, name="softmax"), ("data",), \
        ("softmax_label",)


def iterators() -> tuple[mx.rnn.BucketSentenceIter, mx.rnn.BucketSentenceIter]:
    random.seed(LM["seed"])
    np.random.seed(LM["seed"])
    return tuple(mx.rnn.BucketSentenceIter(LM[part], LM["batch"], buckets=list(LM["buckets"]),
                                           invalid_label=0) for part in ("train", "val"))


def initial() -> dict[str, mx.nd.NDArray]:
    return {k.split(":")[2]: mx.nd.array(v) for k, v in ARRAYS.items()
            if k.startswith("lm:init:")}


@pytest.fixture(scope="module")
def trained() -> tuple[mx.mod.BucketingModule, list, list]:
    train, val = iterators()
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=train.default_bucket_key)
    batches: list[list] = []
    scores: list[float] = []
    mod.fit(train, eval_data=val, eval_metric=mx.metric.Perplexity(0),
            optimizer=LM["optimizer"], optimizer_params=LM["optimizer_params"],
            arg_params=initial(), num_epoch=LM["epochs"],
            batch_end_callback=lambda p: batches.append(
                [p.epoch, p.nbatch, p.eval_metric.get()[1]]),
            eval_end_callback=lambda p: scores.append(p.eval_metric.get()[1]))
    return mod, batches, scores


def test_fit_equals_mxnets(trained: tuple) -> None:
    mod, batches, scores = trained
    np.testing.assert_allclose(np.array(batches), np.array(LM["batches"]), rtol=1e-4)
    np.testing.assert_allclose(scores, LM["val_perplexity"], rtol=1e-4)
    args, aux = mod.get_params()
    assert aux == {}
    # 66 steps of SGD with momentum: float32 rounding drifts to about 1e-4.
    for name, value in args.items():
        np.testing.assert_allclose(value.asnumpy(), ARRAYS[f"lm:trained:{name}"],
                                   rtol=1e-3, atol=1e-3, err_msg=name)


def test_perplexity_falls(trained: tuple) -> None:
    _, batches, scores = trained
    last = {epoch: value for epoch, _, value in batches}
    assert last[LM["epochs"] - 1] < last[0] / 4
    assert scores[-1] < scores[0] / 4 and scores[-1] < 1.5


def test_buckets_share_parameter_and_gradient_arrays(trained: tuple) -> None:
    mod, _, _ = trained
    assert sorted(mod._buckets) == LM["buckets_bound"]
    default = mod._buckets[LM["buckets"][-1]]._exec_group.execs[0]
    for key, module in mod._buckets.items():
        assert module.data_shapes[0].shape == (LM["batch"], key)
        for name in ("embed_weight", "lstm_l0_i2h_weight", "lstm_l0_h2h_bias", "pred_weight"):
            assert module._exec_group.execs[0].arg_dict[name] is default.arg_dict[name]
            assert module._exec_group.execs[0].grad_dict[name] is default.grad_dict[name]
        assert module._updater is mod._buckets[LM["buckets"][-1]]._updater


def test_checkpoint_loads_back_and_scores_the_same(trained: tuple, tmp_path: Path) -> None:
    mod, _, _ = trained
    prefix = str(tmp_path / "lm")
    mod.save_checkpoint(prefix, 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "lm-0003.params", "lm-4-symbol.json", "lm-6-symbol.json", "lm-8-symbol.json",
        "lm.buckets"]
    loaded = mx.mod.BucketingModule.load(prefix, 3, sym_gen=sym_gen, default_bucket_key=8)
    loaded.bind(iterators()[1].provide_data, iterators()[1].provide_label, for_training=False)
    result = loaded.score(iterators()[1], mx.metric.Perplexity(0))
    assert result == mod.score(iterators()[1], mx.metric.Perplexity(0))
    assert result[0][0] == "perplexity" and result[0][1] < 1.5


def test_set_params_reach_every_bucket() -> None:
    train, _ = iterators()
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=8)
    mod.bind(train.provide_data, train.provide_label)
    mod.init_params(arg_params=initial())
    for batch in train:
        mod.forward(batch, is_train=False)
    zeros = {n: mx.nd.zeros(v.shape) for n, v in initial().items()}
    mod.set_params(zeros, {})
    for key, module in mod._buckets.items():
        weight = module._exec_group.execs[0].arg_dict["pred_weight"]
        assert float(weight.abs().sum().asscalar()) == 0.0, key
    mod.forward(mx.io.DataBatch([mx.nd.ones((4, 4))], [mx.nd.ones((4, 4))], bucket_key=4,
                                provide_data=[mx.io.DataDesc("data", (4, 4))],
                                provide_label=[mx.io.DataDesc("softmax_label", (4, 4))]))
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), 1 / LM["vocab"], rtol=1e-6)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(MinimxError, match="default_bucket_key"):
        mx.mod.BucketingModule(sym_gen)
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=8)
    with pytest.raises(MinimxError, match="call bind"):
        mod.switch_bucket(4, [("data", (4, 4))])
    mod.bind([("data", (4, 8))], [("softmax_label", (4, 8))])
    mod.init_params()
    with pytest.raises(MinimxError, match="no bucket_key"):
        mod.forward(mx.io.DataBatch([mx.nd.ones((4, 8))], [mx.nd.ones((4, 8))]))
    with pytest.raises(MinimxError, match="bucket 5 is not bound"):
        mod.switch_bucket(5, None)
    with pytest.raises(MinimxError, match="shared_module"):
        mod.bind([("data", (4, 8))], force_rebind=True, shared_module=mod)
    with pytest.raises(MinimxError, match=r"default_bucket_key=3 is not among the buckets"):
        mx.mod.BucketingModule.load_dict({8: sym_gen(8)[0]}, sym_gen, 3, {}, {})
