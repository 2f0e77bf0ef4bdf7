"""Optimizer updates equal MXNet 1.9.1's on fixed gradients.

tests/fixtures/training/ (tools/mxnet_fixtures.py, group training) holds, for
each case of OPTIMIZER_CASES, a weight, the gradients of a few updates and
MXNet's weight after each (so momentum and moment states are checked too), with
the parameter's name, lr_mult and lr_scheduler where the case gives them (and one
gradient array overwritten each update, where it says `reuse_grad`); SGLD's
updates with their noise taken off; and the lr / wd multipliers an optimizer
takes from a symbol's attributes.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import minimx as mx

FIXTURES = Path(__file__).parents[1] / "fixtures" / "training"
RECORD = json.loads((FIXTURES / "training.json").read_text())
ARRAYS = np.load(FIXTURES / "training-arrays.npz")


def _optimizer(spec: dict) -> mx.optimizer.Optimizer:
    """A case's optimizer, for parameter 0 named and scheduled as its setup says."""
    setup, extra = spec["setup"], {}
    if "param" in setup:
        extra["param_idx2name"] = {0: setup["param"]}
    if "scheduler" in setup:
        extra["lr_scheduler"] = eval(setup["scheduler"])  # noqa: S307  (the fixture's table)
    opt = mx.optimizer.create(spec["optimizer"], **spec["kwargs"], **extra)
    if "lr_mult" in setup:
        opt.set_lr_mult({setup["param"]: setup["lr_mult"]})
    return opt


@pytest.mark.parametrize("case", sorted(RECORD["optimizers"]))
def test_updates_equal_mxnets(case: str) -> None:
    spec = RECORD["optimizers"][case]
    updater = mx.optimizer.get_updater(_optimizer(spec))
    weight = mx.nd.array(ARRAYS[f"{case}:weight"])
    reused = mx.nd.zeros(weight.shape)   # one gradient array for all updates, as a Module's
    for k in range(spec["updates"]):
        grad = ARRAYS[f"{case}:grad_{k}"]
        if spec["setup"].get("reuse_grad"):
            reused[:] = grad
        updater(0, reused if spec["setup"].get("reuse_grad") else mx.nd.array(grad), weight)
        np.testing.assert_allclose(weight.asnumpy(), ARRAYS[f"{case}:after_{k}"],
                                   rtol=1e-5, atol=1e-6, err_msg=f"update {k}")


def test_multipliers_come_from_symbol_attributes_and_names() -> None:
    data = mx.sym.Variable("data")
    weight = mx.sym.Variable("fc_weight", lr_mult=0.5, wd_mult=2.0)
    bias = mx.sym.Variable("fc_bias", lr_mult=3.0)
    net = mx.sym.FullyConnected(data, weight=weight, bias=bias, num_hidden=4, name="fc")
    net = mx.sym.BatchNorm(net, name="bn")
    net = mx.sym.FullyConnected(net, num_hidden=2, name="out")
    want = RECORD["mults"]
    names = [n for n in net.list_arguments() if n != "data"]
    assert names == want["names"]
    opt = mx.optimizer.create("sgd", learning_rate=0.1, wd=0.01, sym=net,
                              param_idx2name=dict(enumerate(names)))
    np.testing.assert_allclose([opt._get_lr(i) for i in range(len(names))], want["lr"])
    np.testing.assert_allclose([opt._get_wd(i) for i in range(len(names))], want["wd"])


def test_sgld_without_its_noise_equals_mxnets() -> None:
    """Each update draws its noise with mx.nd.random.normal after the seed: drawn again
    after the same seed, it comes off the weight, leaving MXNet's deterministic part."""
    spec = RECORD["sgld"]
    lr = spec["kwargs"]["learning_rate"]
    updater = mx.optimizer.get_updater(mx.optimizer.create("sgld", **spec["kwargs"]))
    weight = mx.nd.array(ARRAYS["sgld:weight"])
    for k in range(spec["updates"]):
        mx.random.seed(k)
        noise = mx.nd.random.normal(0, math.sqrt(lr), shape=weight.shape)
        mx.random.seed(k)
        updater(0, mx.nd.array(ARRAYS[f"sgld:grad_{k}"]), weight)
        weight -= noise
        np.testing.assert_allclose(weight.asnumpy(), ARRAYS[f"sgld:after_{k}"],
                                   rtol=1e-5, atol=1e-6, err_msg=f"update {k}")
    # MXNet's noise has the standard deviation sqrt(lr), as minimx's.
    np.testing.assert_allclose(spec["noise_std"], math.sqrt(lr), rtol=0.15)


def test_sgld_noise_is_gaussian_with_variance_lr() -> None:
    lr, shape = 0.09, (200, 100)
    mx.random.seed(3)
    opt = mx.optimizer.SGLD(learning_rate=lr)
    updater = mx.optimizer.get_updater(opt)
    weight = mx.nd.zeros(shape)
    updater(0, mx.nd.zeros(shape), weight)   # a zero gradient: the step is the noise
    first = weight.asnumpy().astype(np.float64).ravel()
    updater(0, mx.nd.zeros(shape), weight)
    second = weight.asnumpy().astype(np.float64).ravel() - first
    for noise in (first, second):
        assert abs(noise.mean()) < 4 * math.sqrt(lr / noise.size)
        assert noise.std() == pytest.approx(math.sqrt(lr), rel=0.02)
        # Gaussian: about 68.3% within one standard deviation, kurtosis 3
        assert np.mean(np.abs(noise) < math.sqrt(lr)) == pytest.approx(0.6827, abs=0.01)
        assert np.mean(noise ** 4) / noise.var() ** 2 == pytest.approx(3.0, abs=0.15)
    assert abs(np.corrcoef(first, second)[0, 1]) < 0.02   # fresh noise each update


def test_mxnets_other_rules_by_name() -> None:
    """ccSGD is SGD (MXNet 1.9.1: a subclass that changes nothing); Test adds the rescaled
    gradient, keeps a float32 copy of the weight as its state and counts no update;
    LBSGD has MXNet's arguments."""
    assert issubclass(mx.optimizer.ccSGD, mx.optimizer.SGD)
    assert isinstance(mx.optimizer.create("ccSGD"), mx.optimizer.ccSGD)
    opt = mx.optimizer.create("test", rescale_grad=0.5)
    weight = mx.nd.array([1.0, 2.0], dtype="float16")
    state = opt.create_state(0, weight)
    opt.update(0, weight, mx.nd.array([2.0, -4.0], dtype="float16"), state)
    assert weight.asnumpy().tolist() == [2.0, 0.0] and state.dtype == np.float32
    assert state.asnumpy().tolist() == [2.0, 0.0] and opt.num_update == 0
    lbsgd = mx.optimizer.create("lbsgd", batch_scale=4, updates_per_epoch=10, begin_epoch=2)
    assert (lbsgd.warmup_strategy, lbsgd.warmup_epochs, lbsgd.init_updates,
            lbsgd.num_epochs) == ("linear", 5, 20, 60)
    assert mx.optimizer.create("lbsgd", multi_precision=True).multi_precision


def test_group_adagrad_equals_mxnets() -> None:
    """GroupAdaGrad: a step size per row. The weights and the per-row history after
    two updates are MXNet 1.9.1's (`mx.optimizer.create("groupadagrad", ...)` with
    these arguments and arrays, run in its venv); also the rule spelled out in numpy,
    and the refusals MXNet asserts: weights other than 2-D, weight decay."""
    w0 = np.array([[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5]], np.float32)
    grads = [np.array([[1.0, -3.0], [0.5, 0.5], [-2.0, 4.0]], np.float32),
             np.array([[-0.5, 2.0], [1.5, -1.0], [0.0, 0.25]], np.float32)]
    opt = mx.optimizer.create("groupadagrad", learning_rate=0.1, rescale_grad=0.5,
                              clip_gradient=1.0)
    assert isinstance(opt, mx.optimizer.contrib.GroupAdaGrad)
    updater = mx.optimizer.get_updater(opt)
    weight = mx.nd.array(w0)
    want, history = w0.copy(), np.zeros((3, 1), np.float32)
    for g in grads:
        updater(0, mx.nd.array(g), weight)
        step = np.clip(np.float32(0.5) * g, -1, 1)
        history += np.square(step).mean(axis=1, keepdims=True)
        want -= np.float32(0.1) * step / np.sqrt(history + np.float32(1e-5))
    mxnet_weight = [[0.46000435948371887, -0.966507613658905],
                    [1.7904646396636963, 0.22303688526153564],
                    [-0.6500005125999451, 1.3875490427017212]]
    np.testing.assert_allclose(weight.asnumpy(), mxnet_weight, rtol=1e-6)
    np.testing.assert_allclose(weight.asnumpy(), want, rtol=1e-6)
    (state,) = updater.states[0]
    np.testing.assert_array_equal(state.asnumpy(), [[1.15625], [0.46875], [1.0078125]])
    with pytest.raises(mx.base.ShapeError, match=r"parameter 0 has shape \(4,\)"):
        opt.create_state(0, mx.nd.zeros((4,)))
    decaying = mx.optimizer.create("groupadagrad", wd=0.01)
    with pytest.raises(mx.base.OperatorError, match="weight decay 0.01"):
        mx.optimizer.get_updater(decaying)(0, mx.nd.array(grads[0]), mx.nd.array(w0))


def test_signsgd_refuses_a_decoupled_weight_decay_as_mxnet() -> None:
    """Signum without momentum is signSGD, whose MXNet 1.9.1 kernel has no `wd_lh`
    ("Cannot find argument 'wd_lh'"): refused here too, not ignored."""
    opt = mx.optimizer.create("signum", momentum=0.0, wd_lh=0.01)
    weight = mx.nd.ones((2,))
    with pytest.raises(mx.base.OperatorError, match="wd_lh=0.01 needs momentum"):
        opt.update(0, weight, mx.nd.ones((2,)), opt.create_state(0, weight))
    assert weight.asnumpy().tolist() == [1.0, 1.0]
