"""`mx.gluon.SymbolBlock`: a graph and its parameters as a Gluon block, for inference.

MXNet 1.9.1's SymbolBlock, the way its users run exported models::

    net = mx.gluon.SymbolBlock.imports('m-symbol.json', ['data'], 'm-0000.params')
    net.hybridize(backend='MKLDNN')   # optional: partition for oneDNN
    out = net(x)

A forward runs the graph (partitioned first when a backend is chosen) with one
executor per input signature (`cached_op`). There is no autograd: a forward
never records for training, and the parameters keep no gradients; in autograd's
training mode a forward computes as in training (BatchNorm's batch statistics,
Dropout), as MXNet's.

>>> import minimx as mx
>>> data = mx.sym.var('data')
>>> net = mx.gluon.SymbolBlock(mx.sym.FullyConnected(data, num_hidden=2, name='fc'), data)
>>> net.initialize(mx.init.One())
>>> net(mx.nd.ones((1, 3))).asnumpy()
array([[4., 4.]], dtype=float32)
"""
from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import name as _name
from ..base import BFLOAT16, MinimxError, ShapeError, as_dtype
from ..context import Context
from ..initializer import Initializer
from ..ndarray import NDArray, save
from ..ndarray import load as load_arrays
from ..symbol import Group, Symbol, var
from ..symbol import load as load_symbol
from .cached_op import CachedOp
from .errors import DeferredInitializationError, InputError, ParameterError
from .nesting import Format, flatten, regroup
from .parameter import (
    DEFAULT_DTYPE,
    Parameter,
    ParameterDict,
    brief_list,
    dtype_type,
    matching,
)


def _common_prefix(names: list[str]) -> str:
    """The longest string every name starts with."""
    if not names:
        return ""
    prefix = names[0]
    for name in names:
        i = 0
        while i < len(prefix) and i < len(name) and prefix[i] == name[i]:
            i += 1
        prefix = prefix[:i]
    return prefix


def _infer_param_types(inputs: list[Symbol], out: Symbol) -> tuple[list, list]:
    """The dtypes of `out`'s arguments and auxiliary states as inferred from the
    dtypes the input Variables declare; float32 for all where they do not decide."""
    args, aux = out.list_arguments(), out.list_auxiliary_states()
    declared: dict[str, Any] = {}
    for sym in inputs:
        dtypes = sym.infer_type()[0]
        if not dtypes:
            return [DEFAULT_DTYPE] * len(args), [DEFAULT_DTYPE] * len(aux)
        declared[str(sym.name)] = dtypes[0]
    try:
        arg_types, _, aux_types = out.infer_type(**declared)
    except MinimxError:
        arg_types = aux_types = None
    if arg_types is None or None in arg_types:
        arg_types = [DEFAULT_DTYPE] * len(args)
    if aux_types is None or None in aux_types:
        aux_types = [DEFAULT_DTYPE] * len(aux)
    return [dtype_type(t) for t in arg_types], [dtype_type(t) for t in aux_types]


class SymbolBlock:
    """A block whose graph is `outputs` (a Symbol, or a nested list of them) with
    the Variables `inputs` as its inputs; every other argument and auxiliary state
    is a Parameter (taken from `params` where it holds one)."""

    def __init__(self, outputs: Symbol | Sequence, inputs: Symbol | Sequence,
                 params: ParameterDict | None = None) -> None:
        # As MXNet's: the name comes from the name manager, the prefix is empty.
        self._name = _name.current().get(None, "symbolblock")
        self._prefix = ""
        self._params = ParameterDict("", params)
        if isinstance(inputs, Symbol) and len(inputs.list_outputs()) == 1:
            inputs = [inputs]
        if isinstance(outputs, (list, tuple)) and len(outputs) == 1:
            outputs = outputs[0]
        syms, self._in_format = flatten(inputs, "input")
        outs, self._out_format = flatten(outputs, "output")
        for sym in syms:
            if not isinstance(sym, Symbol) or len(sym.get_internals().list_outputs()) != 1:
                raise InputError(f"Input symbols must be variable, but {sym!r} is an output of "
                                 "operators")
        out = Group(outs) if len(outs) > 1 else outs[0]
        self._input_names = [str(s.name) for s in syms]
        arg_types, aux_types = _infer_param_types(syms, out)
        for name, dtype in zip(out.list_arguments(), arg_types, strict=True):
            if name not in self._input_names:
                self._params.get(name, allow_deferred_init=True, dtype=dtype)
        for name, dtype in zip(out.list_auxiliary_states(), aux_types, strict=True):
            if name not in self._input_names:
                self._params.get(name, grad_req="null", allow_deferred_init=True, dtype=dtype)
        self._cached_graph: tuple[list[Symbol], Symbol] = (syms, out)
        strip = len(_common_prefix(list(self._params.keys())))
        self._reg_params = {k[strip:]: v for k, v in self._params.items()}
        self._cached_op: CachedOp | None = None
        # Each input of the graph run, by name: its position among the inputs given,
        # or its Parameter.
        self._cached_op_args: list[tuple[str, int | Parameter]] = []
        # (Parameter.replacements, the arrays by name) as gathered for the last call.
        self._gathered: tuple[int, dict[str, NDArray]] | None = None
        self._active = False
        self._flags: list[tuple[str, Any]] = []
        self._backend: str | None = None
        self._backend_opts: dict[str, Any] = {}

    @staticmethod
    def imports(symbol_file: str, input_names: str | Sequence[str],
                param_file: str | None = None, ctx: Context | list[Context] | None = None,
                allow_missing: bool = False, ignore_extra: bool = False) -> SymbolBlock:
        """A SymbolBlock of an exported model (``HybridBlock.export``,
        ``Module.save_checkpoint``): the graph in `symbol_file` with `input_names` as
        its inputs, the parameters from `param_file` on `ctx`, in the dtypes saved."""
        sym = load_symbol(symbol_file)
        if isinstance(input_names, str):
            input_names = [input_names]
        # Without parameters the dtypes are inferred from float32 inputs; with them
        # the saved dtypes decide.
        dtype = DEFAULT_DTYPE if param_file is None else None
        block = SymbolBlock(sym, [var(n, dtype=dtype) for n in input_names])
        if param_file is not None:
            try:
                block.collect_params().load(param_file, ctx, allow_missing, ignore_extra,
                                            cast_dtype=True, dtype_source="saved")
            except ParameterError as err:
                unknown = [n for n in input_names if n not in sym.list_inputs()]
                if not unknown:
                    raise
                raise ParameterError(f"{err} (input_names {unknown} are not inputs of the "
                                     f"graph in {symbol_file}: {sym.list_inputs()})") from None
        return block

    def __repr__(self) -> str:
        inputs, out = self._cached_graph
        return (f"{type(self).__name__}(\n{out!r} : {len(inputs)} -> "
                f"{len(out.list_outputs())}\n)")

    # -- names and parameters -----------------------------------------------------------
    @property
    def name(self) -> str:
        """The block's name (``symbolblock0``...)."""
        return self._name

    @property
    def input_names(self) -> list[str]:
        """The names of the graph's inputs, in the order a call takes them (minimx's:
        MXNet keeps them private)."""
        return list(self._input_names)

    @property
    def prefix(self) -> str:
        """The block's prefix: empty for a SymbolBlock, whose parameters keep the
        graph's names."""
        return self._prefix

    @property
    def params(self) -> ParameterDict:
        """The block's parameters."""
        return self._params

    def collect_params(self, select: str | None = None) -> ParameterDict:
        """The parameters (a new ParameterDict), or those whose names match the
        regular expression `select` from their start."""
        return matching(self._params, select)

    def _collect_params_with_prefix(self, prefix: str = "") -> dict[str, Parameter]:
        """The parameters by their names in `save_parameters` files."""
        prefix = f"{prefix}." if prefix else ""
        return {prefix + k: v for k, v in self._reg_params.items()}

    def initialize(self, init: Initializer | str | None = None,
                   ctx: Context | list[Context] | None = None, verbose: bool = False,
                   force_reinit: bool = False) -> None:
        """Initialize the parameters (see `ParameterDict.initialize`); those whose shape
        is unknown wait for the first forward."""
        self.collect_params().initialize(init, ctx, verbose, force_reinit)

    def save_parameters(self, filename: str, deduplicate: bool = False) -> None:
        """Write the parameters to an NDArray file under their names without the
        prefix they all share (``conv0_weight`` for ``resnet_conv0_weight``), as
        MXNet's."""
        params = self._collect_params_with_prefix()
        if deduplicate:
            reverse = {v: k for k, v in params.items()}
            params = {k: v for v, k in reverse.items()}
        save(filename, {k: v._reduce() for k, v in params.items()})

    def load_parameters(self, filename: str, ctx: Context | list[Context] | None = None,
                        allow_missing: bool = False, ignore_extra: bool = False,
                        cast_dtype: bool = False, dtype_source: str = "current") -> None:
        """Load the parameters from a file written by `save_parameters`, `export` or
        ``mx.model.save_checkpoint``."""
        loaded = load_arrays(filename)
        if not isinstance(loaded, dict):
            if not loaded:
                loaded = {}
            else:
                raise ParameterError(f"file: {filename} holds an unnamed list of "
                                     f"{len(loaded)} arrays: parameters are loaded by name")
        params = self._collect_params_with_prefix()
        if not loaded and not params:
            return
        # MXNet takes names without a '.' for the graph's own names; but its
        # save_parameters writes them without their common prefix (which MXNet 1.9.1
        # then fails to load back): those files are read by those names here.
        own_names = bool(loaded) and set(loaded) <= set(params) \
            and not set(loaded) & set(self._params.keys())
        if not own_names and not any("." in k for k in loaded):
            self.collect_params().load(filename, ctx, allow_missing, ignore_extra, self.prefix,
                                       cast_dtype=cast_dtype, dtype_source=dtype_source)
            return
        if not allow_missing:
            for name in params:
                if name not in loaded:
                    raise ParameterError(
                        f"Parameter '{name}' is missing in file '{filename}', which contains "
                        f"parameters: {brief_list(loaded)}. Set allow_missing=True to ignore "
                        "missing parameters.")
        for name, value in loaded.items():
            if name not in params:
                if not ignore_extra:
                    raise ParameterError(
                        f"Parameter '{name}' loaded from file '{filename}' is not present in "
                        f"ParameterDict, which contains parameters "
                        f"{brief_list(self._params.keys())}. Set ignore_extra=True to ignore. ")
                continue
            params[name]._load_init(value, ctx, cast_dtype=cast_dtype, dtype_source=dtype_source)

    def reset_ctx(self, ctx: Context | list[Context] | None) -> None:
        """Move every parameter to `ctx`."""
        self.collect_params().reset_ctx(ctx)

    def cast(self, dtype: Any) -> None:
        """Cast the parameters to `dtype`; for float16 and bfloat16, BatchNorm's (gamma,
        beta and the running statistics) stay float32, which its kernels want (MXNet
        1.9.1 keeps them for float16 only, and then fails on a bfloat16 BatchNorm)."""
        self._clear_cached_op()
        for param in self._params.values():
            param.cast(dtype)
        if as_dtype(dtype) not in (np.float16, BFLOAT16):
            return
        names = self._cached_graph[1].get_internals().list_inputs()
        for name in names:
            for stat, siblings in (("running_var", ("running_mean", "gamma", "beta")),
                                   ("moving_var", ("moving_mean", "gamma", "beta"))):
                stem = name[:-len(stat)]
                if name.endswith(stat) and all(stem + s in names for s in siblings):
                    for bn_param in (name, *(stem + s for s in siblings)):
                        self._params.get(bn_param).cast("float32")

    # -- running --------------------------------------------------------------------------
    def hybridize(self, active: bool = True, backend: str | None = None, clear: bool = True,
                  static_alloc: bool = False, static_shape: bool = False,
                  inline_limit: int = 2, forward_bulk_size: int | None = None,
                  backward_bulk_size: int | None = None,
                  backend_opts: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """MXNet 1.9.1's: `backend` partitions the graph at the next forward
        (``sym.optimize_for``) with the options `kwargs` (and, as MXNet 2's,
        `backend_opts`); `clear` drops the executors bound so far. The memory flags
        are recorded only: an executor always plans its memory once, at bind."""
        options = {**(backend_opts or {}), **kwargs}
        if options:
            self._backend_opts = options
        self._backend = backend
        self._active = active
        self._flags = [("static_alloc", static_alloc), ("static_shape", static_shape),
                       ("inline_limit", inline_limit)]
        for flag, size in (("forward_bulk_size", forward_bulk_size),
                           ("backward_bulk_size", backward_bulk_size)):
            if size is not None:
                self._flags.append((flag, size))
        if clear:
            self._clear_cached_op()

    def optimize_for(self, x: NDArray, *args: NDArray, backend: str | None = None,
                     clear: bool = False, static_alloc: bool = False,
                     static_shape: bool = False, inline_limit: int = 2,
                     forward_bulk_size: int | None = None,
                     backward_bulk_size: int | None = None,
                     backend_opts: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """Partition the graph for `backend` now, for inputs like `x, *args`, without
        running it (MXNet 1.9.1's; `export` then writes the partitioned graph)."""
        if not backend:
            raise InputError('Must specify "backend" to optimize_for')
        self.hybridize(True, backend, clear, static_alloc, static_shape, inline_limit,
                       forward_bulk_size, backward_bulk_size, backend_opts, **kwargs)
        inputs = [x, *args]
        if not any(isinstance(a, (NDArray, Symbol)) for a in inputs):
            raise InputError("In HybridBlock, there must be one NDArray or one Symbol in the "
                             "input. Please check the type of the args.\n")
        self._build_cache(*inputs)

    def __call__(self, *args: Any) -> Any:
        """Run the block on `args` (see `forward`)."""
        return self.forward(*args)

    def forward(self, x: Any, *args: Any) -> Any:
        """The outputs for the inputs `x, *args`, nested as the block's outputs are
        (one NDArray for one output, a list for several). Given Symbols, the graph
        composed on them."""
        if isinstance(x, NDArray):
            with x.context:
                return self._call_cached_op(x, *args)
        if not isinstance(x, Symbol):
            raise InputError("HybridBlock requires the first argument to forward be either "
                             f"Symbol or NDArray, but got {type(x)}")
        flat, fmt = flatten([x, *args], "input")
        if fmt != self._in_format:
            raise InputError(f"Invalid input format: {fmt}, the block takes {self._in_format}")
        composed = copy.copy(self._cached_graph[1])
        composed._compose(**dict(zip(self._input_names, flat, strict=True)))
        return regroup(list(composed), self._out_format)

    def _check_format(self, fmt: Format) -> None:
        """Inputs nested as at construction; trailing Nones may be left out or added."""
        stored = self._in_format
        if fmt == stored:
            return
        if isinstance(fmt, list) and isinstance(stored, list) and len(fmt) != len(stored):
            shorter, longer = (fmt, stored) if len(fmt) < len(stored) else (stored, fmt)
            if longer[:len(shorter)] == shorter and all(f == -1 for f in longer[len(shorter):]):
                return
        names = self._input_names
        # MXNet's message, whose two labels are swapped, then what it means.
        raise InputError("The argument structure of HybridBlock does not match the cached "
                         f"version. Stored format = {fmt}, input format = {stored} "
                         f"({self.name} takes {len(names)} inputs, {names})")

    def _call_cached_op(self, *args: Any) -> Any:
        flat, fmt = flatten(list(args), "input")
        self._check_format(fmt)
        given = [a for a in flat if a is not None]
        for k, arg in enumerate(given):
            if not isinstance(arg, NDArray):
                raise InputError(f"{self.name}: input {k} must be an NDArray like the first, "
                                 f"got {type(arg).__name__}")
        cached_op = self._cached_op or self._build_cache(*args)
        data = {n: given[s] for n, s in self._cached_op_args if isinstance(s, int)}
        ctx = given[0].context
        return regroup(cached_op(data, self._parameter_arrays(given), ctx), self._out_format)

    def _parameter_arrays(self, given: list[NDArray]) -> dict[str, NDArray]:
        """The parameters' arrays by name: those gathered for the last call while no
        Parameter's arrays were replaced since (gathering costs a MobileNet forward at
        batch 1 some 4%)."""
        if self._gathered is None or self._gathered[0] != Parameter.replacements:
            try:
                params = {n: s.data() for n, s in self._cached_op_args
                          if isinstance(s, Parameter)}
            except DeferredInitializationError:   # re-initialized since the first call
                self._finish_deferred_init(given)
                params = {n: s.data() for n, s in self._cached_op_args
                          if isinstance(s, Parameter)}
            self._gathered = (Parameter.replacements, params)
        return self._gathered[1]

    def _build_cache(self, *args: Any) -> CachedOp:
        """Partition the graph if a backend is chosen, finish deferred initialization
        and make the CachedOp (no executor yet)."""
        inputs, out = self._cached_graph
        data_names = {n: k for k, n in enumerate(self._input_names)}
        params = self.collect_params()
        unknown = [n for n in out.list_inputs() if n not in params.keys() and n not in data_names]
        if unknown:
            raise InputError(f"Unknown input to HybridBlock: {unknown[0]} ({self.name}: not one "
                             f"of its inputs {list(data_names)} nor a parameter)")
        unused = [f"{k}-th" for n, k in data_names.items() if n not in out.list_inputs()]
        if unused:
            warnings.warn(f"The {', '.join(unused)} input to HybridBlock is not used by any "
                          "computation. Is this intended?", stacklevel=4)
        flat = [a for a in flatten(list(args), "input")[0] if a is not None]
        self._finish_deferred_init(flat)
        if self._backend:
            given = {n: flat[k] for n, k in data_names.items()
                     if k < len(flat) and isinstance(flat[k], NDArray)}
            arrays = {n: given[n] if n in given else params[n].data() for n in out.list_inputs()
                      if n in given or n in params.keys()}
            out = out.optimize_for(self._backend,
                                   {n: arrays[n] for n in out.list_arguments() if n in arrays},
                                   {n: arrays[n] for n in out.list_auxiliary_states()
                                    if n in arrays}, **self._backend_opts)
            self._cached_graph = (inputs, out)
        self._cached_op_args = [(n, data_names[n] if n in data_names else params[n])
                                for n in out.list_inputs()]
        self._cached_op = CachedOp(out, [n for n in out.list_inputs() if n in data_names])
        return self._cached_op

    def _clear_cached_op(self) -> None:
        """Drop the executors (the graph, partitioned or not, stays)."""
        self._cached_op = None
        self._cached_op_args = []
        self._gathered = None

    def _finish_deferred_init(self, inputs: list) -> None:
        """Make the arrays of the parameters whose initialization waits for their
        shapes, inferred from `inputs`."""
        waiting = [p for p in self._params.values() if p._deferred_init]
        if not waiting:
            return
        try:
            self.infer_shape(*inputs)
        except MinimxError as err:
            raise ShapeError(f"Deferred initialization failed because shape cannot be "
                             f"inferred. {err}") from None
        for param in waiting:
            param._finish_deferred_init()

    def _infer_attrs(self, infer: Callable, attr: str, convert: Callable, *args: Any) -> None:
        out = self._cached_graph[1]
        given = [a for a in flatten(list(args), "input")[0] if a is not None]
        known = {n: getattr(a, attr) for n, a in zip(self._input_names, given, strict=False)}
        arg_attrs, _, aux_attrs = infer(out, **known)
        if arg_attrs is None:
            raise ShapeError(f"{self.name}: cannot infer the {attr}s of the parameters from "
                             f"the inputs' {known}")
        found = dict(zip(out.list_arguments(), arg_attrs, strict=True))
        found.update(zip(out.list_auxiliary_states(), aux_attrs, strict=True))
        for param in self.collect_params().values():
            if param.name in found:
                setattr(param, attr, convert(found[param.name]))

    def infer_shape(self, *args: Any) -> None:
        """Set the parameters' shapes from the inputs'."""
        self._infer_attrs(Symbol.infer_shape, "shape", tuple, *args)

    def infer_type(self, *args: Any) -> None:
        """Set (cast) the parameters' dtypes from the inputs'."""
        self._infer_attrs(Symbol.infer_type, "dtype", dtype_type, *args)

    # -- files and summary ----------------------------------------------------------------
    def export(self, path: str, epoch: int = 0, remove_amp_cast: bool = True) -> None:
        """Write ``path-symbol.json`` (the graph, partitioned if it was) and
        ``path-%04d.params`` (every parameter, ``arg:`` / ``aux:`` names) that
        `imports`, ``mx.mod.Module`` and MXNet 1.9.1 load. `remove_amp_cast` is
        accepted; the JSON keeps amp_cast nodes (see ``Symbol.tojson``)."""
        out = self._cached_graph[1]
        out.save(f"{path}-symbol.json")
        data_names = set(self._input_names)
        aux_names = set(out.list_auxiliary_states())
        params = self.collect_params()
        arrays = {f"{'aux' if n in aux_names else 'arg'}:{n}": params[n]._reduce()
                  for n in out.list_inputs() if n not in data_names}
        save(f"{path}-{epoch:04d}.params", arrays)

    def summary(self, *inputs: NDArray) -> None:
        """Print the shapes of the inputs and outputs and the number of parameters (the
        block must not be hybridized), as MXNet's."""
        if self._active:
            raise MinimxError(f'"{self.name}" must not be hybridized to print summary.')
        outputs = self(*inputs)
        sizes = [p.data().size for p in self._params.values()]
        trainable = sum(s for s, p in zip(sizes, self._params.values(), strict=True)
                        if p.grad_req != "null")
        rows = [("Input", _shape_text(list(inputs)), 0),
                (f"{type(self).__name__}-1", _shape_text(outputs), sum(sizes))]
        line = "{:>20}  {:>42} {:>15}"
        total = sum(sizes)
        print("-" * 80)
        print(line.format("Layer (type)", "Output Shape", "Param #"))
        print("=" * 80)
        for layer, shape, count in rows:
            print(line.format(layer, shape, count))
        print("=" * 80)
        print("Parameters in forward computation graph, duplicate included")
        print(f"   Total params: {total}")
        print(f"   Trainable params: {trainable}")
        print(f"   Non-trainable params: {total - trainable}")
        print("Shared params in forward computation graph: 0")
        print(f"Unique parameters in model: {total}")
        print("-" * 80)


def _shape_text(values: Any) -> str:
    """The shapes of nested arrays, as MXNet's summary prints them."""
    flat, fmt = flatten(values, "output")
    shapes = regroup([v.shape for v in flat], fmt)
    return str(shapes)[1:-1] if isinstance(shapes, list) else str(shapes)
