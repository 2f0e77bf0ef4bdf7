"""The operator registry: one declarative `OpDef` per operator.

An OpDef holds everything minimx knows about an operator - parameters, input
and output names, which inputs are auxiliary (mutable) states, shape and dtype
inference, the numpy forward kernel, the gradient and in-place options. The
`mx.sym.X` / `mx.nd.X` wrappers and their docstrings are generated from it.

Kernel contract:
- ``forward(p, ctx, inputs) -> array | sequence of arrays``: `p` is the
  parsed `Params`, `inputs` numpy arrays in input order (auxiliary states
  included; a kernel that updates them writes into them in place). It returns
  every output (hidden ones included) as new arrays or views; it never writes
  into a non-auxiliary input.
- ``backward(p, ctx, inputs, outputs, out_grads) -> list``: one gradient (or
  None) per input, given the forward's inputs and outputs and one gradient
  per output (zeros for outputs nothing depended on). ``backward_reads``
  says which of those inputs and outputs it reads (MXNet's FGradient heads:
  relu reads its output, Convolution its data and weight, elemwise_add
  nothing); the others come as `Unread` (shape and dtype, no values), so the
  memory planner can free them after forward. Undeclared, it reads everything.
  A loss layer declares ``out_grads=False``: it ignores its output gradients
  (zeros come), as MXNet's do, so a graph ending in it needs no head gradient.
- Stateful operators (subgraph nodes, oneDNN primitives) set
  ``create_state(p, in_shapes, in_dtypes) -> state``; the executor makes one
  state per node and then calls ``forward(state, ctx, inputs)`` and
  ``backward(state, ctx, inputs, outputs, out_grads)`` instead. A state may
  also offer ``prepare_inference(inputs, outputs, watch) -> run | None``:
  its inference forward on exactly those arrays, prepared once, where each
  ``run()`` either does the whole forward and returns True, or does nothing
  and returns False (the caller then calls ``forward``). ``watch(indices)``
  returns a function that gives, when called, the engine versions of the
  inputs at `indices` as a tuple (what `OpContext.input_versions` holds).
- ``infer_shape(p, in_shapes, out_shapes) -> (in_shapes, out_shapes)`` and
  ``infer_type`` likewise: given what is known (None for an unknown shape, 0
  for an unknown dimension), return what can be known. They may run in either
  direction and raise `ShapeError` / `DTypeError` on contradictions.
- bfloat16: a stateless kernel never sees it. Its bfloat16 inputs come widened
  to float32 and its results are rounded to the inferred dtypes (`bfloat16.py`).
  ``bfloat16="native"``: the kernel takes bfloat16 itself (the casts);
  ``bfloat16="refuse"``: type inference refuses it (no kernel in MXNet 1.9.1).
- ``shape_from_values``: output shapes known only from the input values; such an
  operator runs imperatively only, synchronously, and `infer_shape` is not called.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

from .. import engine
from ..base import OperatorError, node_label
from . import bfloat16 as bf16
from .infer import same_dtype, same_shape
from .params import REQUIRED, Param, ParamParseError, Params

Shape = tuple[int, ...] | None
InferFn = Callable[[Params, list, list], tuple[list, list]]
Names = Sequence[str] | Callable[[Params], Sequence[str]]


class SeededGenerator:
    """The one generator of the random operators (and Dropout), reseeded by
    `mx.random.seed`; one for all calls, since making one per call costs ~20 us.
    Imperative calls of operators that draw (`OpDef.draws`) write its engine variable,
    so that they draw in call order, as MXNet's random resource makes them."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng()
        # A failed draw leaves the generator usable: later draws must not inherit it.
        self.var = engine.new_variable("random generator", orders_only=True)

    def seed(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)


GENERATOR = SeededGenerator()


@dataclass
class OpContext:
    """What a kernel may know about the call beyond its inputs.

    `input_versions` is given to stateful operators run by an executor: for
    each input, the engine version of the argument or auxiliary array it is
    (None for an entry computed during the run), read when the operator runs.
    A state may keep what it derived from an input while its version stays.
    `outputs`, also given to stateful operators, are the arrays the runner
    stores the results in: an operator may write its results there and
    return those very arrays, and the runner copies nothing. Unless the
    operator declares in-place pairs (`OpDef.inplace`), they share no memory
    with the inputs.
    """

    is_train: bool = False
    rng: np.random.Generator = field(default_factory=lambda: GENERATOR.rng)
    input_versions: Sequence[int | None] | None = None
    outputs: Sequence[np.ndarray] | None = None


@dataclass(frozen=True)
class GradReads:
    """The inputs and outputs, by name, that an operator's backward reads, and
    whether it reads its output gradients (a loss layer does not)."""

    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    out_grads: bool = True


class Unread:
    """A forward array that backward did not declare it reads: its shape and dtype
    (enough for the gradient of a reshape or a sum), and no values. Any use of
    its values raises, so a backward that reads more than it declares fails at
    once rather than reading memory the planner gave to another entry."""

    __slots__ = ("shape", "dtype", "what")

    def __init__(self, shape: Sequence[int], dtype: Any, what: str) -> None:
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.what = what

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise OperatorError(f"{self.what}: backward reads its values, but the operator's "
                            "backward_reads does not declare it")

    # numpy's conversion, ufunc and function protocols, arithmetic, comparisons and
    # indexing all end here.
    __array__ = __array_ufunc__ = __array_function__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __neg__ = _refuse
    __truediv__ = __rtruediv__ = __pow__ = __rpow__ = __matmul__ = __rmatmul__ = _refuse
    __lt__ = __le__ = __gt__ = __ge__ = __abs__ = __getitem__ = _refuse

    def __repr__(self) -> str:
        return f"Unread({self.what}, {self.shape}, {self.dtype})"


def zero_gradients(p: Any, ctx: OpContext, inputs: Sequence[Any], outputs: Sequence[Any],
                   out_grads: Sequence[Any]) -> list:
    """The backward of an operator nothing flows back through (comparisons, indices,
    shapes): zeros for every input, read by shape and dtype only."""
    return [np.zeros(x.shape, x.dtype) for x in inputs]


def is_hidden_attr(key: str) -> bool:
    """Attributes such as ``__shape__`` or ``__lr_mult__`` that are not parameters."""
    return key.startswith("__") and key.endswith("__")


@dataclass(frozen=True, eq=False)
class OpDef:
    """Everything about one operator; see the module docstring for the contracts."""

    name: str
    forward: Callable[..., Any]
    params: tuple[Param, ...] = ()
    inputs: Names = ("data",)
    outputs: Names = ("output",)
    visible_outputs: Callable[[Params], int] | None = None
    aux: Names = ()
    infer_shape: InferFn = same_shape
    infer_type: InferFn = same_dtype
    backward: Callable[..., list] | None = None
    backward_reads: GradReads | Callable[[Params], GradReads] | None = None  # None: all
    inplace: tuple[tuple[int, int], ...] = ()
    # The parameter counting the inputs (arg0, arg1, ...); calls fill it in. With
    # `variadic_when`, only for the parameters it accepts (UpSampling: nearest); for
    # others `inputs` names them whatever the count says.
    variadic: str | None = None
    variadic_when: Callable[[Params], bool] | None = None
    create_state: Callable[..., Any] | None = None
    # For parameters that leave dims to shape inference (MXNet's 0 dims in `shape`):
    # ``resolve(p, out_shapes) -> Params``, the parameters the kernels get once the
    # graph's shapes are known.
    resolve: Callable[[Params, list], Params] | None = None
    aliases: tuple[str, ...] = ()
    doc: str = ""
    # Keyword parameters beyond `params` are kept as their strings (Custom hands
    # them to the Python operator it runs, as MXNet does).
    extra_params: bool = False
    bfloat16: str = "float32"   # how its kernel meets bfloat16: float32, native or refuse
    draws: bool = False   # draws from GENERATOR (random operators, Dropout)
    # The output shape depends on the input values (contrib.boolean_mask): mx.nd runs the
    # kernel at once on the finished inputs; graph nodes are refused (no shape to plan).
    shape_from_values: bool = False
    # Whether MXNet registers the input names (FListInputNames): its executor monitor
    # reports unnamed inputs as ``<node>_input0``, ``<node>_input1``, ... (most unary,
    # scalar, reduction and reshaping operators).
    named_inputs: bool = True
    # Nothing flows back through it: every input's gradient is zero whatever the head
    # gradients (MXNet's MakeZeroGradNodes: BlockGrad, comparisons, rounding, indices).
    # The gradient pass cuts the graph there, so its outputs need no head gradient.
    # Operators whose backward is `zero_gradients` are such operators.
    zero_gradient: bool = False

    def __post_init__(self) -> None:
        if self.backward is zero_gradients:
            object.__setattr__(self, "zero_gradient", True)
        if self.bfloat16 not in ("float32", "native", "refuse"):
            raise OperatorError(f"{self.name}: bfloat16={self.bfloat16!r} is not one of "
                                "float32, native, refuse")
        if self.bfloat16 == "refuse":
            object.__setattr__(self, "infer_type", bf16.refusing_bf16(self.infer_type, self.name))
        # Stateful operators (subgraphs, oneDNN plans) handle their own dtypes.
        elif self.bfloat16 == "float32" and self.create_state is None:
            object.__setattr__(self, "forward", bf16.forward_in_float32(
                self.forward, self.infer_type, self.num_outputs, self.aux_indices))
            if self.backward is not None:
                object.__setattr__(self, "backward", bf16.backward_in_float32(self.backward))

    # -- parameters -------------------------------------------------------
    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    def parse_params(self, attrs: Mapping[str, str], node_name: str = "",
                     subgraphs: tuple = ()) -> Params:
        """Defaults overridden by the node's string attributes; errors name the node."""
        label = node_label(node_name or "?", self.name)
        values: dict[str, Any] = {}
        for key, text in attrs.items():
            if is_hidden_attr(key):
                continue
            spec = self.param(key)
            if spec is None and self.extra_params:
                values[key] = str(text)
                continue
            if not self.params:   # as MXNet's operators without a parameter struct,
                continue          # which keep any attribute (an AttrScope's, a user's)
            if spec is None:
                known = ", ".join(p.name for p in self.params) or "none"
                raise OperatorError(f"{label}: unknown parameter {key}={text!r} "
                                    f"(parameters: {known})")
            try:
                values[key] = spec.parse(str(text))
            except ParamParseError as exc:
                raise OperatorError(f"{label}: bad parameter {key}: {exc}") from None
        for spec in self.params:
            if spec.name not in values:
                if spec.required:
                    raise OperatorError(f"{label}: required parameter {spec.name} "
                                        f"({spec.type_name}) is missing")
                values[spec.name] = spec.default
        return Params(values, subgraphs, label)

    # -- inputs and outputs --------------------------------------------------
    def counts_inputs(self, p: Params) -> bool:
        """Whether `variadic` counts the inputs for these parameters."""
        return self.variadic is not None and (self.variadic_when is None
                                              or self.variadic_when(p))

    def input_names(self, p: Params) -> list[str]:
        if self.variadic is not None and self.counts_inputs(p):
            return [f"arg{i}" for i in range(p[self.variadic])]
        return list(self.inputs(p) if callable(self.inputs) else self.inputs)

    def aux_indices(self, p: Params) -> list[int]:
        aux = self.aux(p) if callable(self.aux) else self.aux
        return [i for i, n in enumerate(self.input_names(p)) if n in aux]

    def output_names(self, p: Params) -> list[str]:
        return list(self.outputs(p) if callable(self.outputs) else self.outputs)

    def num_outputs(self, p: Params) -> int:
        """All outputs, hidden ones included (they count in `node_row_ptr`)."""
        return len(self.output_names(p))

    def num_visible_outputs(self, p: Params) -> int:
        """The outputs a Symbol of this op exposes (BatchNorm: 1 of 3)."""
        return self.visible_outputs(p) if self.visible_outputs else self.num_outputs(p)

    def reads_out_grads(self, p: Params) -> bool:
        """Whether backward reads the output gradients (False for a loss layer)."""
        if self.backward_reads is None:
            return True
        reads = self.backward_reads(p) if callable(self.backward_reads) else self.backward_reads
        return reads.out_grads

    def grad_reads(self, p: Params, label: str = "") -> tuple[list[bool], list[bool]]:
        """For each input and each output: whether backward reads it."""
        ins, outs = self.input_names(p), self.output_names(p)
        if self.backward_reads is None:
            return [True] * len(ins), [True] * len(outs)
        reads = self.backward_reads(p) if callable(self.backward_reads) else self.backward_reads
        unknown = sorted({*reads.inputs} - {*ins} | {*reads.outputs} - {*outs})
        if unknown:
            raise OperatorError(f"{label or self.name}: backward_reads names {unknown}, which "
                                f"are not among inputs {ins} or outputs {outs}")
        return [n in reads.inputs for n in ins], [n in reads.outputs for n in outs]

    def backward_view(self, p: Params, inputs: Sequence[Any], outputs: Sequence[Any],
                      label: str = "") -> tuple[list, list]:
        """`inputs` and `outputs` as backward sees them: those it does not declare
        it reads become `Unread`."""
        label = label or self.name
        read_in, read_out = self.grad_reads(p, label)
        return ([a if r else Unread(a.shape, a.dtype, f"{label} input {n}")
                 for a, r, n in zip(inputs, read_in, self.input_names(p), strict=True)],
                [a if r else Unread(a.shape, a.dtype, f"{label} output {n}")
                 for a, r, n in zip(outputs, read_out, self.output_names(p), strict=True)])

    def docstring(self) -> str:
        """The documentation of the generated `mx.sym.X` / `mx.nd.X` functions."""
        lines = [self.doc.strip() or self.name, "", "Parameters", "----------"]
        if self.variadic:
            lines += ["*data : Symbol or NDArray", "    The inputs (any number)."]
        elif not callable(self.inputs):
            lines += [f"{n} : Symbol or NDArray" for n in self.inputs]
        else:
            lines += ["data, ... : Symbol or NDArray", "    Inputs; which ones depends on "
                      "the parameters."]
        for spec in self.params:
            default = "required" if spec.required else f"default={spec.default!r}"
            lines.append(f"{spec.name} : {spec.type_name}, {default}")
            if spec.doc:
                lines.append(f"    {spec.doc}")
        lines += ["name : str, optional", "    Name of the resulting node.", ""]
        if self.aliases:
            lines.append("Aliases: " + ", ".join(self.aliases))
        return "\n".join(lines)


_REGISTRY: dict[str, OpDef] = {}


def register(op: OpDef) -> OpDef:
    """Add an operator (and its aliases) to the registry; names must be new."""
    for name in (op.name, *op.aliases):
        if name in _REGISTRY:
            raise OperatorError(f"operator {name!r} is registered twice")
        _REGISTRY[name] = op
    return op


def get_op(name: str) -> OpDef:
    """The operator called `name` (or an alias of it); `OperatorError` if unknown."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise OperatorError(f"unknown operator {name!r}") from None


def list_ops() -> list[str]:
    """Every registered name, aliases included, sorted."""
    return sorted(_REGISTRY)


# MXNet's operator namespaces (``mx.sym.contrib.box_nms``, ``mx.nd.linalg.gemm2``) and the
# prefix of the registered names they hold.
NAMESPACES = {"contrib": "_contrib_", "linalg": "_linalg_", "image": "_image_"}


def namespace_names(space: str) -> dict[str, str]:
    """The operators of one of `NAMESPACES`: each registered name with its prefix,
    by the name without it."""
    prefix = NAMESPACES[space]
    return {name[len(prefix):]: name for name in _REGISTRY if name.startswith(prefix)}


def op_functions(package: str, make: Callable[[OpDef, str], Any]) -> dict[str, Any]:
    """What `package` (``minimx.symbol``, ``minimx.ndarray``) holds of the operators,
    as MXNet's does: ``make(op, name)`` (the package's generated function) for every
    registered name; ``op``, a module of those not hidden by a leading underscore;
    and `NAMESPACES` as modules (``minimx.symbol.linalg``) holding
    ``make(op, short)`` by the short names, which are also the functions' names
    (MXNet's auto names: ``box_nms0``, ``gemm20``)."""
    functions: dict[str, Any] = {name: make(get_op(name), name) for name in list_ops()}
    op = ModuleType(f"{package}.op", "The operators' functions, but the underscored ones.")
    for name, function in functions.items():
        if not name.startswith("_"):
            setattr(op, name, function)
    functions["op"] = op
    for space, prefix in NAMESPACES.items():
        module = ModuleType(f"{package}.{space}", f"The {prefix} operators without their prefix.")
        for short, name in namespace_names(space).items():
            setattr(module, short, make(get_op(name), short))
        functions[space] = module
    return functions


def canonical_ops() -> list[OpDef]:
    """Each registered operator once."""
    return sorted({id(op): op for op in _REGISTRY.values()}.values(), key=lambda o: o.name)


__all__ = ["GENERATOR", "GradReads", "OpDef", "OpContext", "Unread", "Param", "Params", "REQUIRED",
           "register", "get_op", "list_ops", "NAMESPACES", "namespace_names", "op_functions",
           "canonical_ops", "is_hidden_attr", "zero_gradients"]
