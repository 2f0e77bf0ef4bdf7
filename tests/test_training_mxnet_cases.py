"""Training-stack cases found by a differential fuzz against MXNet 1.9.1; the expected
numbers are MXNet 1.9.1's, hard-coded."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx

GRADS = [[-2.0, -0.5, 0.5, 2.0], [1.5, -1.0, -3.0, 0.25]]

# MXNet 1.9.1's weights after two updates of [0.5, -0.25, 1.0, -1.0] by GRADS. Its
# Python rules (AdaGrad, AdaDelta, Adamax, Nadam, DCASGD) clip whenever clip_gradient
# is not None, through the clip operator: 0 clips to zero (Adamax then divides 0 by
# 0), and -1 gives bounds (1, -1) that cross, so values above -1 become -1 and the
# others 1.
PYTHON_RULE_CLIPS = [
    ("adagrad", {"learning_rate": 0.1}, 0.0, [0.5, -0.25, 1.0, -1.0]),
    ("adagrad", {"learning_rate": 0.1}, -1.0,
     [0.4707106947898865, -0.22071069478988647, 1.0292893648147583, -0.8292893171310425]),
    ("adadelta", {}, 0.0, [0.5, -0.25, 1.0, -1.0]),
    ("adadelta", {}, -1.0,
     [0.5002597570419312, -0.25025975704193115, 0.9997402429580688, -0.9797412157058716]),
    ("adamax", {"learning_rate": 0.1}, 0.0, [np.nan] * 4),
    ("adamax", {"learning_rate": 0.1}, -1.0,
     [0.40526315569877625, -0.15526317059993744, 1.0947368144989014, -0.7999999523162842]),
    ("nadam", {"learning_rate": 0.1}, 0.0, [0.5, -0.25, 1.0, -1.0]),
    ("nadam", {"learning_rate": 0.1}, -1.0,
     [0.4638059139251709, -0.2138059139251709, 1.036194086074829, -0.8159863948822021]),
    ("dcasgd", {"learning_rate": 0.1}, -1.0,
     [0.5004000067710876, -0.25040000677108765, 0.9996000528335571, -0.8003999590873718]),
]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name,kwargs,clip,expected", PYTHON_RULE_CLIPS)
def test_python_rules_clip_as_mxnet_for_zero_and_negative_clips(name, kwargs, clip, expected):
    opt = mx.optimizer.create(name, clip_gradient=clip, **kwargs)
    w = mx.nd.array([0.5, -0.25, 1.0, -1.0])
    state = opt.create_state(0, w)
    for g in GRADS:
        opt.update(0, w, mx.nd.array(g), state)
    np.testing.assert_allclose(w.asnumpy(), np.array(expected, dtype=np.float32),
                               rtol=1e-6, atol=1e-7)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_ftml_zero_learning_rate_gives_nan_as_mxnet():
    # A CosineScheduler ends at final_lr=0; MXNet 1.9.1's ftml_update then gives d=inf,
    # z=[-inf, inf, nan] and NaN weights (minimx raised ZeroDivisionError).
    opt = mx.optimizer.FTML(learning_rate=0.0)
    w = mx.nd.array([0.5, -0.25, 0.0])
    d, v, z = state = opt.create_state(0, w)
    opt.update(0, w, mx.nd.array([1.0, 2.0, -1.0]), state)
    assert np.isnan(w.asnumpy()).all()
    assert np.isposinf(d.asnumpy()).all()
    np.testing.assert_array_equal(z.asnumpy(), [-np.inf, np.inf, np.nan])
    np.testing.assert_allclose(v.asnumpy(), [0.001, 0.004, 0.001], rtol=2e-5)


def test_ftml_cosine_schedule_to_zero_runs_as_mxnet():
    # MXNet 1.9.1: two finite updates, then NaN at num_update == max_update (lr 0).
    opt = mx.optimizer.FTML(lr_scheduler=mx.lr_scheduler.CosineScheduler(3, base_lr=0.1))
    updater = mx.optimizer.get_updater(opt)
    w = mx.nd.array([0.5, -0.25])
    with np.errstate(all="ignore"):
        for step in range(3):
            updater(0, mx.nd.array([1.0, -1.0]), w)
            assert np.isfinite(w.asnumpy()).all() == (step < 2)


def test_updater_takes_lists_as_mxnet():
    # MXNet 1.9.1's Updater takes lists of indices, gradients and weights.
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.01)
    updater = mx.optimizer.get_updater(opt)
    ws = [mx.nd.array([1.0, -2.0]), mx.nd.array([0.5, 0.25, -1.0])]
    for _ in range(2):
        updater([0, 1], [mx.nd.array([0.5, -1.0]), mx.nd.array([2.0, 0.0, -0.5])], ws)
    np.testing.assert_allclose(ws[0].asnumpy(), [0.8521510362625122, -1.7043020725250244],
                               rtol=1e-6)
    np.testing.assert_allclose(
        ws[1].asnumpy(), [-0.08124950528144836, 0.24927525222301483, -0.8521510362625122],
        rtol=1e-6)
    assert opt.num_update == 2
    assert sorted(updater.states) == [0, 1]
