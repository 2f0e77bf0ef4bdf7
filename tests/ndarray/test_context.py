"""Arrays remember the CPU context they were made on, as MXNet 1.9.1's do.

Every expected context here is what MXNet 1.9.1 reports for the same calls.
"""
from __future__ import annotations

import copy
import pickle
import threading

import pytest

import minimx as mx

C1, C2 = mx.cpu(1), mx.cpu(2)

CREATIONS = {
    "array": lambda ctx: mx.nd.array([1, 2], ctx=ctx),
    "zeros": lambda ctx: mx.nd.zeros((2,), ctx=ctx),
    "ones": lambda ctx: mx.nd.ones((2,), ctx=ctx),
    "full": lambda ctx: mx.nd.full((2,), 3, ctx=ctx),
    "empty": lambda ctx: mx.nd.empty((2,), ctx=ctx),
    "arange": lambda ctx: mx.nd.arange(3, ctx=ctx),
    "linspace": lambda ctx: mx.nd.linspace(0, 1, 3, ctx=ctx),
    "eye": lambda ctx: mx.nd.eye(2, ctx=ctx),
    "uniform": lambda ctx: mx.nd.random.uniform(shape=(2,), ctx=ctx),
    "normal": lambda ctx: mx.nd.random.normal(0, 1, shape=(2,), ctx=ctx),
    "randint": lambda ctx: mx.nd.random.randint(0, 5, shape=(2,), ctx=ctx),
    "randn": lambda ctx: mx.nd.random.randn(2, ctx=ctx),
    "_zeros operator": lambda ctx: mx.nd._zeros(shape=(2,), ctx=ctx),
}


@pytest.mark.parametrize("make", CREATIONS.values(), ids=CREATIONS.keys())
def test_an_array_is_on_the_context_it_is_made_on(make):
    a = make(C1)
    assert a.context == C1 and a.ctx == C1
    with C1:
        assert make(None).context == C1   # the current context
    assert make(None).context == mx.cpu(0)


def test_an_operator_without_inputs_takes_its_ctx_as_a_string_too():
    assert mx.nd._zeros(shape=(2,), ctx="cpu(1)").context == C1
    with pytest.raises(mx.MinimxError, match="not a context"):
        mx.nd._zeros(shape=(2,), ctx="elsewhere")


def test_other_cpu_kinds_and_repr():
    assert mx.nd.zeros((1,), ctx=mx.cpu_pinned(0)).context == mx.cpu_pinned(0)
    assert mx.nd.full((1,), 2, ctx=mx.Context("cpu_shared", 3)).context == \
        mx.Context("cpu_shared", 3)
    assert repr(mx.nd.zeros((1,), ctx=mx.cpu_pinned(0))).endswith("<NDArray 1 @cpu_pinned(0)>")
    assert repr(mx.nd.ones((2, 3), ctx=C1)).endswith("<NDArray 2x3 @cpu(1)>")
    with mx.Context(C1) as copied:   # a Context made from another is a copy of it
        assert copied == C1 and mx.current_context() == C1


def test_copies_go_where_they_are_sent():
    a = mx.nd.ones((2, 3), ctx=C1)
    assert a.copy().context == C1
    assert a.copyto(C2).context == C2
    moved = a.as_in_context(C2)
    assert moved is not a and moved.context == C2
    assert a.as_in_context(mx.cpu(1)) is a
    # MXNet's pickled state holds no context: these come back on cpu(0).
    for made in (copy.copy(a), copy.deepcopy(a), pickle.loads(pickle.dumps(a))):
        assert made.context == mx.cpu(0)
    assert mx.nd.array(a).context == mx.cpu(0)   # no ctx: the current one


def test_results_are_on_their_first_inputs_context():
    a = mx.nd.ones((2, 3), ctx=C1)
    index = mx.nd.array([0, 1], ctx=C1)
    results = {
        "a + 1": a + 1, "a + a": a + a, "relu": mx.nd.relu(a), "a[0]": a[0],
        "a[0:1]": a[0:1], "a[index]": a[index], "reshape": a.reshape((3, 2)),
        "astype": a.astype("int32"), "T": a.T, "sum": a.sum(),
        "split": mx.nd.split(a, 3, axis=1)[0], "one_hot": mx.nd.one_hot(index, 3),
        "boolean_mask": mx.nd.contrib.boolean_mask(a, mx.nd.array([1, 0], ctx=C1)),
        "zeros_like": mx.nd.zeros_like(a), "uniform_like": mx.nd.random.uniform_like(a),
        "sampled": mx.nd.random.normal(index, index, shape=2, ctx=C2),  # ctx ignored
    }
    assert {k: r.context for k, r in results.items()} == dict.fromkeys(results, C1)
    with C1:
        assert (mx.nd.ones((2,), ctx=mx.cpu(0)) + 1).context == mx.cpu(0)
    assert (mx.nd.ones((2, 3)) + a).context == mx.cpu(0)


def test_writes_keep_the_targets_context():
    a = mx.nd.ones((2, 3), ctx=C1)
    out = mx.nd.zeros((2, 3), ctx=C2)
    mx.nd.relu(a, out=out)
    assert out.context == C2
    out[:] = mx.nd.ones((2, 3))
    out += 1
    assert out.context == C2


def test_load_gives_cpu0_arrays(tmp_path):
    path = str(tmp_path / "x")
    mx.nd.save(path, [mx.nd.ones((2,), ctx=C1)])
    with C2:
        assert mx.nd.load(path)[0].context == mx.cpu(0)


def test_executors_make_their_arrays_on_their_context():
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    ex = mx.sym.BatchNorm(fc, name="bn").simple_bind(C1, data=(2, 4))
    ex.forward()
    assert {a.context for a in ex.arg_arrays + ex.grad_arrays + ex.aux_arrays
            + ex.outputs} == {C1}
    seen = []
    ex.set_monitor_callback(lambda name, arr: seen.append(arr.context))
    ex.forward()
    mx.nd.waitall()
    assert seen and set(seen) == {C1}
    grown = ex.reshape(data=(3, 4), allow_up_sizing=True)
    assert grown.arg_dict["data"].context == C1 and grown.outputs[0].context == C1

    x = mx.sym.Variable("x") * 2
    ex = x.bind(C1, {"x": mx.nd.ones((2,), ctx=C1)}, args_grad={"x": mx.nd.zeros((2,), ctx=C1)})
    ex.forward()
    assert ex.outputs[0].context == C1


def test_with_blocks_on_a_shared_context_object_nest():
    a = mx.nd.ones((2,), ctx=C1)
    with C2:
        with a.context:
            with a.context:
                assert mx.current_context() == C1
            assert mx.current_context() == C1
        assert mx.current_context() == C2
    assert mx.current_context() == mx.cpu(0)


def test_the_current_context_is_per_thread():
    seen = []
    with C1:
        thread = threading.Thread(target=lambda: seen.append(mx.nd.zeros((1,)).context))
        thread.start()
        thread.join()
    assert seen == [mx.cpu(0)]
