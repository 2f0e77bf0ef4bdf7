"""MXNet's example/rnn/bucketing/cudnn_rnn_bucketing.py in small: a FusedRNNCell
language model (time-major batches) trained by BucketingModule, checkpointed
with `do_rnn_checkpoint` (weights unpacked), loaded with `load_rnn_checkpoint`
into the unfused cells, which score as the fused model does. Then the errors
of `mx.rnn`."""
from __future__ import annotations

import random
import warnings
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.base import MinimxError

VOCAB, HIDDEN, BUCKETS = 7, 6, [3, 5]


def corpus(count: int) -> list[list[str]]:
    """Sentences counting up through the letters a-f, of random lengths."""
    rng = np.random.RandomState(0)
    return [["abcdef"[(s + k) % 6] for k in range(n)]
            for s, n in zip(rng.randint(0, 6, count), rng.randint(2, 6, count), strict=True)]


def make_sym_gen(cell: mx.rnn.BaseRNNCell):
    def sym_gen(seq_len: int) -> tuple[mx.sym.Symbol, tuple, tuple]:
        embed = mx.sym.Embedding(data=mx.sym.Variable("data"), input_dim=VOCAB,
                                 output_dim=4, name="embed")
        cell.reset()
        output, _ = cell.unroll(seq_len, inputs=embed, merge_outputs=True, layout="TNC")
        pred = mx.sym.Reshape(output, shape=(-1, HIDDEN))
        pred = mx.sym.FullyConnected(data=pred, num_hidden=VOCAB, name="pred")
        label = mx.sym.Reshape(mx.sym.Variable("softmax_label"), shape=(-1,))
        return mx.sym.SoftmaxOutput(data=pred, label=label, name="softmax"), ("data",), \
            ("softmax_label",)
    return sym_gen


def data(sentences: list[list[int]]) -> mx.rnn.BucketSentenceIter:
    random.seed(1)
    np.random.seed(1)
    return mx.rnn.BucketSentenceIter(sentences, 4, buckets=list(BUCKETS), invalid_label=0,
                                     layout="TN")


def test_fused_model_trains_and_its_unfused_checkpoint_scores_the_same(tmp_path: Path) -> None:
    sentences, vocab = mx.rnn.encode_sentences(corpus(60), invalid_label=0, start_label=1)
    assert sorted(vocab.values()) == list(range(VOCAB))
    cell = mx.rnn.FusedRNNCell(HIDDEN, num_layers=2, mode="lstm", prefix="lstm_")
    mod = mx.mod.BucketingModule(make_sym_gen(cell), default_bucket_key=max(BUCKETS))
    prefix = str(tmp_path / "lm")
    mx.random.seed(0)
    mod.fit(data(sentences), eval_data=data(sentences), eval_metric=mx.metric.Perplexity(0),
            optimizer="adam", optimizer_params={"learning_rate": 0.03},
            initializer=mx.init.Xavier(factor_type="in", magnitude=2.34), num_epoch=10,
            epoch_end_callback=mx.rnn.do_rnn_checkpoint(cell, prefix, 5))
    fused_score = mod.score(data(sentences), mx.metric.Perplexity(0))[0][1]
    assert fused_score < 2.5   # from about 9 after the first epoch

    args, _ = mod.get_params()
    saved = mx.nd.load(f"{prefix}-0010.params")
    assert "arg:lstm_parameters" not in saved and "arg:lstm_l1_h2h_f_bias" in saved
    unfused = cell.unfuse()
    _, arg_params, aux_params = mx.rnn.load_rnn_checkpoint(unfused, prefix, 10)
    assert sorted(arg_params) == sorted(["embed_weight", "pred_weight", "pred_bias"] + [
        f"lstm_l{k}_{g}_{p}" for k in range(2) for g in ("i2h", "h2h")
        for p in ("weight", "bias")])
    np.testing.assert_array_equal(
        cell.pack_weights(unfused.unpack_weights(arg_params))["lstm_parameters"].asnumpy(),
        args["lstm_parameters"].asnumpy())
    test = mx.mod.BucketingModule(make_sym_gen(unfused), default_bucket_key=max(BUCKETS))
    test.bind(data(sentences).provide_data, data(sentences).provide_label, for_training=False)
    test.set_params(arg_params, aux_params)
    unfused_score = test.score(data(sentences), mx.metric.Perplexity(0))[0][1]
    np.testing.assert_allclose(unfused_score, fused_score, rtol=1e-5)


def test_fused_initializer_takes_the_global_rule_and_the_forget_bias() -> None:
    cell = mx.rnn.FusedRNNCell(3, mode="lstm", forget_bias=2.5, prefix="f_")
    out, _ = cell.unroll(2, mx.sym.Variable("data"), layout="TNC", merge_outputs=True)
    param = out.attr_dict()["f_parameters"]
    assert param["__init__"].startswith('["fusedrnn"')
    arr = mx.nd.zeros(out.infer_shape(data=(2, 1, 4))[0][1])
    mx.init.Constant(0.5)(mx.init.InitDesc("f_parameters", param), arr)
    pieces = cell.unpack_weights({"f_parameters": arr})
    assert pieces["f_l0_i2h_f_bias"].asnumpy().tolist() == [2.5] * 3
    assert pieces["f_l0_h2h_f_bias"].asnumpy().tolist() == [2.5] * 3
    assert pieces["f_l0_i2h_c_bias"].asnumpy().tolist() == [0.0] * 3
    assert float(pieces["f_l0_h2h_o_weight"].asnumpy().min()) == 0.5


def test_bad_arguments_are_refused() -> None:
    data = mx.sym.Variable("data")
    with pytest.raises(MinimxError, match="layout='NCT'"):
        mx.rnn.LSTMCell(3).unroll(2, data, layout="NCT")
    with pytest.raises(MinimxError, match="3 inputs given for length=2"):
        mx.rnn.GRUCell(3).unroll(2, [data, data, data])
    with pytest.raises(MinimxError, match="mode='tanh'"):
        mx.rnn.FusedRNNCell(3, mode="tanh")
    with pytest.raises(MinimxError, match="cannot be stepped"):
        mx.rnn.ZoneoutCell(mx.rnn.FusedRNNCell(3), 0.5)
    bi = mx.rnn.BidirectionalCell(mx.rnn.RNNCell(2, prefix="a_"), mx.rnn.RNNCell(2, prefix="b_"))
    with pytest.raises(MinimxError, match="cannot be stepped"):
        bi(data, bi.begin_state())
    with pytest.raises(MinimxError, match="not both"):
        mx.rnn.SequentialRNNCell(params=mx.rnn.RNNParams("p_")).add(
            mx.rnn.RNNCell(2, params=mx.rnn.RNNParams("q_")))
    modified = mx.rnn.RNNCell(2, prefix="m_")
    mx.rnn.ResidualCell(modified)
    with pytest.raises(MinimxError, match="modifier cell"):
        modified.begin_state()
    with pytest.raises(MinimxError, match="invalid layout 'NTC'"):
        mx.rnn.BucketSentenceIter([[1, 2]], 1, layout="NTC")
    with pytest.raises(MinimxError, match="unknown token 'z'"):
        mx.rnn.encode_sentences([["z"]], vocab={"a": 1})
    with pytest.raises(MinimxError, match="do not fit"):
        mx.rnn.FusedRNNCell(3, prefix="x_").unpack_weights({"x_parameters": mx.nd.zeros((7,))})
    with pytest.raises(MinimxError, match="conv_layout='NHWC'"):
        mx.rnn.ConvLSTMCell((1, 2, 4, 4), 3, conv_layout="NHWC")
    with pytest.raises(MinimxError, match=r"h2h_kernel=\(2, 3\)"):
        mx.rnn.ConvGRUCell((1, 2, 4, 4), 3, h2h_kernel=(2, 3))


def test_conv_cells_initializers_and_per_gate_weights() -> None:
    """The initializers land in the weights' ``__init__`` (biases 'zeros' by
    default, as in MXNet); unpack_weights splits the filters by gate."""
    cell = mx.rnn.ConvLSTMCell((1, 2, 4, 4), 3, i2h_weight_initializer=mx.init.Xavier())
    out, _ = cell.unroll(2, mx.sym.Variable("data"))
    attrs = mx.sym.Group(out).attr_dict()
    assert attrs["ConvLSTM_h2h_bias"] == {"__init__": "zeros"}
    assert "xavier" in attrs["ConvLSTM_i2h_weight"]["__init__"]
    assert "__init__" not in attrs.get("ConvLSTM_h2h_weight", {})
    weight = mx.nd.array(np.arange(12 * 3 * 9, dtype=np.float32).reshape(12, 3, 3, 3))
    args = {f"ConvLSTM_{g}_{k}": weight if k == "weight" else mx.nd.zeros((12,))
            for g in ("i2h", "h2h") for k in ("weight", "bias")}
    pieces = cell.unpack_weights(args)
    assert pieces["ConvLSTM_h2h_f_weight"].shape == (3, 3, 3, 3)
    np.testing.assert_array_equal(cell.pack_weights(pieces)["ConvLSTM_i2h_weight"].asnumpy(),
                                  weight.asnumpy())


def test_rnn_params_share_variables_between_cells() -> None:
    params = mx.rnn.RNNParams("shared_")
    a, b = mx.rnn.LSTMCell(3, prefix="a_", params=params), mx.rnn.LSTMCell(3, prefix="b_",
                                                                             params=params)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out_a, _ = a.unroll(2, mx.sym.Variable("x"), merge_outputs=True)
        out_b, _ = b.unroll(2, out_a, merge_outputs=True)
    assert out_b.list_arguments() == ["x", "shared_i2h_weight", "shared_i2h_bias",
                                      "shared_h2h_weight", "shared_h2h_bias"]


def test_rnn_unroll_warns_and_unrolls_as_the_cell():
    data = mx.sym.Variable("data")
    with pytest.warns(UserWarning, match="rnn_unroll is deprecated"), mx.name.NameManager():
        outputs, states = mx.rnn.rnn_unroll(mx.rnn.LSTMCell(4, prefix="l_"), 3, inputs=data,
                                            input_prefix="ignored_")
    with mx.name.NameManager():   # the automatic names count from 0 in both
        want, want_states = mx.rnn.LSTMCell(4, prefix="l_").unroll(3, inputs=data)
    assert [o.tojson() for o in outputs] == [o.tojson() for o in want]
    assert [s.tojson() for s in states] == [s.tojson() for s in want_states]
    with pytest.warns(UserWarning), pytest.raises(MinimxError, match="inputs=None"):
        mx.rnn.rnn_unroll(mx.rnn.LSTMCell(4), 3)
    assert mx.rnn.save_checkpoint is mx.model.save_checkpoint
    assert mx.rnn.load_checkpoint is mx.model.load_checkpoint
