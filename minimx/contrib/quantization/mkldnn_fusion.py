"""MXNet 1.9's ``MKLDNN_QUANTIZE`` backend: the two fusions around quantization.

Registered here as the subgraph backend ``DNNL_QUANTIZE`` (alias
``MKLDNN_QUANTIZE``), one pass (`mkldnn_quantize`) that does what MXNet's
properties do in turn; as in MXNet, a float graph gets the first fusion, a
quantized one the second, and ``quantize_model_mkldnn`` applies it before and
after quantizing.

`fuse_float` is the pass before: the Dropouts an operator feeds are read
through (identities at inference), then chains become MXNet's fused nodes, named
and flagged as MXNet names them, so that quantized checkpoints move between
the runtimes. A convolution takes a BatchNorm, then a sum (``elemwise_add``),
then a relu, a LeakyReLU (leaky, gelu), or relu6's ``clip`` from zero where no sum
came before
(``_sg_mkldnn_conv``, ``sg_mkldnn_conv_bn_add_act_<k>``, with ``with_bn``,
``with_sum``, ``with_act`` before a sum or ``with_postsum_act`` after it);
a fully connected layer takes a relu, a LeakyReLU (gelu, elu, leaky), abs or a clip
from zero
(``_sg_mkldnn_fully_connected``, ``sg_mkldnn_fully_connected_eltwise_<k>``,
``with_eltwise``). Each chain grows only through outputs read once, by the
next link. Convolutions are numbered in graph order, then FC layers.

`fuse_requantize` is the pass after: a quantized fused node or sum
(``_contrib_quantized_elemwise_add``) followed by a calibrated
``_contrib_requantize`` takes its range (``min_calib_range``,
``max_calib_range``: the node writes int8, or uint8 after a non-negative
activation, its range then from 0); a quantized FC whose requantize feeds a
``_contrib_dequantize`` writes float (``enable_float_output``) instead. Then `align_concat_scales`
gives the calibrated producers of a quantized concat one joint range, so that
the concat has nothing to rescale (MXNet's post-quantize scale alignment).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...backends.mkldnn_ops import quantized_out_type
from ...graph import Graph, Node, NodeEntry
from ...graph.node import read_through, topo_order
from ...subgraph import GraphPassProperty, register_backend, register_property
from ...subgraph.lift import lift
from ...symbol import Symbol

_CONV, _FC = "_sg_mkldnn_conv", "_sg_mkldnn_fully_connected"
_ADD = "_contrib_quantized_elemwise_add"
# Each link of a convolution chain: (operator, flag, name part); in this order.
_CONV_LINKS = (("BatchNorm", "with_bn", "bn_"), ("elemwise_add", "with_sum", "add_"),
               ("Activation", "with_act", "act_"))


def _relu(node: Node) -> bool:
    return node.op == "Activation" and node.params is not None and node.params.act_type == "relu"


def _conv_act(node: Node, summed: bool) -> bool:
    """An activation the INT8 convolution fuses: relu, a LeakyReLU of type leaky or
    gelu (YOLOv3's Darknet blocks), or relu6's clip from zero, but no clip after a sum
    (MXNet calibrates no conv + sum + relu6)."""
    if node.op == "clip":
        return not summed and node.params is not None and node.params.a_min == 0
    if node.op == "LeakyReLU":
        return node.params is not None and node.params.act_type in ("leaky", "gelu")
    return _relu(node)


def _next(g: Graph, users: list[list[int]], heads: set[int], nid: int, taken: set[int]
          ) -> int | None:
    """The one reader of node `nid`'s output, if only one node reads it."""
    readers = users[nid]
    if len(readers) != 1 or nid in heads or readers[0] in taken:
        return None
    reader = g.nodes[readers[0]]
    reads = [e for e in reader.inputs if g.node_id(e.node) == nid]
    return readers[0] if len(reads) == 1 and reads[0].index == 0 else None


def _conv_chain(g: Graph, nxt: Callable[[int], int | None], seed: int
                ) -> tuple[list[int], dict[str, str], str]:
    members, attrs, name = [seed], {}, "sg_mkldnn_conv_"
    link = 0
    while (reader := nxt(members[-1])) is not None:
        node = g.nodes[reader]
        op = "Activation" if node.op in ("clip", "LeakyReLU") else node.op
        step = next((k for k in range(link, len(_CONV_LINKS)) if op == _CONV_LINKS[k][0]), None)
        if step is None or (op == "Activation" and not _conv_act(node, "with_sum" in attrs)):
            break
        _, flag, part = _CONV_LINKS[step]
        if flag == "with_act" and "with_sum" in attrs:
            flag = "with_postsum_act"
        members.append(reader)
        attrs[flag] = "true"
        name += part
        link = step + 1
    return members, attrs, name


def _fc_act(node: Node) -> bool:
    """An activation MXNet 1.9.1's INT8 FC fuses (not sigmoid, tanh, softrelu,
    sqrt, square, exp: those stay after a float FC), and a clip only from zero."""
    if node.op == "LeakyReLU":
        return node.params is not None and node.params.act_type in ("gelu", "elu", "leaky")
    if node.op == "clip":
        return node.params is not None and node.params.a_min == 0
    return node.op == "abs" or _relu(node)


def _fc_chain(g: Graph, nxt: Callable[[int], int | None], seed: int
              ) -> tuple[list[int], dict[str, str], str]:
    reader = nxt(seed)
    if reader is not None and _fc_act(g.nodes[reader]):
        return [seed, reader], {"with_eltwise": "True"}, "sg_mkldnn_fully_connected_eltwise_"
    return [seed], {}, "sg_mkldnn_fully_connected_"


def _seeds(node: Node, seed_op: str) -> bool:
    # MXNet's fused convolution is 2-D.
    if node.op != seed_op or node.params is None:
        return False
    return seed_op != "Convolution" or len(node.params.kernel) == 2


def _fuse(sym: Symbol, seed_op: str, fused_op: str, chain: Callable) -> Symbol:
    g = Graph(sym.outputs)
    users, heads = g.users(), {g.node_id(e.node) for e in g.outputs}
    taken: set[int] = set()
    sets: list[tuple[list[int], list[tuple[int, int]]]] = []
    made: list[tuple[str, dict[str, str]]] = []
    for nid, node in enumerate(g.nodes):
        if not _seeds(node, seed_op) or nid in taken:
            continue
        members, attrs, name = chain(g, lambda n: _next(g, users, heads, n, taken), nid)
        taken.update(members)
        sets.append((members, [(members[-1], 0)]))
        made.append((f"{name}{len(made)}", attrs))
    if not sets:
        return sym

    def make(inner: Symbol, k: int) -> Node:
        name, attrs = made[k]
        return Node.create(fused_op, name, attrs, subgraphs=[inner])

    lifted = lift(g, sets, make, f"MKLDNN_QUANTIZE {fused_op}")
    names = [name for name, _ in made]
    for node in lifted.nodes:
        if node.op == fused_op:
            _split_shared_reads(node, set(names[:names.index(node.name)]))
    return Symbol(lifted.outputs)


def _split_shared_reads(node: Node, earlier: set[str]) -> None:
    """Subgraph inputs as MXNet's partitioner makes them: one per read, named after
    the entry with a count of its reads (``conv0_weight0``; a convolution summed with
    its own input reads that entry twice: ``..._output0``, ``..._output1``)."""
    inner = node.subgraphs[0]
    outer = {id(var): e for var, e in zip(_variables(inner), node.inputs, strict=True)}
    # MXNet fuses one set after the other: an entry is named as the graph has it then,
    # after the `earlier` fused nodes. lift named each variable after the entry in the
    # graph before any fusion, with its position as suffix.
    entry_name = {id(var): (e.node.entry_name(e.index) if e.node.name in earlier
                            else var.name[:-len(str(k))])
                  for k, (var, e) in enumerate(zip(_variables(inner), node.inputs, strict=True))}
    # The reads are counted in MXNet's depth-first order of the subgraph as cut, before
    # the sum's operands are swapped: ``elemwise_add(x, conv(x))`` names the sum's
    # read of x ``..._output0`` and the convolution's ``..._output1``.
    read: dict[str, int] = {}
    for inner_node, i in _variable_reads(inner):
        e = inner_node.inputs[i]
        base = entry_name[id(e.node)]
        read[base] = read.get(base, -1) + 1
        var = Node.create(None, f"{base}{read[base]}", e.node.attrs)
        outer[id(var)] = outer[id(e.node)]
        inner_node.inputs[i] = NodeEntry(var, 0)
    _sum_operand_last(inner)
    split = Symbol(inner.outputs)
    node.subgraphs = (split,)
    node.inputs = [outer[id(var)] for var in _variables(split)]
    node.reparse()


def _variable_reads(inner: Symbol) -> list[tuple[Node, int]]:
    """(reader, input position) of each read of a variable, in the depth-first order
    in which MXNet's partitioner meets them (each input's subgraph before the next)."""
    reads: list[tuple[Node, int]] = []
    seen: set[int] = set()
    stack: list[tuple[Node, int]] = [(e.node, 0) for e in reversed(inner.outputs)]
    while stack:
        node, i = stack.pop()
        if i == 0:
            if id(node) in seen or node.is_variable:
                continue
            seen.add(id(node))
        if i == len(node.inputs):
            continue
        stack.append((node, i + 1))
        e = node.inputs[i]
        if e.node.is_variable:
            reads.append((node, i))
        else:
            stack.append((e.node, 0))
    return reads


def _sum_operand_last(inner: Symbol) -> None:
    """The sum's chain operand first, as MXNet's ``ConnectSubgraphInputs`` swaps it
    (``residual + x`` in a gluon ResNet v1 block): the other operand, a subgraph
    input, then comes last, where ``_sg_mkldnn_conv`` reads its ``sum``."""
    for node in topo_order(inner.outputs):
        if node.op == "elemwise_add" and node.inputs[0].node.is_variable:
            node.inputs.reverse()


def _variables(sym: Symbol) -> list[Node]:
    return [n for n in topo_order(sym.outputs) if n.is_variable]


def mkldnn_quantize(sym: Symbol) -> Symbol:
    """`sym` through MXNet's ``MKLDNN_QUANTIZE`` properties in their order: the float
    fusion, then the requantize fusion and the concat scale alignment (each leaves
    a graph without its patterns as it was); `sym` is not modified."""
    return align_concat_scales(fuse_requantize(fuse_float(sym)))


class MkldnnQuantizeProperty(GraphPassProperty):
    """The ``DNNL_QUANTIZE`` backend's one step (inference only, as MXNet's)."""

    inference_only = True

    def rewrite(self, sym: Symbol) -> Symbol:
        return mkldnn_quantize(sym)


def fuse_float(sym: Symbol) -> Symbol:
    """`sym` with MXNet's fused convolution and FC nodes (the first pass), after
    its inference identities are gone (`without_identities`)."""
    sym = without_identities(sym)
    return _fuse(_fuse(sym, "Convolution", _CONV, _conv_chain), "FullyConnected", _FC, _fc_chain)


def without_identities(sym: Symbol) -> Symbol:
    """`sym` with each `_copy` (identity) and Dropout of mode 'training' that an
    operator feeds read through (MXNet's identity property, first in
    ``MKLDNN_QUANTIZE``): identities at inference, they would otherwise cut the
    chains and INT8 runs around them."""
    def identity(node: Node) -> bool:
        return (node.op == "_copy" or (node.op == "Dropout" and node.params is not None
                                       and node.params.mode == "training")) \
            and not node.inputs[0].node.is_variable
    return Symbol(read_through(sym.outputs, identity))


def fuse_requantize(qsym: Symbol) -> Symbol:
    """`qsym` with calibrated requantize (and a following dequantize) folded into
    the quantized fused node before it (the second pass); nodes copied."""
    order = Graph(qsym.outputs).nodes
    readers: dict[int, list[Node]] = {}
    for node in order:
        for e in node.inputs:
            readers.setdefault(id(e.node), []).append(node)
    replaced: dict[int, Node] = {}     # requantize / dequantize id -> the fused node
    copies: dict[int, Node] = {}
    for node in order:
        source = node.inputs[0].node if node.inputs else None
        fused = None if source is None else replaced.get(id(source), copies.get(id(source)))
        if fused is not None and _folds(node, fused) \
                and all(r is node for r in readers[id(source)]):
            _fold(fused, node)
            replaced[id(node)] = fused
            continue
        copy = node.with_inputs([_remap(e, copies, replaced) for e in node.inputs])
        copies[id(node)] = copy
    return Symbol([_remap(e, copies, replaced) for e in qsym.outputs])


_CONCAT, _POOL = "_contrib_quantized_concat", "_contrib_quantized_pooling"


def align_concat_scales(qsym: Symbol) -> Symbol:
    """`qsym` (changed in place) with each quantized concat's calibrated producers set
    to their joint range, widened to hold 0, as MXNet's
    ``SgMKLDNNPostQuantizeAlignScaleProperty``: the group grows from the concat
    through producers that only it (or concats and poolings of the group) read,
    passing through concats and poolings, and, when the concat has one reader,
    through the concats and poolings that read it; two calibrated members at least."""
    order = Graph(qsym.outputs).nodes
    readers: dict[int, list[Node]] = {}
    for node in order:
        for e in node.inputs:
            if all(r is not node for r in readers.setdefault(id(e.node), [])):
                readers[id(e.node)].append(node)
    taken: set[int] = set()
    for node in order:
        if node.op == _CONCAT and id(node) not in taken:
            matched = _scale_group(node, readers, taken)
            if len(matched) >= 2:
                _set_range(matched)
    return qsym


def _scale_group(concat: Node, readers: dict[int, list[Node]], taken: set[int]) -> list[Node]:
    """The calibrated producers whose ranges `concat`'s group aligns; the concats and
    poolings of the group join `taken`."""
    group: list[Node] = [concat]
    matched: list[Node] = []
    follow_readers = len(readers.get(id(concat), [])) <= 1

    def joins(node: Node) -> bool:
        return node.op in (_CONCAT, _POOL) and id(node) not in taken \
            and all(node is not g for g in group)

    for node in group:  # grows while it is walked
        for e in node.inputs:
            p = e.node
            if p.is_variable or any(p is m for m in matched) or \
                    not all(any(r is g for g in group) for r in readers[id(p)]):
                continue
            if "min_calib_range" in p.attrs and "max_calib_range" in p.attrs:
                matched.append(p)
            elif joins(p):
                group.append(p)
        if follow_readers:
            group += [r for r in readers.get(id(node), []) if joins(r)]
    taken.update(id(g) for g in group)
    return matched


def _set_range(nodes: list[Node]) -> None:
    # MXNet keeps the joint range in float32 and prints it with C's %f.
    lo = np.float32(min(0.0, *(float(n.attrs["min_calib_range"]) for n in nodes)))
    hi = np.float32(max(0.0, *(float(n.attrs["max_calib_range"]) for n in nodes)))
    for n in nodes:
        n.attrs.update(min_calib_range=f"{float(lo):f}", max_calib_range=f"{float(hi):f}")
        n.reparse()


def _folds(node: Node, fused: Node) -> bool:
    if not (fused.op == _ADD or fused.op in (_CONV, _FC) and fused.attrs.get("quantized")):
        return False
    if node.op == "_contrib_requantize":
        calibrated = "min_calib_range" in node.attrs and "max_calib_range" in node.attrs
        return calibrated and "enable_float_output" not in fused.attrs
    return (node.op == "_contrib_dequantize" and fused.op == _FC
            and "min_calib_range" in fused.attrs and "enable_float_output" not in fused.attrs)


def _fold(fused: Node, node: Node) -> None:
    if node.op == "_contrib_requantize":
        lo = node.attrs["min_calib_range"]
        fused.attrs.update(min_calib_range=lo, max_calib_range=node.attrs["max_calib_range"])
        fused.reparse()
        if float(lo) < 0 and fused.op != _ADD \
                and quantized_out_type(fused.operator()[1]) == np.uint8:
            # Entropy calibration for int8 gives every range as (-th, th); a node
            # writing uint8 (its activation is non-negative) scales by th either
            # way, and its readers refuse uint8 data whose range starts below zero
            # (as MXNet's, which stops there).
            fused.attrs["min_calib_range"] = f"{0.0:f}"
    else:   # float output: the calibrated range has no use
        del fused.attrs["min_calib_range"], fused.attrs["max_calib_range"]
        fused.attrs["enable_float_output"] = "True"
    fused.reparse()


def _remap(e: NodeEntry, copies: dict[int, Node], replaced: dict[int, Node]) -> NodeEntry:
    if id(e.node) in replaced:
        return NodeEntry(replaced[id(e.node)], e.index, e.version)
    return NodeEntry(copies[id(e.node)], e.index, e.version)


register_backend("DNNL_QUANTIZE", aliases=("MKLDNN_QUANTIZE",))
register_property("DNNL_QUANTIZE", MkldnnQuantizeProperty)
