"""The RNN primitive in a plan: its final state is a second output (``extra_dsts``),
which the plan gives a temporary of its own; a vanilla tanh cell against numpy."""
from __future__ import annotations

import numpy as np
import pytest

from minimx import BackendError, onednn

from .helpers import ATOL, RTOL, random

T, N, C, H = 4, 2, 3, 5


def tanh_rnn_plan():
    op = onednn.rnn("rnn_tanh", (T, N, C), H, state_outputs=True)
    plan = onednn.Plan("rnn")
    x, h0 = plan.input((T, N, C)), plan.input((1, 1, N, H))
    wx, wh, b = random((1, 1, C, 1, H), 1), random((1, 1, H, 1, H), 2), random((1, 1, 1, H), 3)
    final = plan.temp(op.desc("dst_iter"))
    y = plan.add(op, src=x, src_iter=h0, dst_iter=final, bias=plan.constant(b),
                 weights=plan.constant(onednn.constant(op, "weights", wx)),
                 weights_iter=plan.constant(onednn.constant(op, "weights_iter", wh)))
    plan.output(y)
    plan.output(final)
    return plan, (wx.reshape(C, H), wh.reshape(H, H), b.reshape(H))


def test_vanilla_tanh_cell_and_its_final_state():
    plan, (wx, wh, b) = tanh_rnn_plan()
    x, h = random((T, N, C), 4), random((1, 1, N, H), 5)
    y, final = plan.run([x, h])
    state, expected = h.reshape(N, H).astype(np.float64), []
    for t in range(T):
        state = np.tanh(x[t] @ wx + state @ wh + b)
        expected.append(state)
    np.testing.assert_allclose(y, np.stack(expected), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(final.reshape(N, H), state, rtol=RTOL, atol=ATOL)


def test_schedule_lists_the_extra_output_as_written():
    plan, _ = tanh_rnn_plan()
    _, steps, _ = plan.schedule()
    index = {s.name: k for k, s in enumerate(plan.slots)}
    name, reads, writes, _ = next(s for s in steps if s[0].startswith("rnn"))
    assert index["out1"] in writes and index["out1"] not in reads


def test_an_extra_output_must_be_a_new_temporary():
    op = onednn.rnn("gru", (T, N, C), H, state_outputs=True)
    plan = onednn.Plan("rnn")
    x, h0 = plan.input((T, N, C)), plan.input((1, 1, N, H))
    consts = {name: plan.constant(onednn.Memory.allocate(op.desc(name)))
              for name in ("weights", "weights_iter", "bias")}
    with pytest.raises(BackendError, match="dst_iter must be a new plan.temp"):
        plan.add(op, src=x, src_iter=h0, dst_iter=h0, **consts)


@pytest.mark.parametrize("mode, shape, hidden", [("lstmp", (T, N, C), H), ("lstm", (N, C), H),
                                                 ("gru", (T, N, C), 0)])
def test_bad_parameters_are_refused(mode, shape, hidden):
    with pytest.raises(BackendError, match="rnn: mode"):
        onednn.rnn(mode, shape, hidden)
