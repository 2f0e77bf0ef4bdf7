"""Operators that hold a subgraph, and `_subgraph_op` (alias `_CachedOp`).

A subgraph operator's inputs are its inner graph's input variables, its
outputs the inner graph's outputs, its auxiliary states the inner auxiliary
states; shape and dtype inference run through the inner graph in both
directions. `GRAPH_PLUMBING` holds those rules as `OpDef` fields, for every
backend whose operators hold subgraphs (`_sg_dnnl` and its fused chains use
it). `create_runner`, `run_forward` and `run_backward` run the inner graph
with a `GraphRunner` of its own (own memory plan, own operator states),
differentiating it with respect to every input that is not an auxiliary
state: `_subgraph_op` is those plus the plumbing. The runner is made when the
outer graph is bound (checking the inner entries' sizes then); it plans its
programs at their first run, since it cannot tell whether the bind trains
(as MXNet's CachedOp plans at its first forward).
"""
from __future__ import annotations

from ..base import OperatorError
from ..graph import Graph
from ..graph.infer import infer_dtypes, infer_shapes
from ..interpreter.runner import GraphRunner, check_sizes
from ..ops.registry import OpDef, register

_MEMO_SIZE = 16  # inference answers kept per node and rule


def inner_graph(p) -> Graph:
    """The indexed inner graph; cached on the params because graph passes ask
    for the node's input, output and auxiliary names many times."""
    if "graph" not in p.cache:
        if len(p.subgraphs) != 1:
            raise OperatorError(f"a subgraph operator needs exactly one subgraph, "
                                f"this node has {len(p.subgraphs)}")
        p.cache["graph"] = Graph(p.subgraphs[0].outputs)
    return p.cache["graph"]


def adopt_inner_graph(p, graph: Graph) -> None:
    """Make `graph`, already built over the node's one subgraph (by `lift`, say),
    its indexed inner graph, so that `inner_graph` does not build it again."""
    p.cache["graph"] = graph


def inner_values(p, infer, in_values, out_values=None) -> list:
    """Every inner entry's value by `infer` (`infer_shapes` or `infer_dtypes`),
    given the node's inputs' (and outputs') values.

    Inference asks a node the same question more than once (again after each
    answer it learns from); each answer is remembered, so that nested subgraph
    nodes cost one inner pass per distinct question instead of doubling with
    every level, and the runner a bind makes (`create_runner`) reuses the
    pass that inferred the outer graph. The answer also answers the question
    it leads to (the node asked again with what it just gave): inferring from
    a fixpoint's own values gives that fixpoint."""
    out_values = out_values or (None,) * len(inner_graph(p).outputs)
    memo = p.cache.setdefault(infer.__name__, {})
    query = (tuple(in_values), tuple(out_values))
    values = memo.get(query)  # one lookup: engine threads may share the memo
    if values is None:
        if len(memo) >= _MEMO_SIZE:
            memo.clear()
        g = inner_graph(p)
        known = {g.entry_ptr[nid]: v for nid, v in zip(g.input_ids, in_values, strict=True)
                 if v is not None}
        known.update({e: v for e, v in zip(g.head_entry_ids(), out_values, strict=True)
                      if v is not None})
        values = memo[query] = infer(g, known)
        memo[(tuple(values[g.entry_ptr[nid]] for nid in g.input_ids),
              tuple(values[e] for e in g.head_entry_ids()))] = values
    return values


def infer_through_inner(infer):
    """The inference rule that runs `infer` over the inner graph (`inner_values`)."""
    def rule(p, in_values, out_values):
        g = inner_graph(p)
        values = inner_values(p, infer, in_values, out_values)
        return ([values[g.entry_ptr[nid]] for nid in g.input_ids],
                [values[e] for e in g.head_entry_ids()])
    return rule


def check_inner_sizes(p, in_shapes, in_dtypes) -> tuple[list, list]:
    """Every inner entry's shape and dtype, once each is found to fit in memory:
    a ShapeError names the node that makes one that does not, innermost
    first (what a runner of the inner graph checks when made)."""
    g = inner_graph(p)
    shapes = inner_values(p, infer_shapes, in_shapes)
    dtypes = inner_values(p, infer_dtypes, in_dtypes)
    for nid, node in enumerate(g.nodes):
        ins = g.input_entry_ids(nid)
        # A quantized fused node (ranges after its chain's inputs) does not run its chain.
        if node.subgraphs and len(ins) == len(inner_graph(node.params).input_ids):
            check_inner_sizes(node.params, [shapes[e] for e in ins], [dtypes[e] for e in ins])
    check_sizes(g, shapes, dtypes)
    return shapes, dtypes


def create_runner(p, in_shapes, in_dtypes) -> GraphRunner:
    """A runner for the inner graph with these input shapes and dtypes."""
    return graph_runner(inner_graph(p), inner_values(p, infer_shapes, in_shapes),
                        inner_values(p, infer_dtypes, in_dtypes))


def graph_runner(g: Graph, shapes: list, dtypes: list) -> GraphRunner:
    """A runner of a subgraph `g` given every entry's shape and dtype: gradients for
    its inputs but the auxiliary states, which it updates in place."""
    aux = set(g.aux_ids)
    return GraphRunner(g, shapes, dtypes, ["null" if n in aux else "write" for n in g.input_ids])


def run_forward(runner: GraphRunner, ctx, inputs):
    return runner.forward(inputs, ctx.is_train)


def run_backward(runner: GraphRunner, ctx, inputs, outputs, out_grads):
    needed = runner.head_grad_needed()
    return runner.backward([g if n else None for g, n in zip(out_grads, needed, strict=True)],
                           is_train=ctx.is_train, inputs=inputs)


def _input_names(p) -> list[str]:
    g = inner_graph(p)
    return [g.nodes[i].name for i in g.input_ids]


def _output_names(p) -> list[str]:
    g = inner_graph(p)
    return [e.node.entry_name(e.index) for e in g.outputs]


def _aux_names(p) -> frozenset[str]:
    """A set: it is asked whether each input is one, and a subgraph may have thousands."""
    g = inner_graph(p)
    return frozenset(g.nodes[i].name for i in g.aux_ids)


# The OpDef fields of an operator whose node holds one subgraph.
GRAPH_PLUMBING = dict(
    inputs=_input_names,
    outputs=_output_names,
    aux=_aux_names,
    infer_shape=infer_through_inner(infer_shapes),
    infer_type=infer_through_inner(infer_dtypes),
)

SUBGRAPH_OP = register(OpDef(
    name="_subgraph_op",
    aliases=("_CachedOp",),
    doc="Runs the subgraph held in the node's `subgraphs` field as one operation.",
    create_state=create_runner,
    forward=run_forward,
    backward=run_backward,
    **GRAPH_PLUMBING,
))
