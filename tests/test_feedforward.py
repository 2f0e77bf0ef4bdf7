"""`mx.model.FeedForward`: a short deterministic run against MXNet 1.9.1's FeedForward (the
``feedforward`` fixture group: same parameters, batches, callbacks' numbers, validation
accuracies and score), an MLP trained on scikit-learn's digits from numpy arrays, and the
predict / score / save / load round trip."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_digits

import minimx as mx

FIXTURES = Path(__file__).parent / "fixtures" / "feedforward"
RECORD = json.loads((FIXTURES / "feedforward.json").read_text())

pytestmark = pytest.mark.filterwarnings("ignore:mx.model.FeedForward has been deprecated")


@pytest.fixture(scope="module")
def fixture() -> dict[str, np.ndarray]:
    with np.load(FIXTURES / "feedforward.npz") as z:
        return {k: z[k] for k in z.files}


def mlp(hidden: int = 16, classes: int = 3) -> mx.sym.Symbol:
    """The fixture script's `build_mlp` (sizes as given)."""
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=hidden, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=classes, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def initial(fixture) -> dict[str, mx.nd.NDArray]:
    return {k[len("init:"):]: mx.nd.array(v) for k, v in fixture.items() if k.startswith("init:")}


@pytest.mark.parametrize("case", sorted(RECORD["cases"]))
def test_training_matches_mxnet(case: str, fixture) -> None:
    want = RECORD["cases"][case]
    x, y = fixture["X"], fixture["y"]
    seen: dict[str, list] = {"batches": [], "epochs": [], "validation": []}
    model = mx.model.FeedForward(mlp(), ctx=[mx.cpu(i) for i in range(want["contexts"])],
                                 arg_params=initial(fixture), **want["kwargs"])
    model.fit(mx.io.NDArrayIter(x, y, batch_size=16, shuffle=False), eval_data=(x[:32], y[:32]),
              work_load_list=want["work_load_list"],
              batch_end_callback=lambda p: seen["batches"].append([p.epoch, p.nbatch]),
              epoch_end_callback=lambda epoch, *_: seen["epochs"].append(epoch),
              eval_end_callback=lambda p: seen["validation"].append(p.eval_metric.get()[1]))
    assert sorted(model.arg_params) == ["fc1_bias", "fc1_weight", "fc2_bias", "fc2_weight"]
    for name, value in model.arg_params.items():
        np.testing.assert_allclose(value.asnumpy(), fixture[f"{case}:{name}"], rtol=1e-5,
                                   atol=1e-6, err_msg=name)
    np.testing.assert_allclose(model.predict(x), fixture[f"{case}:predict"], rtol=1e-5,
                               atol=1e-6)
    assert seen == {k: want[k] for k in seen}
    # As MXNet's, the score counts the padding rows of the last batch (64 rows for 50).
    assert model.score(mx.io.NDArrayIter(x, y, batch_size=16)) == want["score"]


@pytest.fixture(scope="module")
def digits() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(train images, labels, validation images, labels): 1400 and 397 flattened 8x8."""
    bunch = load_digits()
    order = np.random.RandomState(0).permutation(len(bunch.data))
    data = (bunch.data / 16.0).astype(np.float32)[order]
    labels = bunch.target.astype(np.float32)[order]
    return data[:1400], labels[:1400], data[1400:], labels[1400:]


@pytest.fixture(scope="module")
def trained(digits) -> mx.model.FeedForward:
    tx, ty, vx, vy = digits
    mx.random.seed(0)
    return mx.model.FeedForward.create(
        mlp(64, 10), tx, ty, num_epoch=6, numpy_batch_size=32, learning_rate=0.1,
        momentum=0.9, initializer=mx.init.Xavier(), eval_data=(vx, vy))


def test_digits_mlp_from_numpy_arrays(trained, digits) -> None:
    _, _, vx, vy = digits
    probs = trained.predict(vx)
    assert probs.shape == (397, 10)
    accuracy = float((probs.argmax(axis=1) == vy).mean())
    assert accuracy >= 0.93   # chance is 0.1
    # 397 rows in batches of 32: the score counts the 19 padding rows (copies of the first).
    padded = np.concatenate([vy, vy[:19]])
    hits = np.concatenate([probs.argmax(axis=1), probs[:19].argmax(axis=1)]) == padded
    assert trained.score(mx.io.NDArrayIter(vx, vy, batch_size=32)) == pytest.approx(hits.mean())


def test_predict_returns_data_and_labels_without_padding(trained, digits) -> None:
    _, _, vx, vy = digits
    outputs, data, labels = trained.predict(mx.io.NDArrayIter(vx, vy, batch_size=50),
                                            return_data=True)
    assert outputs.shape == (397, 10)
    np.testing.assert_array_equal(data, vx)
    np.testing.assert_array_equal(labels, vy)
    first = trained.predict(vx, num_batch=2)   # numpy X: batches of numpy_batch_size (32)
    np.testing.assert_allclose(first, outputs[:64], rtol=1e-5, atol=1e-7)


def test_save_and_load_round_trip(trained, digits, tmp_path: Path) -> None:
    _, _, vx, vy = digits
    prefix = str(tmp_path / "digits")
    trained.save(prefix)   # epoch num_epoch, as MXNet
    assert sorted(p.name for p in tmp_path.iterdir()) == ["digits-0006.params",
                                                          "digits-symbol.json"]
    loaded = mx.model.FeedForward.load(prefix, 6, numpy_batch_size=64)
    assert loaded.begin_epoch == 6 and loaded.numpy_batch_size == 64
    np.testing.assert_allclose(loaded.predict(vx), trained.predict(vx), rtol=1e-5, atol=1e-7)
    _, args, _ = mx.model.load_checkpoint(prefix, 6)   # the Module API reads it too
    for name, value in trained.arg_params.items():
        np.testing.assert_array_equal(args[name].asnumpy(), value.asnumpy())
    # Training on from the checkpoint runs epochs begin_epoch .. num_epoch - 1.
    epochs: list[int] = []
    loaded.num_epoch = 8
    loaded.fit(vx, vy, epoch_end_callback=lambda epoch, *_: epochs.append(epoch))
    assert epochs == [6, 7]


def test_predict_feeds_a_label_the_iterator_lacks(fixture) -> None:
    model = mx.model.FeedForward(mlp(), arg_params=initial(fixture))
    with_label = model.predict(fixture["X"])
    without = model.predict(mx.io.NDArrayIter(fixture["X"], batch_size=10))
    np.testing.assert_allclose(without, with_label, rtol=1e-6)


def test_extra_parameters(fixture) -> None:
    extra = {**initial(fixture), "unused_weight": mx.nd.ones((2,))}
    kept = mx.model.FeedForward(mlp(), arg_params=extra)
    with pytest.raises(mx.MinimxError, match="unused_weight"):
        kept.predict(fixture["X"])
    dropped = mx.model.FeedForward(mlp(), arg_params=extra, allow_extra_params=True)
    assert "unused_weight" not in dropped.arg_params
    assert dropped.predict(fixture["X"]).shape == (50, 3)


def test_bad_arguments_raise_minimx_errors(fixture) -> None:
    x, y = fixture["X"], fixture["y"]
    with pytest.warns(DeprecationWarning, match="use mx.mod.Module instead"):
        model = mx.model.FeedForward(mlp())
    with pytest.raises(mx.MinimxError, match="give num_epoch"):
        model.fit(x, y)
    model.num_epoch = 1
    with pytest.raises(mx.MinimxError, match="y must be given"):
        model.fit(x)
    with pytest.raises(mx.ShapeError, match="X has 50 examples but y has 49 labels"):
        model.fit(x, y[:49])
    with pytest.raises(mx.ShapeError, match=r"labels of shape \(50, 2\)"):
        model.fit(x, np.zeros((50, 2)))
    with pytest.raises(mx.MinimxError, match="X must be a DataIter, NDArray or numpy.ndarray, "
                                             "got list"):
        model.fit(x.tolist(), y)
    with pytest.raises(mx.MinimxError, match="has no parameters"):
        model.predict(x)
    with pytest.raises(mx.MinimxError, match="symbol must be a Symbol, got function"):
        mx.model.FeedForward(lambda key: mlp())
    with pytest.raises(mx.MinimxError, match="epoch_size=0"):
        mx.model.FeedForward(mlp(), epoch_size=0)
    with pytest.raises(mx.MinimxError, match="work_load_list"):
        model.fit(x, y, work_load_list=[1, 1])
    model.fit(x, y[:, None])   # labels (N, 1) are flattened
    assert model.predict(mx.nd.array(x)).shape == (50, 3)


def test_feedforward_joins_mx_model_beside_checkpoints() -> None:
    from minimx.model import FeedForward, load_checkpoint, save_checkpoint
    assert FeedForward is mx.feedforward.FeedForward
    assert (save_checkpoint, load_checkpoint) == (mx.model.save_checkpoint,
                                                  mx.model.load_checkpoint)


def test_a_model_without_softmax_label_predicts_on_numpy_data() -> None:
    # A feature layer (MXNet's own test_mlp predicts one): numpy's iterator names a
    # softmax_label that the symbol does not take.
    fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    with pytest.warns(DeprecationWarning):
        model = mx.model.FeedForward(fc, numpy_batch_size=4, arg_params={
            "fc_weight": mx.nd.ones((2, 3)), "fc_bias": mx.nd.zeros(2)})
    assert model.predict(np.ones((6, 3), "float32")).tolist() == [[3.0, 3.0]] * 6
