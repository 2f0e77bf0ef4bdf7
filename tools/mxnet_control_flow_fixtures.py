"""The ``control_flow`` fixture group of `mxnet_fixtures.py`: MXNet 1.9.1's
`contrib.foreach`, `contrib.while_loop` and `contrib.cond`, as symbols and as NDArray calls.

Runs with MXNet's Python only (never minimx). Each case is the source of a function
``program(F, v)`` that builds its outputs with ``F`` (``mx.sym`` or ``mx.nd``) from the
inputs ``v`` (a dict of Symbols or NDArrays); minimx runs the same source. For each case
this records MXNet's symbol JSON and, for each input set, the bound symbol's outputs and
the input gradients for seeded head gradients, and what the NDArray forms give.
"""
from __future__ import annotations

import json
from pathlib import Path

import mxnet as mx
import numpy as np

FOREACH_RNN = '''
def program(F, v):
    def body(x, states):
        h, c = states
        z = F.tanh(F.broadcast_add(F.dot(x, v["w"]) + F.dot(h, v["u"]), v["b"]))
        c2 = c * 0.5 + z
        return [z * 2, F.sum(c2, axis=1)], [z, c2]
    outs, states = F.contrib.foreach(body, v["data"], [v["h"], v["c"]])
    return outs + states
'''

WHILE_EARLY_EXIT = '''
def program(F, v):
    def cond(i, s):
        return i < 4
    def func(i, s):
        return [s * v["k"], i * 2], [i + 1, F.broadcast_add(s * v["k"], i)]
    outs, states = F.contrib.while_loop(cond, func, [v["i"], v["s"]], max_iterations=6)
    return outs + states
'''

COND_SCALAR = '''
def program(F, v):
    a, b = v["a"], v["b"]
    return F.contrib.cond(F.sum(a) < 5, lambda: [a * 2 + b, F.exp(b)],
                          lambda: [a - b, b * b])
'''

# (case, source, input shapes, input sets as {name: (low, high)} uniform ranges or fixed
# values, the rows of the stacked outputs each input set fills (while_loop: its steps))
CASES = [
    ("foreach_rnn", FOREACH_RNN,
     {"data": (4, 2, 3), "h": (2, 5), "c": (2, 5), "w": (3, 5), "u": (5, 5), "b": (5,)},
     [{}], [None]),
    ("while_early_exit", WHILE_EARLY_EXIT, {"i": (1,), "s": (3,), "k": (3,)},
     [{"i": [1.0]}, {"i": [-5.0]}], [3, 6]),
    ("cond_scalar", COND_SCALAR, {"a": (2, 3), "b": (2, 3)},
     [{"a": np.full((2, 3), 0.25).tolist()}, {"a": np.full((2, 3), 2.0).tolist()}],
     [None, None]),
]


def _program(source: str):
    scope: dict = {}
    exec(source, scope)  # the cases' own source, defined above
    return scope["program"]


def _inputs(shapes: dict, fixed: dict, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.RandomState(seed)
    return {n: np.asarray(fixed[n], np.float32) if n in fixed else
            rng.uniform(-1, 1, s).astype(np.float32) for n, s in shapes.items()}


def _flat(outs) -> list:
    return list(outs) if isinstance(outs, (list, tuple)) else [outs]


def write_control_flow(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray] = {}
    cases = []
    for case, source, shapes, input_sets, rows in CASES:
        program = _program(source)
        mx.AttrScope._subgraph_names.clear()  # the subgraph names count from 0 per case
        with mx.name.NameManager():
            sym = mx.sym.Group(_flat(program(mx.sym, {n: mx.sym.var(n) for n in shapes})))
        for k, (fixed, filled) in enumerate(zip(input_sets, rows, strict=True)):
            values = _inputs(shapes, fixed, seed=k)
            ex = sym.bind(mx.cpu(), {n: mx.nd.array(a) for n, a in values.items()},
                          args_grad={n: mx.nd.zeros(s) for n, s in shapes.items()})
            outs = [o.asnumpy() for o in ex.forward(is_train=True)]
            rng = np.random.RandomState(100 + k)
            heads = [rng.uniform(-1, 1, o.shape).astype(np.float32) for o in outs]
            ex.backward([mx.nd.array(h) for h in heads])
            nd_outs = [o.asnumpy() for o in _flat(program(
                mx.nd, {n: mx.nd.array(a) for n, a in values.items()}))]
            prefix = f"{case}:{k}"
            for n, a in values.items():
                arrays[f"{prefix}:in:{n}"] = a
            for j, (o, h, nd) in enumerate(zip(outs, heads, nd_outs, strict=True)):
                if filled is not None and j < len(outs) - 2:  # rows past the last step: unset
                    o, nd = o[:filled], nd[:filled]
                arrays[f"{prefix}:out:{j}"] = o
                arrays[f"{prefix}:head:{j}"] = h
                arrays[f"{prefix}:nd:{j}"] = nd
            for n in shapes:
                arrays[f"{prefix}:grad:{n}"] = ex.grad_dict[n].asnumpy()
        cases.append({"case": case, "source": source, "shapes": shapes,
                      "input_sets": len(input_sets), "rows": rows, "json": sym.tojson()})
        print(f"  {case}: {len(input_sets)} input sets", flush=True)
    (out / "cases.json").write_text(json.dumps(cases, indent=1) + "\n")
    np.savez_compressed(out / "arrays.npz", **arrays)
