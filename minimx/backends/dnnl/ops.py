"""The DNNL backend's operators.

- `_sg_dnnl`: one DNNL subgraph. Its inputs, outputs and auxiliary states are
  those of its inner graph, and inference runs through it (as for
  `_subgraph_op`). Its state (made at bind) compiles the inner graph into
  one `dnnl.Plan` for the bound input shapes (again when they change), which
  forward runs, in its `dtype` (bfloat16 when partitioned so); a training
  forward, or inputs that are not float32, run the inner graph on the numpy
  path instead. Its `fusions` attribute counts the fused patterns inside.
  Shape inference first checks, once, that oneDNN runs every node inside
  (`lower.check_lowerable`): a partitioned file may hold anything, and is
  refused at bind rather than mid-forward.
- `_sg_dnnl_conv`, `_sg_dnnl_fully_connected`, `_sg_dnnl_deconv` (the
  fused operators of `patterns.PATTERNS`): fused chains inside a DNNL
  subgraph, with MXNet's `with_*` flags. Lowered by the enclosing
  `_sg_dnnl`; on their own they run their chain with the numpy kernels.
"""
from __future__ import annotations

from ...ops.params import Param
from ...ops.registry import OpDef, register
from ...subgraph import subgraph_op
from ...subgraph.subgraph_op import GRAPH_PLUMBING
from .lower import check_lowerable
from .patterns import FLAGS
from .state import DnnlState


def _lowerable_first(infer):
    """`infer` after `check_lowerable` (once per node): a partitioned file with
    a node oneDNN cannot run is refused by shape inference, so at bind."""
    def rule(p, in_shapes, out_shapes):
        if "lowerable" not in p.cache:
            check_lowerable(subgraph_op.inner_graph(p))
            p.cache["lowerable"] = True
        return infer(p, in_shapes, out_shapes)
    return rule


register(OpDef(
    name="_sg_dnnl",
    doc="A subgraph run by oneDNN (DNNL backend, inference only).",
    params=(Param("fusions", "str", "", "Fused patterns inside, with counts "
                  "(informational; set by the partitioner)."),
            Param("dtype", "str", "float32", "What the float operators inside compute in: "
                  "float32 or bfloat16 (set by the partitioner).",
                  choices=("float32", "bfloat16"))),
    create_state=DnnlState,
    forward=DnnlState.forward,
    **{**GRAPH_PLUMBING, "infer_shape": _lowerable_first(GRAPH_PLUMBING["infer_shape"])},
))

for _op, _flags in FLAGS.items():
    register(OpDef(
        name=_op,
        doc=f"A fused {_op.removeprefix('_sg_dnnl_')} chain inside a DNNL subgraph.",
        params=tuple(Param(f, "bool", False, f"Whether the chain includes {f[5:]}.")
                     for f in _flags),
        create_state=subgraph_op.create_runner,
        forward=subgraph_op.run_forward,
        backward=subgraph_op.run_backward,
        **GRAPH_PLUMBING,
    ))
