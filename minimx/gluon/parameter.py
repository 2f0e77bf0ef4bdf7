"""Gluon's parameters (`mx.gluon.Parameter`, `Constant`, `ParameterDict`), as MXNet 1.9.1's.

A Parameter holds one NDArray per context it was initialized on (every context
is the same CPU memory here). Its arrays are the ones a bound graph reads, so a
write to them (`set_data`, ``p.data()[:] = v``) reaches the next forward.
minimx has no autograd: a Parameter keeps no gradient arrays whatever its
`grad_req` (`grad` raises, `zero_grad` does nothing).

The checks MXNet makes with ``assert`` raise `ParameterError` (a MinimxError
that is also an AssertionError) with MXNet's messages.
"""
from __future__ import annotations

import re
import warnings
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from ..base import as_dtype
from ..context import Context, cpu, current_context
from ..initializer import InitDesc, Initializer, Uniform, create
from ..ndarray import NDArray, array, load, save, zeros
from ..symbol import Symbol, var
from .errors import DeferredInitializationError, ParameterError

# What a Parameter's dtype is when none is given: MXNet's mx_real_t, a numpy type.
DEFAULT_DTYPE = np.float32
NAMING_DOC = ("For more info on naming, please see "
              "https://mxnet.io/api/python/docs/tutorials/packages/gluon/blocks/naming.html")

tensor_types = (Symbol, NDArray)


def brief_list(names: Iterable[Any], limit: int = 7) -> str:
    """At most `limit` quoted names, as MXNet's messages list them."""
    names = list(names)
    if len(names) > limit:
        return brief_list(names[:limit // 2], limit) + ", ..., " + \
            brief_list(names[-limit // 2:], limit)
    return ", ".join(f"'{n}'" for n in names)


def shape_is_known(shape: tuple[int, ...] | None) -> bool:
    """Whether every dimension of `shape` is known (0 marks an unknown one)."""
    return shape is not None and len(shape) > 0 and all(d != 0 for d in shape)


def dtype_type(dtype: Any) -> Any:
    """The numpy type of `dtype`, the form MXNet's NDArrays and inference give
    (``numpy.float32``)."""
    return as_dtype(dtype).type


def _contexts(ctx: Context | Iterable[Context] | None) -> list[Context]:
    if ctx is None:
        return [current_context()]
    return [ctx] if isinstance(ctx, Context) else list(ctx)


class Parameter:
    """A named array of a block, on one or more contexts (MXNet 1.9.1's arguments;
    `stype` and `grad_stype` only ``'default'``: minimx has no sparse arrays)."""

    # How often any Parameter's arrays were replaced (made, dropped, cast, moved): a block
    # reuses the arrays it gathered for its last call while this count stays the same.
    replacements = 0

    @property
    def _data(self) -> list[NDArray] | None:
        return self._arrays

    @_data.setter
    def _data(self, arrays: list[NDArray] | None) -> None:
        self._arrays = arrays
        Parameter.replacements += 1

    def __init__(self, name: str, grad_req: str = "write", shape: int | tuple | None = None,
                 dtype: Any = DEFAULT_DTYPE, lr_mult: float = 1.0, wd_mult: float = 1.0,
                 init: Initializer | str | None = None, allow_deferred_init: bool = False,
                 differentiable: bool = True, stype: str = "default",
                 grad_stype: str = "default") -> None:
        for what, value in (("stype", stype), ("grad_stype", grad_stype)):
            if value != "default":
                raise ParameterError(f"{what} for Parameter '{name}' must be 'default' "
                                     f"(minimx has no sparse arrays), but got '{value}'")
        self._var: Symbol | None = None
        self._data: list[NDArray] | None = None
        self._ctx_list: list[Context] = []
        self._deferred_init: tuple = ()
        self._differentiable = differentiable
        self._allow_deferred_init = allow_deferred_init
        self._grad_req: str | None = None
        self._shape = (shape,) if isinstance(shape, int) else shape
        self.name = name
        self._dtype = dtype
        self.lr_mult = lr_mult
        self.wd_mult = wd_mult
        self.grad_req = grad_req
        self.init = init

    def __repr__(self) -> str:
        return f"Parameter {self.name} (shape={self.shape}, dtype={self.dtype})"

    @property
    def grad_req(self) -> str | None:
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req: str) -> None:
        if req not in ("write", "add", "null"):
            raise ParameterError("grad_req must be one of 'write', 'add', or 'null', "
                                 f"but got '{req}'")
        self._grad_req = req if self._differentiable else "null"

    @property
    def dtype(self) -> Any:
        """The parameter's dtype, as given (setting it casts the arrays)."""
        return self._dtype

    @dtype.setter
    def dtype(self, dtype: Any) -> None:
        self.cast(dtype)

    @property
    def shape(self) -> tuple[int, ...] | None:
        """The parameter's shape; 0 marks a dimension not known yet, None a shape
        not known at all (a SymbolBlock's parameters until inference or a write)."""
        return self._shape

    @shape.setter
    def shape(self, new_shape: tuple[int, ...]) -> None:
        if self._shape is not None and not (
                len(self._shape) == len(new_shape)
                and all(j in (-1, 0, i) for i, j in zip(new_shape, self._shape, strict=True))):
            raise ParameterError(f"Parameter '{self.name}': Expected shape {new_shape} is "
                                 f"incompatible with given shape {self._shape}.")
        self._shape = tuple(new_shape)

    # -- the arrays ------------------------------------------------------------------------
    def _check_and_get(self, arr_list: list[NDArray] | None, ctx: Any) -> Any:
        if arr_list is not None:
            if ctx is list:
                return arr_list
            if ctx is None:
                if len(arr_list) == 1:
                    return arr_list[0]
                ctx = current_context()
            if ctx in self._ctx_list:
                return arr_list[self._ctx_list.index(ctx)]
            raise ParameterError(f"Parameter '{self.name}' was not initialized on context "
                                 f"{ctx}. It was only initialized on {self._ctx_list}.")
        if self._deferred_init:
            raise DeferredInitializationError(
                f"Parameter '{self.name}' has not been initialized yet because initialization "
                "was deferred. Actual initialization happens during the first forward pass. "
                "Please pass one batch of data through the network before accessing "
                "Parameters. You can also avoid deferred initialization by specifying "
                "in_units, num_features, etc., for network layers.")
        raise ParameterError(f"Parameter '{self.name}' has not been initialized. Note that "
                             "you should initialize parameters and create Trainer with "
                             "Block.collect_params() instead of Block.params because the "
                             "later does not include Parameters of nested child Blocks")

    def _load_init(self, data: NDArray, ctx: Context | list[Context] | None,
                   cast_dtype: bool = False, dtype_source: str = "current") -> None:
        """(Re)initialize from `data` (MXNet's rules: its shape fills the unknown
        dimensions; `cast_dtype` casts it to this dtype, or with `dtype_source`
        'saved' makes its dtype this one's)."""
        if cast_dtype and dtype_source not in ("current", "saved"):
            raise ParameterError(f"dtype_source must be 'current' or 'saved', got "
                                 f"{dtype_source!r}")
        if self.shape:
            if len(self.shape) != len(data.shape) or any(
                    s not in (0, d) for s, d in zip(self.shape, data.shape, strict=True)):
                raise ParameterError(
                    f"Failed loading Parameter '{self.name}' from saved params: shape "
                    f"incompatible expected {self.shape} vs saved {data.shape}")
            self.shape = tuple(d if s == 0 else s
                               for s, d in zip(self.shape, data.shape, strict=True))
        if self.dtype is not None and as_dtype(self.dtype) != data.dtype:
            if not cast_dtype:
                raise ParameterError(
                    f"Failed loading Parameter '{self.name}' from saved params: dtype "
                    f"incompatible expected {self.dtype} vs saved {dtype_type(data.dtype)}. "
                    "Set cast_dtype=True to cast the dtype of saved params.")
            if dtype_source == "current":
                data = data.astype(self.dtype, copy=False)
            else:
                self.dtype = dtype_type(data.dtype)
        contexts = None if ctx is None else _contexts(ctx)
        if self._data is None:
            if self._deferred_init:
                self._check_same_contexts(contexts, self._deferred_init[1])
                contexts = self._deferred_init[1]
            self._init_impl(data, contexts or [cpu()])
        else:
            self._check_same_contexts(contexts, self._ctx_list)
            self.set_data(data)
        self._deferred_init = ()

    def _check_same_contexts(self, given: list[Context] | None, held: list[Context]) -> None:
        if given is not None and set(given) != set(held):
            raise ParameterError(f"Failed to load Parameter '{self.name}' on {given} because "
                                 f"it was previous initialized on {held}.")

    def _finish_deferred_init(self) -> None:
        """Make the arrays a deferred `initialize` waited for (the shape is known now)."""
        if not self._deferred_init:
            return
        init, ctx, default_init, data = self._deferred_init
        self._deferred_init = ()
        shape = self.shape
        if shape is None or not shape_is_known(shape):
            raise ParameterError(f"Cannot initialize Parameter '{self.name}' because it has "
                                 f"invalid shape: {shape}. Please specify in_units, "
                                 "in_channels, etc for `Block`s.")
        if data is None:
            data = zeros(shape, cpu(), self.dtype)
            # As MXNet's: the initializer chosen (the parameter's own, or the default)
            # fills the array by its weight rule, whatever the name ends with.
            attrs: dict[str, Any] = {"__init__": init}
            create(default_init)(InitDesc(self.name, attrs), data)
        self._init_impl(data, ctx)

    def _init_impl(self, data: NDArray, ctx_list: list[Context]) -> None:
        self._ctx_list = list(ctx_list)
        self._data = [data.copyto(ctx) for ctx in self._ctx_list]

    def _reduce(self) -> NDArray:
        """The values on cpu(0): the mean over the contexts."""
        arrays = self.list_data()
        total = arrays[0].copyto(cpu())
        for other in arrays[1:]:
            total += other
        return total / len(arrays) if len(arrays) > 1 else total

    def initialize(self, init: Initializer | str | None = None,
                   ctx: Context | list[Context] | None = None,
                   default_init: Initializer | str | None = None,
                   force_reinit: bool = False) -> None:
        """Make the arrays on `ctx` (default: the current context), filled by `init`,
        else the parameter's own initializer, else `default_init` (Uniform()). With
        the shape unknown the work waits for the first forward, if allowed."""
        if self._data is not None and not force_reinit:
            warnings.warn(f"Parameter '{self.name}' is already initialized, ignoring. "
                          "Set force_reinit=True to re-initialize.", stacklevel=2)
            return
        self._data = None
        default_init = Uniform() if default_init is None else default_init
        if init is None:
            init = default_init if self.init is None else self.init
        self._deferred_init = (init, _contexts(ctx), default_init, None)
        if not shape_is_known(self.shape):
            if self._allow_deferred_init:
                return
            self._deferred_init = ()
            raise ParameterError(f"Cannot initialize Parameter '{self.name}' because it has "
                                 f"invalid shape: {self.shape}.")
        self._finish_deferred_init()

    def reset_ctx(self, ctx: Context | list[Context] | None) -> None:
        """Move the arrays to `ctx` (a copy on each context of a list)."""
        contexts = _contexts(ctx)
        if self._data:
            self._init_impl(self._reduce(), contexts)
        elif self._deferred_init:
            init, _, default_init, data = self._deferred_init
            self._deferred_init = (init, contexts, default_init, data)
        else:
            raise ParameterError(f"Cannot reset context for Parameter '{self.name}' because "
                                 "it has not been initialized.")

    def set_data(self, data: Any) -> None:
        """Write `data` into the arrays on every context (before initialization: the
        values a deferred initialization will take)."""
        shape = tuple(np.shape(data) if not isinstance(data, NDArray) else data.shape)
        if self._data is not None and shape != self._data[0].shape:
            raise ParameterError(f"Parameter '{self.name}': cannot set data of shape {shape} "
                                 f"into its arrays of shape {self._data[0].shape}")
        self.shape = shape
        if self._data is None:
            if not self._deferred_init:
                raise ParameterError(f"Parameter '{self.name}' has not been initialized")
            self._deferred_init = self._deferred_init[:3] + (data,)
            return
        for arr in self._data:
            arr[:] = data

    def data(self, ctx: Context | None = None) -> NDArray:
        """The array on `ctx` (the only one, or the current context's): the array
        itself, not a copy, as MXNet's."""
        return self._check_and_get(self._data, ctx)

    def list_data(self) -> list[NDArray]:
        """The arrays on every context, in the order of initialization."""
        return self._check_and_get(self._data, list)

    def grad(self, ctx: Context | None = None) -> NDArray:
        raise ParameterError(f"Cannot get gradient array for Parameter '{self.name}': "
                             "minimx runs Gluon blocks for inference only (no autograd)")

    def list_grad(self) -> list[NDArray]:
        return [self.grad()]

    def list_ctx(self) -> list[Context]:
        """The contexts the parameter is (or, deferred, will be) initialized on."""
        if self._data is None:
            if self._deferred_init:
                return self._deferred_init[1]
            raise ParameterError(f"Parameter '{self.name}' has not been initialized")
        return self._ctx_list

    def zero_grad(self) -> None:
        """Nothing to do: minimx keeps no gradient arrays."""

    def var(self) -> Symbol:
        """A Variable for this parameter (made once)."""
        if self._var is None:
            self._var = var(self.name, shape=self.shape, dtype=self.dtype,
                            lr_mult=self.lr_mult, wd_mult=self.wd_mult, init=self.init)
        return self._var

    def cast(self, dtype: Any) -> None:
        """Cast the arrays (new arrays, on the same contexts) to `dtype`."""
        self._dtype = dtype
        if self._data is not None:
            self._data = [a.astype(dtype) for a in self._data]


class _Value(Initializer):
    """Fills an array with a Constant's value."""

    def __init__(self, value: NDArray) -> None:
        super().__init__()
        self._value = value

    def _init_weight(self, _: str, arr: NDArray) -> None:
        self._value.copyto(arr)


class Constant(Parameter):
    """A parameter that holds fixed values (`grad_req` always 'null'); `set_data`
    still changes them."""

    def __init__(self, name: str, value: Any) -> None:
        if not isinstance(value, NDArray):
            value = array(value)
        self.value = value
        super().__init__(name, grad_req="null", shape=value.shape,
                         dtype=dtype_type(value.dtype), init=_Value(value))

    def __repr__(self) -> str:
        return f"Constant {self.name} (shape={self.shape}, dtype={self.dtype})"

    @property
    def grad_req(self) -> str:
        return "null"

    @grad_req.setter
    def grad_req(self, req: str) -> None:
        if req != "null":
            warnings.warn(f'Constant parameter "{self.name}" does not support grad_req other '
                          f'than "null", and new value "{req}" is ignored.', stacklevel=2)


def _strip_kind(name: str) -> str:
    """A checkpoint key without its ``arg:`` / ``aux:`` prefix."""
    return name[4:] if name.startswith(("arg:", "aux:")) else name


class ParameterDict:
    """Parameters by name, each made with the dict's `prefix`; `shared` lends its
    parameters to `get` (MXNet 1.9.1's)."""

    def __init__(self, prefix: str = "", shared: ParameterDict | None = None) -> None:
        self._prefix = prefix
        self._params: OrderedDict[str, Parameter] = OrderedDict()
        self._shared = shared

    def __repr__(self) -> str:
        name = f"{self._prefix} " if self._prefix else ""
        content = "\n".join(f"  {v}" for v in self.values())
        return f"{name}(\n{content}\n)"

    def __getitem__(self, key: str) -> Parameter:
        if key not in self._params:
            raise ParameterError(f"no Parameter '{key}' in ParameterDict (holds "
                                 f"{brief_list(self._params)})")
        return self._params[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._params)

    def items(self) -> Any:
        return self._params.items()

    def keys(self) -> Any:
        return self._params.keys()

    def values(self) -> Any:
        return self._params.values()

    @property
    def prefix(self) -> str:
        """What `get` puts before the names it is given."""
        return self._prefix

    def _get_impl(self, name: str) -> Parameter | None:
        if name in self._params:
            return self._params[name]
        if self._shared is not None and name in self._shared._params:
            self._params[name] = self._shared._params[name]
            return self._params[name]
        return None

    def get(self, name: str, **kwargs: Any) -> Parameter:
        """The Parameter ``prefix + name``: this dict's, else the shared dict's, else a
        new one made with `kwargs`. For one that exists, `kwargs` must agree with it
        (unknown shape dimensions are filled in)."""
        name = self.prefix + name
        param = self._get_impl(name)
        if param is None:
            param = Parameter(name, **kwargs)
            self._params[name] = param
            return param
        for key, value in kwargs.items():
            existing = getattr(param, key, None)
            if existing is None:
                setattr(param, key, value)
            elif key == "shape" and len(value) == len(existing) and all(
                    a == b or a <= 0 or b <= 0 for a, b in zip(value, existing, strict=True)):
                param._shape = tuple(b if a <= 0 else a
                                     for a, b in zip(value, existing, strict=True))
            elif key == "dtype" and as_dtype(value) == as_dtype(existing):
                continue
            elif value is not None and value != existing:
                raise ParameterError(
                    f"Cannot retrieve Parameter '{name}' because desired attribute does not "
                    f"match with stored for attribute '{key}': desired '{value}' vs stored "
                    f"'{existing}'.")
        return param

    def update(self, other: Mapping[str, Parameter] | ParameterDict) -> None:
        """Add `other`'s parameters (a name already held must be the same Parameter)."""
        for key, value in other.items():
            if key in self._params and self._params[key] is not value:
                raise ParameterError("Cannot update self with other because they have "
                                     f"different Parameters with the same name '{key}'")
        for key, value in other.items():
            self._params[key] = value

    def initialize(self, init: Initializer | str | None = None,
                   ctx: Context | list[Context] | None = None, verbose: bool = False,
                   force_reinit: bool = False) -> None:
        """Initialize every parameter: `init` (default Uniform()) for those without
        an initializer of their own."""
        default_init = Uniform() if init is None else init
        for param in self.values():
            param.initialize(None, ctx, default_init, force_reinit=force_reinit)

    def zero_grad(self) -> None:
        """Nothing to do: minimx keeps no gradient arrays."""

    def reset_ctx(self, ctx: Context | list[Context] | None) -> None:
        for param in self.values():
            param.reset_ctx(ctx)

    def list_ctx(self) -> list[Context]:
        return list({c: None for p in self.values() for c in p.list_ctx()})

    def setattr(self, name: str, value: Any) -> None:
        """Set attribute `name` of every parameter (``setattr('grad_req', 'null')``)."""
        for param in self.values():
            setattr(param, name, value)

    def save(self, filename: str, strip_prefix: str = "") -> None:
        """Write the parameters (their mean over contexts) to an NDArray file, named
        without `strip_prefix`."""
        arg_dict = {}
        for param in self.values():
            if not param.name.startswith(strip_prefix):
                raise ParameterError(
                    f"Prefix '{strip_prefix}' is to be striped before saving, but "
                    f"Parameter's name '{param.name}' does not start with '{strip_prefix}'. "
                    "this may be due to your Block shares parameters from other Blocks or "
                    "you forgot to use 'with name_scope()' when creating child blocks. "
                    + NAMING_DOC)
            arg_dict[param.name[len(strip_prefix):]] = param._reduce()
        save(filename, arg_dict)

    def load(self, filename: str, ctx: Context | list[Context] | None = None,
             allow_missing: bool = False, ignore_extra: bool = False,
             restore_prefix: str = "", cast_dtype: bool = False,
             dtype_source: str = "current") -> None:
        """Load the parameters from an NDArray file (``arg:`` / ``aux:`` names too),
        names prefixed by `restore_prefix`."""
        if restore_prefix:
            for name in self.keys():
                if not name.startswith(restore_prefix):
                    raise ParameterError(
                        f"restore_prefix is '{restore_prefix}' but Parameters name '{name}' "
                        f"does not start with '{restore_prefix}'. " + NAMING_DOC)
        self.load_dict(load(filename), ctx, allow_missing, ignore_extra, restore_prefix,
                       filename, cast_dtype, dtype_source)

    def load_dict(self, param_dict: Mapping[str, NDArray] | list, ctx: Any = None,
                  allow_missing: bool = False, ignore_extra: bool = False,
                  restore_prefix: str = "", filename: str | None = None,
                  cast_dtype: bool = False, dtype_source: str = "current") -> None:
        """Load the parameters from a dict of arrays (``arg:`` / ``aux:`` names too)."""
        source = f"file: {filename}" if filename else "param_dict"
        if not isinstance(param_dict, Mapping):
            if param_dict:
                raise ParameterError(f"{source} holds an unnamed list of {len(param_dict)} "
                                     "arrays: parameters are loaded by name")
            param_dict = {}
        lprefix = len(restore_prefix)
        arg_dict = {restore_prefix + _strip_kind(k): v for k, v in param_dict.items()}
        if not allow_missing:
            for name in self.keys():
                if name not in arg_dict:
                    raise ParameterError(
                        f"Parameter '{name[lprefix:]}' is missing in {source}, which contains "
                        f"parameters: {brief_list(arg_dict)}. Please make sure source and "
                        "target networks have the same prefix." + NAMING_DOC)
        for name, value in arg_dict.items():
            if name not in self._params:
                if not ignore_extra:
                    raise ParameterError(
                        f"Parameter '{name[lprefix:]}' loaded from {source} is not present in "
                        f"ParameterDict, choices are: {brief_list(self._params)}. Set "
                        "ignore_extra to True to ignore. Please make sure source and target "
                        "networks have the same prefix." + NAMING_DOC)
                continue
            self._params[name]._load_init(value, ctx, cast_dtype=cast_dtype,
                                          dtype_source=dtype_source)


def matching(params: ParameterDict, pattern: str | None) -> ParameterDict:
    """A dict of `params`'s parameters whose names match the regular expression
    `pattern` from their start (all of them for None or '')."""
    selected = ParameterDict(params.prefix)
    if not pattern:
        selected.update(params)
    else:
        compiled = re.compile(pattern)
        selected.update({k: v for k, v in params.items() if compiled.match(k)})
    return selected
