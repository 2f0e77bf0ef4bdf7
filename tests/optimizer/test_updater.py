"""The Updater keeps one state per parameter, and its saved states resume training
exactly; optimizers refuse what they cannot do."""
from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minimx as mx
from minimx.base import MinimxError

OPTIMIZERS = [("sgd", {"momentum": 0.9, "wd": 0.01}), ("nag", {"momentum": 0.5}),
              ("adam", {"wd": 0.1}), ("rmsprop", {"centered": True}),
              ("signum", {}), ("ftml", {}), ("ftrl", {}), ("lamb", {"wd": 0.01}),
              ("dcasgd", {"momentum": 0.5}),
              ("lars", {"momentum": 0.9,
                        "lr_scheduler": mx.lr_scheduler.FactorScheduler(step=2, factor=0.5)})]


def _run(updater: mx.optimizer.Updater, weights: list[mx.nd.NDArray],
         grads: list[np.ndarray]) -> None:
    for index, grad in enumerate(grads):
        updater(index % len(weights), mx.nd.array(grad), weights[index % len(weights)])


@pytest.mark.parametrize("name, kwargs", OPTIMIZERS, ids=[o[0] for o in OPTIMIZERS])
def test_saved_states_resume_exactly(name: str, kwargs: dict) -> None:
    # A scheduler counts updates: each optimizer gets its own copy.
    rng = np.random.default_rng(0)
    start = [rng.normal(size=(3, 4)).astype(np.float32) for _ in range(2)]
    grads = [rng.normal(size=(3, 4)).astype(np.float32) for _ in range(8)]
    straight = [mx.nd.array(w) for w in start]
    _run(mx.optimizer.get_updater(mx.optimizer.create(name, **copy.deepcopy(kwargs))), straight,
         grads)

    resumed = [mx.nd.array(w) for w in start]
    first = mx.optimizer.get_updater(mx.optimizer.create(name, **copy.deepcopy(kwargs)))
    _run(first, resumed, grads[:4])
    second = mx.optimizer.get_updater(mx.optimizer.create(name, **copy.deepcopy(kwargs)))
    second.set_states(first.get_states(dump_optimizer=True))   # update counts too (Adam's t)
    _run(second, resumed, grads[4:])
    for a, b in zip(resumed, straight, strict=True):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


@settings(max_examples=25, deadline=None)
@given(lr=st.floats(1e-3, 1.0), momentum=st.floats(0.0, 0.99), wd=st.floats(0.0, 0.1),
       steps=st.integers(1, 4))
def test_sgd_momentum_is_mxnets_recurrence(lr: float, momentum: float, wd: float,
                                           steps: int) -> None:
    rng = np.random.default_rng(steps)
    w = rng.normal(size=5).astype(np.float32)
    weight, opt = mx.nd.array(w), mx.optimizer.SGD(learning_rate=lr, momentum=momentum, wd=wd)
    state = opt.create_state(0, weight)
    mom = np.zeros(5)
    w64 = w.astype(np.float64)
    for _ in range(steps):
        g = rng.normal(size=5)
        opt.update(0, weight, mx.nd.array(g), state)
        mom = momentum * mom - lr * wd * w64 - lr * g.astype(np.float32)
        w64 = w64 + mom
    np.testing.assert_allclose(weight.asnumpy(), w64, rtol=1e-4, atol=1e-5)


def test_scheduler_sets_the_learning_rate_per_update() -> None:
    sched = mx.lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=1.0)
    opt = mx.optimizer.SGD(lr_scheduler=sched)
    weight = mx.nd.zeros((1,))
    updater = mx.optimizer.get_updater(opt)
    for _ in range(3):
        updater(0, mx.nd.ones((1,)), weight)
    assert weight.asscalar() == pytest.approx(-(1.0 + 0.5 + 0.25))


def test_refusals() -> None:
    with pytest.raises(MinimxError, match="unknown optimizer 'nosuch'"):
        mx.optimizer.create("nosuch")
    with pytest.raises(MinimxError, match="has shape"):
        mx.optimizer.get_updater(mx.optimizer.SGD())(0, mx.nd.ones((2,)), mx.nd.ones((3,)))
    with pytest.raises(UserWarning, match="lr_scheduler") as refused:  # as MXNet raises
        mx.optimizer.SGD(lr_scheduler=mx.lr_scheduler.FactorScheduler(2)).set_learning_rate(1)
    assert isinstance(refused.value, MinimxError)


@settings(max_examples=25, deadline=None)
@given(lr=st.floats(1e-3, 1.0), momentum=st.floats(0.0, 0.99), lamda=st.floats(0.0, 1.0),
       wd=st.floats(0.0, 0.1), steps=st.integers(1, 4))
def test_dcasgd_is_mxnets_recurrence(lr: float, momentum: float, lamda: float, wd: float,
                                     steps: int) -> None:
    # MXNet 1.9.1's own rule fails with momentum (it tests an NDArray's truth), so the
    # momentum is checked against the recurrence its code spells out.
    rng = np.random.default_rng(steps)
    w = rng.normal(size=5).astype(np.float32)
    weight = mx.nd.array(w)
    opt = mx.optimizer.DCASGD(learning_rate=lr, momentum=momentum, lamda=lamda, wd=wd)
    state = opt.create_state(0, weight)
    mom, w64 = np.zeros(5), w.astype(np.float64)
    previous = w64.copy()
    for _ in range(steps):
        g = rng.normal(size=5).astype(np.float32).astype(np.float64)
        opt.update(0, weight, mx.nd.array(g), state)
        mom = momentum * mom - lr * (g + wd * w64 + lamda * g * g * (w64 - previous))
        previous, w64 = w64, w64 + mom
    np.testing.assert_allclose(weight.asnumpy(), w64, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(state[1].asnumpy(), previous, rtol=1e-4, atol=1e-5)


def test_an_aggregated_rule_counts_the_whole_list_first() -> None:
    # MXNet 1.9.1's SGD updates a list in one kernel, counting every index before it
    # asks the scheduler: both parameters take lr(num_update=2) = 0.5.
    sched = mx.lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=1.0)
    opt = mx.optimizer.SGD(lr_scheduler=sched)
    updater = mx.optimizer.get_updater(opt)
    w0, w1 = mx.nd.zeros(1), mx.nd.zeros(1)
    updater(1, mx.nd.ones(1), w1)
    updater([0, 1], [mx.nd.ones(1), mx.nd.ones(1)], [w0, w1])
    assert (w0.asscalar(), w1.asscalar(), opt.num_update) == (-0.5, -1.5, 2)


@pytest.mark.parametrize("name, kwargs, want", [
    ("sgd", {"momentum": 0.9}, ([0.855] * 3, [0.71] * 2)),
    ("lamb", {}, ([0.81] * 3, [0.81] * 2))])
def test_update_takes_lists_as_mxnets_aggregated_rules(name: str, kwargs: dict,
                                                        want: tuple) -> None:
    # MXNet 1.9.1's SGD and LAMB take lists of indices, weights, gradients and states.
    opt = mx.optimizer.create(name, learning_rate=0.1, **kwargs)
    weights = [mx.nd.ones((3,)), mx.nd.ones((2,))]
    grads = [mx.nd.full((3,), 0.5), mx.nd.ones((2,))]
    states = [opt.create_state(i, w) for i, w in enumerate(weights)]
    opt.update([0, 1], weights, grads, states)
    opt.update_multi_precision([0, 1], weights, grads, states)
    for got, values in zip(weights, want, strict=True):   # MXNet's values
        np.testing.assert_allclose(got.asnumpy(), values, rtol=1e-6)
    assert opt.num_update == 2
    with pytest.raises(MinimxError, match="2 indices, 1 weights"):
        opt.update([0, 1], [mx.nd.ones((1,))], [mx.nd.ones((1,))] * 2, [None] * 2)


@pytest.mark.parametrize("name, kwargs, want", [
    ("sgd", {"momentum": 0.9, "wd": 0.01},
     [[0.92724609375, -0.52392578125], [0.20361328125, 2.021484375]]),
    ("adam", {}, [[0.8193359375, -0.471923828125], [0.040496826171875, 1.98828125]])])
def test_multi_precision_steps_a_float32_master_copy(name: str, kwargs: dict,
                                                     want: list) -> None:
    # float16 weights, three updates through an Updater: MXNet 1.9.1's weights, bit for bit.
    opt = mx.optimizer.create(name, learning_rate=0.1, multi_precision=True, **kwargs)
    updater = mx.optimizer.get_updater(opt)
    weight = mx.nd.array([[1.0, -0.5], [0.25, 2.0]], dtype="float16")
    for grad in ([[0.3, -0.2], [0.1, 0.05]], [[-0.1, 0.4], [0.2, -0.3]],
                 [[0.05, 0.05], [-0.2, 0.1]]):
        updater(0, mx.nd.array(grad, dtype="float16"), weight)
    assert weight.dtype == np.float16 and weight.asnumpy().tolist() == want
    # MXNet's state orders: SGD's (momentum, weight32), the base rule's (weight32, state)
    master = updater.states[0][1 if name == "sgd" else 0]
    assert master.dtype == np.float32
    np.testing.assert_allclose(master.asnumpy(), want, atol=1e-3)
    with pytest.warns(UserWarning, match="Consider using multi_precision=True"):
        mx.optimizer.create(name).create_state_multi_precision(0, weight)
