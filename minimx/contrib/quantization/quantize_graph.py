"""MXNet 1.9's ``quantize_graph`` pass: a float symbol rewritten with INT8 operators.

Each operator with a quantized form (`QUANTIZED`, MXNet's ``FQuantizedOp``)
is replaced by it, named ``quantized_<name>``. Where float data enters an
INT8 operator a ``_contrib_quantize_v2`` is inserted (``data_quantize``,
``pool0_output_quantize``), except for the inputs the operator quantizes
itself or reads in float (``FAvoidQuantizeInput``: weights, bias and BatchNorm
parameters of the fused convolution, an LSTM's parameters and states). Data the
operator takes as uint8 with a scale and shift (``FNeedAsymQuantizeInput``: an
LSTM's) gets a ``_contrib_quantize_asym`` instead, after a dequantize where the
producer is INT8 (MXNet wires the int8 in, which the LSTM refuses). An
operator with float outputs (``FAvoidDequantizeOutput``: the LSTM) needs no
dequantize; where an INT8 operator reads one of them, the float output is
quantized (MXNet reads the reader's ranges from the LSTM's outputs instead,
``GetNumOutputs() - 2`` of a one-output node pointing at outputs 4294967295 and
0). After an operator whose output is int32
(``FNeedRequantize``) a ``_contrib_requantize`` (``requantize_<name>``)
follows; where INT8 meets a float operator, or a head, a
``_contrib_dequantize`` (``<name>_dequantize``). The quantize nodes of
parameters named in `offline_params` become variables
(``fc0_weight_quantize``, ``_min``, ``_max``) whose values the caller
computes once.

``quantize_mode='full'`` quantizes every operator it can; ``'smart'``
quantizes convolutions, fully connected layers and LSTMs and keeps the other
quantizable operators (pooling, relu, flatten, sum, concat, BatchNorm, Embedding)
INT8 only where they lie between such layers. An RNN other than an LSTM, or an LSTM
with a projection or sequence lengths, stays float (MXNet 1.9.1 quantizes those
too and then fails: its INT8 LSTM takes none of them).

`set_calib_table` writes calibrated ranges onto the quantize (both kinds),
requantize and calibrated-output nodes (`calibrated_nodes`), as MXNet's
``SetCalibTableToQuantizedGraph``.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from ...base import MinimxError, warn_user
from ...graph import Node, NodeEntry
from ...graph.mxnet_names import entry_suffix
from ...graph.node import topo_order
from ...ops.params import Params
from ...symbol import Symbol
from .entropy import QUANTIZED_DTYPES

QUANTIZE_MODES = ("smart", "full")
GRANULARITIES = ("tensor-wise", "channel-wise")
_QUANTIZE, _REQUANTIZE, _DEQUANTIZE = ("_contrib_quantize_v2", "_contrib_requantize",
                                       "_contrib_dequantize")
_QUANTIZE_ASYM = "_contrib_quantize_asym"


@dataclass(frozen=True)
class QuantizedForm:
    """How one float operator is quantized (MXNet's attributes of that operator)."""

    op: str                   # the quantized operator
    must: bool                # FQuantizable kMust (else kSupport: only between quantized layers)
    requantize: bool = False  # FNeedRequantize: its output is int32
    calibrate_output: bool = False   # FNeedCalibrateOutput: it takes its own output range
    flag: tuple[str, str] | None = None   # an attribute marking the quantized node
    applies: Callable[[Params], bool] = lambda p: True
    avoid: Callable[[Node, str], frozenset[int]] = lambda node, granularity: frozenset()
    asym: frozenset[int] = frozenset()   # FNeedAsymQuantizeInput: uint8 with scale and shift
    float_outputs: bool = False          # FAvoidDequantizeOutput


def _fused_conv_params(node: Node, granularity: str) -> frozenset[int]:
    # Data (input 0) and the summed operand (the last input) are INT8; the weight,
    # bias and BatchNorm arrays between them stay float for the operator to fold.
    summed = 1 if node.params is not None and node.params.get("with_sum") else 0
    return frozenset(range(1, len(node.inputs) - summed))


def _fused_fc_params(node: Node, granularity: str) -> frozenset[int]:
    # Channel-wise scales are computed from the float weights inside the operator.
    return frozenset(range(1, len(node.inputs)) if granularity == "channel-wise" else ())


def _batch_norm_params(node: Node, granularity: str) -> frozenset[int]:
    # Only the data is INT8: gamma, beta and the statistics stay float.
    return frozenset(range(1, len(node.inputs)))


def _lstm(p: Params) -> bool:
    # What `_contrib_quantized_rnn` computes (MXNet marks every LSTM kMust, and any
    # RNN quantizable at all, then fails on the others).
    return p.mode == "lstm" and p.projection_size is None and not p.use_sequence_length


QUANTIZED: dict[str, QuantizedForm] = {
    "_sg_mkldnn_conv": QuantizedForm("_sg_mkldnn_conv", must=True, requantize=True,
                                     flag=("quantized", "true"), avoid=_fused_conv_params),
    "_sg_mkldnn_fully_connected": QuantizedForm(
        "_sg_mkldnn_fully_connected", must=True, requantize=True, flag=("quantized", "True"),
        avoid=_fused_fc_params),
    "Convolution": QuantizedForm("_contrib_quantized_conv", must=True, requantize=True),
    "FullyConnected": QuantizedForm("_contrib_quantized_fully_connected", must=True,
                                    requantize=True),
    "Pooling": QuantizedForm("_contrib_quantized_pooling", must=False,
                             applies=lambda p: p.pool_type in ("max", "avg")),
    "Activation": QuantizedForm("_contrib_quantized_act", must=False,
                                applies=lambda p: p.act_type == "relu"),
    "Flatten": QuantizedForm("_contrib_quantized_flatten", must=False),
    # int32 out, requantized after (MXNet's FNeedRequantize); quantize_model_mkldnn
    # folds the requantize back (`mkldnn_fusion.fuse_requantize`).
    "elemwise_add": QuantizedForm("_contrib_quantized_elemwise_add", must=False,
                                  requantize=True),
    # MXNet calibrates no concat: `mkldnn_fusion.align_concat_scales` gives its inputs one range.
    "Concat": QuantizedForm("_contrib_quantized_concat", must=False),
    "BatchNorm": QuantizedForm("_contrib_quantized_batch_norm", must=False,
                               calibrate_output=True, avoid=_batch_norm_params),
    # The indices stay float; the weight is quantized.
    "Embedding": QuantizedForm("_contrib_quantized_embedding", must=False,
                               applies=lambda p: p.dtype == np.float32,
                               avoid=lambda node, granularity: frozenset({0})),
    # uint8 data; the weights (quantized inside), states and outputs are float32.
    "RNN": QuantizedForm("_contrib_quantized_rnn", must=True, flag=("quantized", "true"),
                         applies=_lstm, avoid=lambda node, granularity: frozenset({1, 2, 3}),
                         asym=frozenset({0}), float_outputs=True),
}


def check_choices(quantized_dtype: str, quantize_mode: str, quantize_granularity: str) -> None:
    """MinimxError naming the value when one of the three is not a known choice."""
    for what, value, known in (("quantized_dtype", quantized_dtype, QUANTIZED_DTYPES),
                               ("quantize_mode", quantize_mode, QUANTIZE_MODES),
                               ("quantize_granularity", quantize_granularity, GRANULARITIES)):
        if value not in known:
            raise MinimxError(f"quantization: unknown {what} {value!r}, expected one of "
                              f"{', '.join(known)}")


def check_excluded(sym: Symbol, excluded_sym_names: Iterable[str],
                   excluded_op_names: Iterable[str]) -> None:
    """MinimxError for excluded names no node (or fused node's inner node) has."""
    names, ops = set(), set()
    for node in topo_order(sym.outputs):
        for n in [node, *_inner_nodes(node)]:
            if not n.is_variable:
                names.add(n.name)
                ops.add(n.op)
    for what, given, known in (("excluded_sym_names", excluded_sym_names, names),
                               ("excluded_op_names", excluded_op_names, ops)):
        missing = sorted(set(given) - known)
        if missing:
            raise MinimxError(f"quantization: {what} {missing} name no operator of the symbol")


def _inner_nodes(node: Node) -> list[Node]:
    return [n for sub in node.subgraphs for n in topo_order(sub.outputs)]


def _form(node: Node, excluded_names: set[str], excluded_ops: set[str]) -> QuantizedForm | None:
    """The node's quantized form, or None if it stays float (MXNet's NeedQuantize)."""
    form = None if node.is_variable else QUANTIZED.get(node.op or "")
    if form is None or node.params is None or not form.applies(node.params):
        return None
    if node.name in excluded_names or node.op in excluded_ops:
        return None
    if any(n.name in excluded_names for n in _inner_nodes(node) if not n.is_variable):
        return None
    return form


def _warn_fused_exclusions(order: list[Node], chosen: Mapping[int, QuantizedForm],
                           excluded_ops: set[str]) -> None:
    """Warn of excluded operators that a fused node being quantized holds: as in
    MXNet, an operator name matches the fused node's own op, so those are
    quantized with it (a name matches inner nodes too)."""
    inside: dict[str, set[str]] = {}
    for node in order:
        if id(node) in chosen:
            for n in _inner_nodes(node):
                if n.op in excluded_ops:
                    inside.setdefault(n.op, set()).add(node.op or "")
    if inside:
        held = "; ".join(f"{op} in {', '.join(sorted(fused))}"
                         for op, fused in sorted(inside.items()))
        warn_user(f"quantization: excluded_op_names match operators fused into nodes that "
                  f"are quantized whole ({held}); as in MXNet, exclude the fused op or the "
                  "layers by name to keep them in float32")


def _chosen(order: list[Node], excluded_names: set[str], excluded_ops: set[str],
            mode: str) -> dict[int, QuantizedForm]:
    """The nodes to quantize by id. Smart mode keeps a supporting operator only when
    it is reached both from a must-quantize node's inputs and from its outputs."""
    forms = {id(n): f for n in order if (f := _form(n, excluded_names, excluded_ops))}
    if mode == "full":
        return forms
    readers: dict[int, list[Node]] = {}
    for node in order:
        for e in node.inputs:
            readers.setdefault(id(e.node), []).append(node)
    must = [n for n in order if id(n) in forms and forms[id(n)].must]
    upstream = _reach(must, lambda n: [e.node for e in n.inputs], forms)
    downstream = _reach(must, lambda n: readers.get(id(n), []), forms)
    return {k: f for k, f in forms.items() if f.must or (k in upstream and k in downstream)}


def _reach(start: list[Node], step: Callable[[Node], list[Node]],
           forms: Mapping[int, QuantizedForm]) -> set[int]:
    """Supporting nodes reached from `start` through supporting nodes only."""
    seen: set[int] = set()
    queue = deque(start)
    while queue:
        for nxt in step(queue.popleft()):
            if id(nxt) in forms and not forms[id(nxt)].must and id(nxt) not in seen:
                seen.add(id(nxt))
                queue.append(nxt)
    return seen


class _Rewrite:
    """One walk of MXNet's QuantizeGraph: `mirror` maps each float node to its
    replacement, `float_of` maps new nodes back for calibration names."""

    def __init__(self, chosen: Mapping[int, QuantizedForm], quantized_dtype: str,
                 granularity: str) -> None:
        self.chosen, self.dtype, self.granularity = chosen, quantized_dtype, granularity
        self.mirror: dict[int, Node] = {}
        # (float entry, quantize op) -> its quantize node. MXNet keys by the entry alone,
        # so an LSTM and an INT8 layer reading one entry would share the first one made.
        self.quantized: dict[tuple[tuple[int, int], str], Node] = {}
        self.float_of: dict[int, Node] = {}

    def visit(self, node: Node) -> None:
        form = self.chosen.get(id(node))
        new = self._quantized(node, form) if form else self._float(node)
        self.mirror[id(node)] = new
        self.float_of[id(new)] = node

    def _quantized(self, node: Node, form: QuantizedForm) -> Node:
        assert node.params is not None
        attrs = dict(node.attrs)
        if form.flag:
            attrs[form.flag[0]] = form.flag[1]
        if self.granularity == "channel-wise" and node.op == "_sg_mkldnn_fully_connected":
            attrs["channel_wise_quantize"] = "True"
        avoid = form.avoid(node, self.granularity)
        data, ranges = [], []
        for i, e in enumerate(node.inputs):
            if i in avoid:
                data.append(NodeEntry(self.mirror[id(e.node)], e.index, e.version))
                continue
            entry, lo, hi = self._asym_input(e) if i in form.asym else self._int8_input(e)
            data.append(entry)
            ranges += [lo, hi]
        new = Node.create(form.op, f"quantized_{node.name}", attrs, data + ranges,
                          node.subgraphs)
        if not form.requantize:
            return new
        return Node.create(_REQUANTIZE, f"requantize_{node.name}", {"out_type": self.dtype},
                           [NodeEntry(new, i) for i in range(3)])

    def _int8(self, node: Node) -> bool:
        """Whether `node` is quantized with INT8 outputs (and their ranges)."""
        form = self.chosen.get(id(node))
        return form is not None and not form.float_outputs

    def _int8_input(self, e: NodeEntry) -> tuple[NodeEntry, NodeEntry, NodeEntry]:
        """An INT8 input: a quantized producer's own outputs, or a quantize node."""
        mirror = self.mirror[id(e.node)]
        if self._int8(e.node):
            src = mirror.inputs[0].node if mirror.op == _DEQUANTIZE else mirror
            first = src.num_visible_outputs() - 2 + 2 * e.index
            return (NodeEntry(src, e.index, e.version), NodeEntry(src, first),
                    NodeEntry(src, first + 1))
        return self._quantize(_QUANTIZE, e, NodeEntry(mirror, e.index, e.version),
                              {"out_type": self.dtype})

    def _asym_input(self, e: NodeEntry) -> tuple[NodeEntry, NodeEntry, NodeEntry]:
        """uint8 data with its scale and shift, from the float value of `e`."""
        return self._quantize(_QUANTIZE_ASYM, e, self._float_entry(e), {})

    def _quantize(self, op: str, e: NodeEntry, value: NodeEntry,
                  attrs: Mapping[str, str]) -> tuple[NodeEntry, NodeEntry, NodeEntry]:
        """The outputs of the `op` node quantizing float `value`, entry `e` of the
        float graph (one node per entry and op)."""
        key = (e.key(), op)
        if key not in self.quantized:
            self.quantized[key] = Node.create(
                op, f"{e.node.name}{entry_suffix(e)}_quantize", attrs, [value])
        q = self.quantized[key]
        return NodeEntry(q, 0, e.version), NodeEntry(q, 1), NodeEntry(q, 2)

    def _float_entry(self, e: NodeEntry) -> NodeEntry:
        """The float value of `e` in the new graph: an INT8 producer's is dequantized
        (once, for all its float readers)."""
        mirror = self.mirror[id(e.node)]
        if not self._int8(e.node):
            return NodeEntry(mirror, e.index, e.version)
        if mirror.op != _DEQUANTIZE:
            mirror = self.dequantize(e.node, NodeEntry(mirror, e.index, e.version),
                                     mirror.num_visible_outputs() - 2)
            self.mirror[id(e.node)] = mirror
        return NodeEntry(mirror, 0)

    def _float(self, node: Node) -> Node:
        return node.with_inputs([self._float_entry(e) for e in node.inputs])

    def dequantize(self, node: Node, entry: NodeEntry, num_outputs: int) -> Node:
        first = num_outputs + 2 * entry.index
        deq = Node.create(_DEQUANTIZE, f"{node.name}_dequantize", {},
                          [entry, NodeEntry(entry.node, first), NodeEntry(entry.node, first + 1)])
        self.float_of[id(deq)] = node
        return deq

    def head(self, e: NodeEntry) -> NodeEntry:
        mirror = self.mirror[id(e.node)]
        if not self._int8(e.node):
            return NodeEntry(mirror, e.index, e.version)
        if mirror.op == _DEQUANTIZE:
            # A float reader made it already; dequantizing that float again is
            # MXNet's bug (its bind fails on the ranges' shapes).
            return NodeEntry(mirror, 0)
        deq = self.dequantize(e.node, NodeEntry(mirror, e.index, e.version),
                              e.node.num_visible_outputs())
        return NodeEntry(deq, 0)


def quantize_symbol(sym: Symbol, excluded_sym_names: Iterable[str] = (),
                    excluded_op_names: Iterable[str] = (), offline_params: Iterable[str] = (),
                    quantized_dtype: str = "int8", quantize_mode: str = "smart",
                    quantize_granularity: str = "tensor-wise") -> tuple[Symbol, list[str]]:
    """The quantized symbol, and the names of the float outputs (or inputs) whose
    ranges calibration is to find, in MXNet's order.

    >>> import minimx as mx
    >>> fc = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=2, name='fc0')
    >>> qsym, layers = quantize_symbol(fc, offline_params=['fc0_weight', 'fc0_bias'])
    >>> [n['name'] for n in __import__('json').loads(qsym.tojson())['nodes']][:2]
    ['data', 'data_quantize']
    >>> layers
    ['data', 'fc0_output']
    """
    check_choices(quantized_dtype, quantize_mode, quantize_granularity)
    excluded_names = _name_set("excluded_sym_names", excluded_sym_names)
    excluded_ops = _name_set("excluded_op_names", excluded_op_names)
    check_excluded(sym, excluded_names, excluded_ops)
    order = topo_order(sym.outputs)
    chosen = _chosen(order, excluded_names, excluded_ops, quantize_mode)
    _warn_fused_exclusions(order, chosen, excluded_ops)
    rewrite = _Rewrite(chosen, quantized_dtype, quantize_granularity)
    for node in order:
        rewrite.visit(node)
    heads = _offline(set(offline_params), [rewrite.head(e) for e in sym.outputs])
    return Symbol(heads), _calib_layers(heads, rewrite.float_of)


def _name_set(what: str, names: Iterable[str]) -> set[str]:
    # A bare string would be read letter by letter (MXNet asks for a list).
    if isinstance(names, str):
        raise MinimxError(f"quantization: {what} must be a list of names, got the string "
                          f"{names!r} (write [{names!r}])")
    return set(names)


def _offline(params: set[str], heads: list[NodeEntry]) -> list[NodeEntry]:
    """Quantize nodes of the `params` variables become variables ``<q>``, ``<q>_min``,
    ``<q>_max`` (MXNet's OfflineParams)."""
    made: dict[tuple[int, int], Node] = {}
    for node in topo_order(heads):
        for i, e in enumerate(node.inputs):
            q = e.node
            if q.op == _QUANTIZE and q.inputs[0].node.is_variable \
                    and q.inputs[0].node.name in params:
                var = made.setdefault(e.key(), Node.create(
                    None, q.name + ("", "_min", "_max")[e.index]))
                node.inputs[i] = NodeEntry(var, 0)
    return heads


def _calib_layers(heads: list[NodeEntry], float_of: Mapping[int, Node]) -> list[str]:
    layers = []
    for node in topo_order(heads):
        if node.op in (_QUANTIZE, _QUANTIZE_ASYM, _REQUANTIZE):
            e = node.inputs[0]
            if node.op == _REQUANTIZE:
                layers.append(float_of[id(node)].entry_name(e.index))
            elif e.node.is_variable:
                layers.append(e.node.name)
            else:
                layers.append(float_of[id(e.node)].entry_name(e.index))
        elif _calibrates_output(node):
            layers.append(float_of[id(node)].entry_name(0))
    return layers


def _calibrates_output(node: Node) -> bool:
    return any(f.calibrate_output and f.op == node.op for f in QUANTIZED.values())


def calibrated_nodes(qsym: Symbol) -> list[tuple[str, Node]]:
    """The nodes of `qsym` that take a calibrated range, each with the name of the
    float layer output (or input) whose range it takes."""
    prefix = "quantized_"
    found = []
    for node in topo_order(qsym.outputs):
        if node.op in (_QUANTIZE, _QUANTIZE_ASYM, _REQUANTIZE):
            e = node.inputs[0]
            if e.node.op == _DEQUANTIZE:   # the float value of an INT8 layer's output
                e = e.node.inputs[0]
                e = e.node.inputs[0] if e.node.op == _REQUANTIZE else e
            name = e.node.entry_name(e.index)
            if e.node.name.startswith(prefix):
                name = name[len(prefix):]
        elif _calibrates_output(node):
            name = node.entry_name(0)[len(prefix):]
        else:
            continue
        found.append((name, node))
    return found


def set_calib_table(qsym: Symbol, ranges: Mapping[str, tuple[float, float]]) -> Symbol:
    """`qsym` (fresh from `quantize_symbol`, changed in place) with each calibrated
    range written as ``min_calib_range``/``max_calib_range`` in C's ``%f``."""
    for name, node in calibrated_nodes(qsym):
        if name in ranges:
            lo, hi = ranges[name]
            node.attrs.update(min_calib_range=f"{float(lo):f}", max_calib_range=f"{float(hi):f}")
            node.reparse()
    return qsym
