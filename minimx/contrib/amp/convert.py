"""`convert_symbol` and `convert_model`: a float32 model made a bfloat16 mixed-precision
one, as MXNet 1.9.1's ``mx.contrib.amp`` makes it (python/mxnet/contrib/amp/amp.py,
``MXReducePrecisionSymbol`` in src/c_api/c_api_symbolic.cc, src/nnvm/amp_infer_unknown.cc).

After the casts are inserted (`reduce_precision`), the new graph's types are
inferred from its data inputs (float32) and each parameter variable gets a
``__dtype__`` attribute saying which type it is to be given: float32, or with
``cast_optional_params`` bfloat16 where it feeds a bfloat16 operator directly.
`convert_model` then converts the parameters to those types.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...base import BFLOAT16, DTYPE_TO_FLAG, FLAG_TO_DTYPE, AssertedError, MinimxError, warn_user
from ...graph import Graph, Node, NodeEntry, topo_order
from ...graph.infer import infer_dtypes
from ...symbol import Symbol
from .lists import check_target, lists
from .reduce_precision import OpLists, reduce_precision

F32 = np.dtype(np.float32)
DTYPE_KEY = "__dtype__"
Conditional = Sequence[tuple[str, str, Sequence[str]]]


def _checked_lists(target_dtype_ops: Sequence[str] | None, fp32_ops: Sequence[str] | None,
                   conditional_fp32_ops: Conditional | None) -> tuple[list, list, list]:
    """The user's lists (the packaged ones where None), checked as MXNet checks them."""
    known = lists()
    target = list(known.target_dtype_ops if target_dtype_ops is None else target_dtype_ops)
    fp32 = list(known.fp32_ops if fp32_ops is None else fp32_ops)
    conditional = list(known.conditional_fp32_ops if conditional_fp32_ops is None
                       else conditional_fp32_ops)
    for rule in conditional:
        if not (len(rule) == 3 and isinstance(rule[0], str) and isinstance(rule[1], str)
                and isinstance(rule[2], (list, tuple))):
            raise AssertedError(f"conditional_fp32_ops: {rule!r} is not "
                                "(op name, parameter name, list of values)")
    cond_ops = [rule[0] for rule in conditional]
    for (a, b), (left, right) in {("target_dtype_ops", "fp32_ops"): (target, fp32),
                                  ("target_dtype_ops", "conditional_fp32_ops"): (target, cond_ops),
                                  ("fp32_ops", "conditional_fp32_ops"): (fp32, cond_ops)}.items():
        common = sorted(set(left) & set(right))
        if common:
            raise AssertedError(f"ops cannot be in two lists: {common} are in {a} and {b}")
    allowed = {*known.target_dtype_ops, *known.fp32_ops, *known.target_fp32_ops,
               *(rule[0] for rule in known.conditional_fp32_ops)}
    unknown = sorted({*target, *fp32, *cond_ops} - allowed)
    if unknown:
        raise AssertedError(f"ops {unknown} are in none of the lists list_lp16_ops, "
                            "list_fp32_ops, list_lp16_fp32_ops, list_conditional_fp32_ops")
    return target, fp32, conditional


def _op_lists(target: list, fp32: list, conditional: list, excluded: Sequence[str]) -> OpLists:
    rules: dict[str, dict[str, list[str]]] = {}
    for op, param, values in conditional:
        rules.setdefault(op, {}).setdefault(param, []).extend(str(v) for v in values)
    known = lists()
    return OpLists(frozenset(target), frozenset(fp32), frozenset(known.widest_type_casts),
                   rules, frozenset(excluded))


def _infer_unknown(g: Graph, inferred: list, target: np.dtype) -> list:
    """MXNet's AMPInferUnknown: a variable of unknown type read by casts takes the
    type they cast it to (the inferred one back, if two casts disagree)."""
    result, visited = list(inferred), {}

    def update(e: NodeEntry, dtype: np.dtype) -> None:
        eid, name = g.entry_id(e), e.node.name
        if name not in visited:
            if result[eid] is None:
                visited[name] = result[eid] = dtype
        elif visited[name] != dtype:
            result[eid] = inferred[eid]

    for node in g.nodes:
        if node.op == "amp_cast":
            for e in node.inputs:
                if e.node.is_variable:
                    update(e, node.operator()[1].dtype)
        elif node.op == "amp_multicast" and all(e.node.is_variable for e in node.inputs):
            for e in node.inputs:
                update(e, target)
    return result


def _set_input_dtypes(g: Graph, dtypes: list, data_names: Sequence[str],
                      model_params: set[str]) -> None:
    """``__dtype__`` on the variables: every model parameter's (all of them, when
    given), else those that had one; an unknown type counts as float32."""
    with_dtype = {name: F32 for name in data_names}
    without_dtype: dict[str, np.dtype] = {}
    variables = [n for n in g.nodes if n.is_variable]
    for node in variables:
        dtype = dtypes[g.entry_id(NodeEntry(node))] or F32
        (with_dtype if DTYPE_KEY in node.attrs else without_dtype)[node.name] = dtype
    for node in variables:
        if model_params and node.name in model_params:
            dtype = with_dtype.get(node.name, without_dtype.get(node.name))
        elif not model_params and DTYPE_KEY in node.attrs and node.name in with_dtype:
            dtype = with_dtype[node.name]
        else:
            continue
        node.attrs[DTYPE_KEY] = str(DTYPE_TO_FLAG[np.dtype(dtype)])


def convert_symbol(sym: Symbol, target_dtype: object = "bfloat16",
                   target_dtype_ops: Sequence[str] | None = None,
                   fp32_ops: Sequence[str] | None = None,
                   conditional_fp32_ops: Conditional | None = None,
                   excluded_sym_names: Sequence[str] | None = None,
                   data_names: Sequence[str] | None = None,
                   cast_optional_params: bool = False) -> Symbol:
    """`sym` (float32) with ``amp_cast`` / ``amp_multicast`` nodes that run the
    `target_dtype_ops` in bfloat16, as MXNet 1.9.1's ``amp.convert_symbol``.

    Lists left as None are MXNet's (`list_lp16_ops`, ...). `data_names` are the
    inputs that are data, not parameters (default: every input without a
    ``__dtype__`` attribute). `sym` itself is not changed.

    >>> import minimx as mx
    >>> fc = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=2, name='fc')
    >>> [n.name for n in mx.graph.topo_order(convert_symbol(fc).outputs)][-3:]
    ['fc_bias_amp_cast_bfloat16', 'fc', 'fc_output_amp_cast_float32']
    """
    if not isinstance(sym, Symbol):
        raise MinimxError(f"convert_symbol takes a Symbol, not {type(sym).__name__}")
    check_target(target_dtype)
    target, fp32, conditional = _checked_lists(target_dtype_ops, fp32_ops, conditional_fp32_ops)
    nodes = topo_order(sym.outputs)
    inputs = {n.name: n for n in nodes if n.is_variable}
    # MXNet ignores a name that matches nothing, and scripts pass one list to
    # several models; a warning keeps them running and tells of a misspelt
    # name, which would otherwise leave its layer in bfloat16 without a word.
    unknown = sorted(set(excluded_sym_names or ()) - {n.name for n in nodes if not n.is_variable})
    if unknown:
        warn_user(f"amp: excluded_sym_names {unknown} name no operator of the symbol "
                  "and exclude nothing")
    if data_names is None:
        data_names = [name for name, n in inputs.items() if DTYPE_KEY not in n.attrs]
    missing = sorted(set(data_names) - set(inputs))
    if missing:
        raise MinimxError(f"data_names {missing} are not inputs of the symbol "
                          f"(inputs: {', '.join(inputs)})")
    heads = reduce_precision(sym.outputs, _op_lists(target, fp32, conditional,
                                                    excluded_sym_names or ()),
                             BFLOAT16, data_names, cast_optional_params)
    g = Graph(heads)
    known = {g.entry_id(NodeEntry(n)): F32 for n in g.nodes
             if n.is_variable and n.name in data_names}
    dtypes = infer_dtypes(g, known)
    if cast_optional_params:
        dtypes = _infer_unknown(g, dtypes, BFLOAT16)
    _set_input_dtypes(g, dtypes, data_names, set(inputs) - set(data_names))
    return Symbol(heads)


def _converted(params: Mapping[str, Any], variables: Mapping[str, Node]) -> dict[str, Any]:
    """A copy of `params` with each in the type its variable's ``__dtype__`` gives."""
    result = dict(params)
    for name, value in params.items():
        flag = variables[name].attrs.get(DTYPE_KEY, "-1") if name in variables else "-1"
        if flag != "-1":
            result[name] = value.astype(FLAG_TO_DTYPE[int(flag)])
    return result


def convert_model(sym: Symbol, arg_params: Mapping[str, Any], aux_params: Mapping[str, Any],
                  target_dtype: object = "bfloat16", target_dtype_ops: Sequence[str] | None = None,
                  fp32_ops: Sequence[str] | None = None,
                  conditional_fp32_ops: Conditional | None = None,
                  excluded_sym_names: Sequence[str] | None = None,
                  cast_optional_params: bool = False
                  ) -> tuple[Symbol, dict[str, Any], dict[str, Any]]:
    """(symbol, arg_params, aux_params) of the mixed-precision model, as MXNet 1.9.1's
    ``amp.convert_model``: `convert_symbol` with every input not in the params as
    data, and each parameter converted to the type its ``__dtype__`` says. The
    dicts passed in are not changed; the returned ones are new."""
    if not isinstance(arg_params, Mapping) or not isinstance(aux_params, Mapping):
        raise MinimxError("convert_model: arg_params and aux_params must be dicts of "
                          "name -> NDArray")
    params = {*arg_params, *aux_params}
    data_names = [name for name in sym.list_inputs() if name not in params]
    converted = convert_symbol(sym, target_dtype, target_dtype_ops, fp32_ops,
                               conditional_fp32_ops, excluded_sym_names, data_names,
                               cast_optional_params)
    variables = {n.name: n for n in topo_order(converted.outputs) if n.is_variable}
    return converted, _converted(arg_params, variables), _converted(aux_params, variables)
