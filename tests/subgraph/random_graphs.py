"""Random DAGs of (2, 4) float tensors for partitioner properties.

A graph is drawn as a list of steps, each making one node from earlier
entries: unary and binary operators (an entry may feed a node twice), add_n,
BatchNorm with auxiliary states, and split (two outputs) followed by Concat.
"""
from __future__ import annotations

from hypothesis import strategies as st

import minimx as mx

SHAPE = (2, 4)
UNARY = ["relu", "sigmoid", "tanh", "negative", "abs", "_mul_scalar"]
BINARY = ["elemwise_add", "elemwise_mul", "elemwise_sub"]
KINDS = UNARY + BINARY + ["add_n", "BatchNorm", "split"]
OPS = UNARY + BINARY + ["add_n", "BatchNorm", "SliceChannel", "Concat"]


@st.composite
def graphs(draw, max_steps: int = 14):
    """(symbol, op_names) with a random subset of the operators as the selection."""
    n_inputs = draw(st.integers(1, 3))
    entries = [mx.sym.Variable(f"x{i}") for i in range(n_inputs)]
    pick = lambda: entries[draw(st.integers(0, len(entries) - 1))]  # noqa: E731
    for step in range(draw(st.integers(1, max_steps))):
        kind = draw(st.sampled_from(KINDS))
        name = f"n{step}"
        if kind == "_mul_scalar":
            entries.append(mx.sym._mul_scalar(pick(), scalar=0.5, name=name))
        elif kind in UNARY:
            entries.append(getattr(mx.sym, kind)(pick(), name=name))
        elif kind in BINARY:
            entries.append(getattr(mx.sym, kind)(pick(), pick(), name=name))
        elif kind == "add_n":
            entries.append(mx.sym.add_n(pick(), pick(), pick(), name=name))
        elif kind == "BatchNorm":
            entries.append(mx.sym.BatchNorm(pick(), fix_gamma=False, name=name))
        else:
            halves = mx.sym.split(pick(), num_outputs=2, axis=1, name=name)
            entries.append(mx.sym.Concat(halves[1], halves[0], dim=1, name=f"{name}c"))
    n_out = draw(st.integers(1, 3))
    outputs = [entries[draw(st.integers(0, len(entries) - 1))] for _ in range(n_out)]
    op_names = draw(st.sets(st.sampled_from(OPS)))
    return mx.sym.Group(outputs), sorted(op_names)


def random_inputs(sym, seed: int = 0) -> dict:
    """Values for every input of `sym` (positive variances for BatchNorm)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    arg_shapes, _, aux_shapes = sym.infer_shape(**{n: SHAPE for n in sym.list_arguments()
                                                   if n.startswith("x")})
    values = {n: rng.normal(size=s) for n, s in zip(sym.list_arguments(), arg_shapes)}
    values.update({n: rng.uniform(0.5, 2.0, size=s)
                   for n, s in zip(sym.list_auxiliary_states(), aux_shapes)})
    return {n: mx.nd.array(v.astype("float32")) for n, v in values.items()}
