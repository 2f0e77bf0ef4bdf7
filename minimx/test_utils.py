"""`mx.test_utils`: what users' own tests and custom-operator scripts call in MXNet 1.9.1 -
comparisons with MXNet's per-dtype tolerances, finite-difference gradient checks, checks
of a symbol's forward and backward against expected values, and random shapes and arrays.

Random values come from numpy's global generator in MXNet's order, so after
``np.random.seed(n)`` the `rand_shape_*`, `random_arrays` and `rand_ndarray` draws (and
`check_symbolic_backward`'s starting gradients) are MXNet's.

>>> import numpy as np
>>> almost_equal(np.float32([1, 2]), np.float32([1, 2.0001]))   # float64's rtol, 1e-5
False
>>> assert_almost_equal(np.float32([1, 2]), np.float32([1, 2.0001]))   # float32's, 1e-4
"""
from __future__ import annotations

import numbers
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from . import symbol as sym_ops
from .base import DTypeError, MinimxError
from .context import Context, as_context, current_context, set_current_context
from .executor import Executor
from .ndarray import NDArray, array
from .symbol import Symbol, Variable

ArrayLike = NDArray | np.ndarray | numbers.Number
Location = Mapping[str, Any] | Sequence[Any]

_EXACT = (np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
          np.uint64)
_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
# MXNet's default_rtols() / default_atols(): the tolerance for data of each dtype.
_RTOLS: dict[np.dtype, float] = {**dict(zip(_FLOATS, (1e-2, 1e-4, 1e-5), strict=True)),
                                 **{np.dtype(t): 0 for t in _EXACT}}
_ATOLS: dict[np.dtype, float] = {**dict(zip(_FLOATS, (1e-1, 1e-3, 1e-20), strict=True)),
                                 **{np.dtype(t): 0 for t in _EXACT}}

def default_context() -> Context:
    """The context the checks run on: the current one, as MXNet's."""
    return current_context()


def set_default_context(ctx: Context) -> None:
    """Make `ctx` this thread's current context (MXNet's does so too)."""
    set_current_context(as_context(ctx, "set_default_context: ctx"))


def default_dtype() -> type:
    """The dtype of the arrays the checks make: float32."""
    return np.float32


def _default_tol(table: dict[np.dtype, float], dtype: Any, which: str) -> float:
    dt = np.dtype(dtype)
    if dt not in table:
        raise DTypeError(f"no default {which} for dtype {dt} (pass {which}= explicitly)")
    return table[dt]


def get_atol(atol: float | None = None, dtype: Any = np.float64) -> float:
    """`atol`, or the default absolute tolerance of `dtype` (float64's: 1e-20)."""
    return _default_tol(_ATOLS, dtype, "atol") if atol is None else atol


def get_rtol(rtol: float | None = None, dtype: Any = np.float64) -> float:
    """`rtol`, or the default relative tolerance of `dtype` (float64's: 1e-5)."""
    return _default_tol(_RTOLS, dtype, "rtol") if rtol is None else rtol


def _tolerance(x: Any, tol: float | Mapping | None, table: dict[np.dtype, float],
               which: str) -> float:
    """`tol` if a number, else its entry (or the default) for the dtype of `x`; as given,
    so an int stays an int, as in MXNet."""
    if tol is not None and not isinstance(tol, Mapping):
        return tol   # a number, numpy's too
    dtype = np.dtype(x.dtype) if hasattr(x, "dtype") else np.asarray(x).dtype
    given = tol or {}
    return given[dtype] if dtype in given else _default_tol(table, dtype, which)


def get_tols(x: Any, y: Any, rtol: float | Mapping | None, atol: float | Mapping | None
             ) -> tuple[float, float]:
    """(rtol, atol) for comparing `x` and `y`: numbers as given; otherwise a dict's entry for
    each one's dtype or the defaults, the looser of the two."""
    return (max(_tolerance(x, rtol, _RTOLS, "rtol"), _tolerance(y, rtol, _RTOLS, "rtol")),
            max(_tolerance(x, atol, _ATOLS, "atol"), _tolerance(y, atol, _ATOLS, "atol")))


def _numpy(x: Any) -> np.ndarray:
    return x.asnumpy() if isinstance(x, NDArray) else np.asarray(x)


def _check_shapes(a: np.ndarray, b: np.ndarray) -> None:
    if a.shape != b.shape:
        raise AssertionError(np.testing.build_err_msg(
            [a, b], err_msg=f"a.shape = {a.shape} and b.shape = {b.shape} are not equal"))


def same(a: ArrayLike, b: ArrayLike) -> bool:
    """Whether `a` and `b` (NDArrays or numpy arrays) have the same shape and values."""
    return bool(np.array_equal(_numpy(a), _numpy(b)))


def almost_equal(a: ArrayLike, b: ArrayLike, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False,
                 use_broadcast: bool = True) -> bool:
    """``np.allclose`` with float64's default tolerances whatever the dtypes (as MXNet's;
    `assert_almost_equal` uses the dtypes' own)."""
    a, b = _numpy(a), _numpy(b)
    if not use_broadcast:
        _check_shapes(a, b)
    return bool(np.allclose(a, b, rtol=get_rtol(rtol), atol=get_atol(atol),
                            equal_nan=equal_nan))


def assert_almost_equal(a: ArrayLike, b: ArrayLike, rtol: float | Mapping | None = None,
                        atol: float | Mapping | None = None, names: tuple[str, str] = ("a", "b"),
                        equal_nan: bool = False, use_broadcast: bool = True,
                        mismatches: tuple[int, int] = (10, 10)) -> None:
    """Raise AssertionError unless ``|a - b| <= atol + rtol * |b|`` everywhere. Tolerances
    not given are the looser dtype default of the two (float32: rtol 1e-4, atol 1e-3). The
    message, as MXNet's, gives the largest violation (in units of the tolerance), where it
    is and the share of elements out of tolerance (counted up to ``mismatches[1]``)."""
    rtol, atol = get_tols(a, b, rtol, atol)
    # shown in the message as given (a number stays a number), as MXNet shows them
    shown = [x.asnumpy() if isinstance(x, NDArray) else x for x in (a, b)]
    a, b = _numpy(a), _numpy(b)
    if not use_broadcast:
        _check_shapes(a, b)
    if a.dtype == np.bool_ and b.dtype == np.bool_:
        np.testing.assert_equal(a, b)
        return
    if almost_equal(a, b, rtol, atol, equal_nan=equal_nan):
        return
    text = _largest_violation(a, b, rtol, atol, names, equal_nan, mismatches[1])
    with np.printoptions(threshold=4, suppress=True):
        raise AssertionError(np.testing.build_err_msg(shown, err_msg=text))


def _largest_violation(a: np.ndarray, b: np.ndarray, rtol: float, atol: float,
                       names: tuple[str, str], equal_nan: bool, limit: int) -> str:
    """MXNet's report: the largest violation, where it is and the share out of tolerance."""
    a, b = np.broadcast_arrays(a, b)
    # numpy's own promotions, as MXNet computes (float16 data with a float64 tolerance
    # is divided in float64), but integers in float64: no wrap-around in a - b
    x, y = (a.astype(np.float64), b.astype(np.float64)) \
        if np.result_type(a, b).kind in "biu" else (a, b)
    with np.errstate(invalid="ignore", divide="ignore"):   # inf - inf, nan: reported as nan
        violation = np.where(np.equal(x, y), 0, np.abs(x - y)) / (atol + rtol * np.abs(y) + 1e-20)
    index = tuple(int(i) for i in np.unravel_index(np.argmax(violation), violation.shape))
    text = f"Error {np.max(violation):f} exceeds tolerance rtol={rtol:e}, atol={atol:e}"
    if index == ():
        text += ".\n"
    else:
        bad = int(np.count_nonzero(~np.isclose(a, b, rtol, atol, equal_nan=equal_nan)))
        counted, degree = (limit + 1, "at least ") if 0 < limit < bad else (bad, "")
        text += (f" (mismatch {degree}{100 * counted / a.size:f}%).\n"
                 f"Location of maximum error: {index}, {names[0]}={a[index]:.8f}, "
                 f"{names[1]}={b[index]:.8f}")
    return text


def assert_exception(f: Callable, exception_type: type[BaseException], *args: Any,
                     **kwargs: Any) -> None:
    """Raise AssertionError unless ``f(*args, **kwargs)`` raises `exception_type`."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError(f"{getattr(f, '__name__', f)!s} did not raise "
                         f"{exception_type.__name__}")


# -- random shapes and arrays (numpy's global generator, as MXNet draws) ------------------------
def rand_shape_2d(dim0: int = 10, dim1: int = 10, allow_zero_size: bool = False
                  ) -> tuple[int, int]:
    low = 0 if allow_zero_size else 1
    return int(np.random.randint(low, dim0 + 1)), int(np.random.randint(low, dim1 + 1))


def rand_shape_3d(dim0: int = 10, dim1: int = 10, dim2: int = 10,
                  allow_zero_size: bool = False) -> tuple[int, int, int]:
    low = 0 if allow_zero_size else 1
    return (int(np.random.randint(low, dim0 + 1)), int(np.random.randint(low, dim1 + 1)),
            int(np.random.randint(low, dim2 + 1)))


def rand_shape_nd(num_dim: int, dim: int = 10, allow_zero_size: bool = False
                  ) -> tuple[int, ...]:
    low = 0 if allow_zero_size else 1
    return tuple(int(d) for d in np.random.randint(low, dim + 1, size=num_dim))


def random_arrays(*shapes: Sequence[int]) -> np.ndarray | list[np.ndarray]:
    """Standard-normal float32 arrays of `shapes` (one array for one shape)."""
    arrays = [np.array(np.random.randn(), dtype=np.float32) if len(s) == 0
              else np.random.randn(*s).astype(np.float32) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def rand_ndarray(shape: Sequence[int], stype: str = "default", density: float | None = None,
                 dtype: Any = None, modifier_func: Callable | None = None,
                 shuffle_csr_indices: bool = False, distribution: str | None = None,
                 ctx: Context | None = None) -> NDArray:
    """A standard-normal NDArray of `shape`. Only dense storage exists here: another
    `stype` is refused (the sparse-only arguments are accepted and, as in MXNet for dense
    arrays, unused)."""
    if stype != "default":
        raise MinimxError(f"rand_ndarray: stype={stype!r}: minimx has dense arrays only "
                          "(stype='default')")
    return array(random_arrays(shape), ctx=ctx or default_context(), dtype=dtype)


def np_reduce(dat: np.ndarray, axis: int | Sequence[int] | None, keepdims: bool,
              numpy_reduce_func: Callable) -> np.ndarray:
    """`numpy_reduce_func` over each axis of `axis` (all for None) in turn, last first."""
    axes = [axis] if isinstance(axis, int) else list(range(dat.ndim) if axis is None else axis)
    ret = dat
    for i in sorted(axes, reverse=True):
        ret = numpy_reduce_func(ret, axis=i)
    if keepdims:
        shape = list(dat.shape)
        for i in axes:   # negative axes too
            shape[i] = 1
        ret = ret.reshape(shape)
    return ret


# -- symbols: forward, backward, numeric gradient --------------------------------------------
def _check_float_dtype(dtype: Any, what: str, asnumpy: bool = True) -> None:
    """Refuse a `dtype` other than float16/32/64 (or 'asnumpy', where the arrays keep theirs)."""
    if asnumpy and isinstance(dtype, str) and dtype == "asnumpy":
        return
    try:
        ok = np.dtype(dtype) in _FLOATS
    except TypeError:
        ok = False
    if not ok:
        allowed = "'asnumpy', " * asnumpy + "np.float16, np.float32 or np.float64"
        raise DTypeError(f"{what}: dtype={dtype!r} must be {allowed}")


def _as_nd(value: Any, ctx: Context, dtype: Any) -> NDArray:
    """An NDArray stays; anything else becomes one of `dtype` (its own for 'asnumpy')."""
    if isinstance(value, NDArray):
        return value
    value = np.asarray(value)
    return array(value, ctx=ctx, dtype=value.dtype if str(dtype) == "asnumpy" else dtype)


def _by_name(names: list[str], values: Location, what: str) -> dict[str, Any]:
    """`values` (a dict with exactly `names`, or a list in their order) as a dict."""
    if isinstance(values, Mapping):
        if set(values) != set(names):
            raise MinimxError(f"{what} names {sorted(values)} do not match the symbol's "
                              f"{sorted(names)}")
        return {n: values[n] for n in names}
    if not isinstance(values, (list, tuple)) or len(values) != len(names):
        raise MinimxError(f"{what}: give a dict by name or a list of {len(names)} arrays "
                          f"(for {names}), got {type(values).__name__}")
    return dict(zip(names, values, strict=True))


def _parse(sym: Symbol, location: Location, aux_states: Location | None, ctx: Context,
           dtype: Any) -> tuple[dict[str, NDArray], dict[str, NDArray] | None]:
    """The arguments and auxiliary states as NDArrays by name."""
    args = _by_name(sym.list_arguments(), location, "location")
    aux = None if aux_states is None else \
        _by_name(sym.list_auxiliary_states(), aux_states, "aux_states")
    return ({k: _as_nd(v, ctx, dtype) for k, v in args.items()},
            None if aux is None else {k: _as_nd(v, ctx, dtype) for k, v in aux.items()})


def _no_sparse(stypes: Mapping[str, str] | None, what: str) -> None:
    sparse = {k: v for k, v in (stypes or {}).items() if v not in (None, "default")}
    if sparse:
        raise MinimxError(f"{what}={sparse}: minimx has dense arrays only")


def simple_forward(sym: Symbol, ctx: Context | None = None, is_train: bool = False,
                   **inputs: Any) -> np.ndarray | list[np.ndarray]:
    """The outputs of `sym` on `inputs` (arrays by argument name) as numpy arrays (one
    array for one output)."""
    exe = sym.bind(ctx or default_context(),
                   args={k: array(v) for k, v in inputs.items()}, grad_req="null")
    exe.forward(is_train=is_train)
    outputs = [x.asnumpy() for x in exe.outputs]
    return outputs[0] if len(outputs) == 1 else outputs


def check_symbolic_forward(sym: Symbol, location: Location, expected: Location,
                           rtol: float | None = None, atol: float | None = None,
                           aux_states: Location | None = None, ctx: Context | None = None,
                           equal_nan: bool = False, dtype: Any = np.float32) -> list[NDArray]:
    """Check the outputs of an inference forward of `sym` at `location` (arrays by argument
    name, or in list_arguments order) against `expected` (by output name, or in order);
    returns the outputs."""
    _check_float_dtype(dtype, "check_symbolic_forward")
    ctx = ctx or default_context()
    args, aux = _parse(sym, location, aux_states, ctx, dtype)
    wanted = _by_name(sym.list_outputs(), expected, "expected")
    exe = sym.bind(ctx, args=args, grad_req="null", aux_states=aux)
    exe.forward(is_train=False)
    for (name, want), got in zip(wanted.items(), exe.outputs, strict=True):
        assert_almost_equal(want, got, rtol, atol, (f"EXPECTED_{name}", f"FORWARD_{name}"),
                            equal_nan=equal_nan)
    return exe.outputs


def check_symbolic_backward(sym: Symbol, location: Location, out_grads: Any, expected: Location,
                            rtol: float | None = None, atol: float | None = None,
                            aux_states: Location | None = None, grad_req: Any = "write",
                            ctx: Context | None = None,
                            grad_stypes: Mapping[str, str] | None = None,
                            equal_nan: bool = False, dtype: Any = np.float32
                            ) -> dict[str, NDArray]:
    """Check the gradients a training forward and `backward(out_grads)` give the arguments
    named in `expected` (a dict, or a list in list_arguments order). Gradient arrays start
    from standard-normal values (drawn in name order, as MXNet): with grad_req 'add' the
    check subtracts them, with 'null' they must be left as they were. Returns the
    gradient arrays by name."""
    _check_float_dtype(dtype, "check_symbolic_backward")
    _no_sparse(grad_stypes, "grad_stypes")
    ctx = ctx or default_context()
    names = sym.list_arguments()
    args, aux = _parse(sym, location, aux_states, ctx, dtype)
    if isinstance(expected, Mapping):
        wanted = dict(expected)
    else:
        wanted = dict(zip(names, expected, strict=False))
    unknown = sorted(set(wanted) - set(names))
    if unknown:
        raise MinimxError(f"check_symbolic_backward: expected names {unknown} are not "
                          f"arguments of the symbol ({names})")
    start = {k: np.random.normal(size=np.shape(_numpy(v))) for k, v in sorted(wanted.items())}
    grads = {k: array(v, ctx=ctx, dtype=_numpy(wanted[k]).dtype if str(dtype) == "asnumpy"
                      else dtype) for k, v in start.items()}
    reqs = _grad_reqs(grad_req, names)
    exe = sym.bind(ctx, args=args, args_grad=grads, aux_states=aux,
                   grad_req={n: reqs[n] if n in grads else "null" for n in names})
    exe.forward(is_train=True)
    exe.backward(_head_grads(out_grads, ctx, dtype))
    _check_grads(wanted, grads, start, reqs, rtol, atol, "EXPECTED", equal_nan)
    return grads


def _check_grads(wanted: Mapping[str, Any], grads: Mapping[str, NDArray],
                 start: Mapping[str, np.ndarray], reqs: Mapping[str, str], rtol: Any, atol: Any,
                 label: str, equal_nan: bool = False) -> None:
    """Each of `grads` (which began as `start`) against `wanted` as its grad_req says:
    written, added to the start, or left alone."""
    for name, want in wanted.items():
        got = grads[name].asnumpy()
        expect, actual = {"write": (want, got), "add": (want, got - start[name]),
                          "null": (start[name], got)}[reqs[name]]
        assert_almost_equal(expect, actual, rtol, atol, (f"{label}_{name}", f"BACKWARD_{name}"),
                            equal_nan=equal_nan)


def _grad_reqs(grad_req: Any, names: list[str]) -> dict[str, str]:
    """grad_req (one for all, a list in argument order, or a dict) per argument, checked."""
    if isinstance(grad_req, str):
        reqs = dict.fromkeys(names, grad_req)
    elif isinstance(grad_req, Mapping):
        reqs = {n: grad_req.get(n, "null") for n in names}
    else:
        reqs = dict(zip(names, grad_req, strict=True))
    bad = {k: v for k, v in reqs.items() if v not in ("write", "add", "null")}
    if bad:
        raise MinimxError(f"grad_req {bad}: each must be 'write', 'add' or 'null'")
    return reqs


def _head_grads(out_grads: Any, ctx: Context, dtype: Any) -> Any:
    """Output gradients as NDArrays (a list, a dict by output name, or None)."""
    if out_grads is None:
        return None
    if isinstance(out_grads, Mapping):
        return {k: _as_nd(v, ctx, dtype) for k, v in out_grads.items()}
    if isinstance(out_grads, (list, tuple)):
        return [_as_nd(v, ctx, dtype) for v in out_grads]
    raise MinimxError(f"out_grads must be None, a list or a dict, got "
                      f"{type(out_grads).__name__}")


# MXNet 1.9.1's default_numeric_eps: powers of two, exact as input deltas.
NUMERIC_EPS = {np.dtype(np.float16): 2.0 ** -6, np.dtype(np.float32): 2.0 ** -9,
               np.dtype(np.float64): 2.0 ** -14}


def check_numeric_gradient(sym: Symbol, location: Location, aux_states: Location | None = None,
                           numeric_eps: float | None = 1e-3, rtol: float = 1e-2,
                           atol: float | None = None,
                           grad_nodes: Sequence[str] | Mapping[str, str] | None = None,
                           use_forward_train: bool = True, ctx: Context | None = None,
                           grad_stype_dict: Mapping[str, str] | None = None,
                           dtype: Any = np.float32) -> None:
    """Check the gradients `sym`'s backward gives (one output) against central finite
    differences with step `numeric_eps` (None: MXNet 1.9.1's for the dtype), at
    `location` (arrays by argument name, or in list_arguments order). The output is
    first multiplied by a fixed random projection, so every element's gradient counts.
    `grad_nodes`: the arguments checked (all by default), or a dict of their grad_req
    ('write', 'add', 'null').

    >>> import numpy as np, minimx as mx
    >>> x = mx.sym.var("x")
    >>> check_numeric_gradient(mx.sym.tanh(x), [np.array([[0.5, -1.0]])])
    """
    _check_float_dtype(dtype, "check_numeric_gradient", asnumpy=False)
    _no_sparse(grad_stype_dict, "grad_stype_dict")
    if numeric_eps is None:   # MXNet's step for the dtype (a power of two)
        numeric_eps = NUMERIC_EPS[np.dtype(dtype)]
    if np.dtype(dtype) != np.float64 and numeric_eps < 1e-5:
        raise MinimxError(f"check_numeric_gradient: numeric_eps={numeric_eps} is too small "
                          f"for {np.dtype(dtype)} (at least 1e-5; or use dtype=np.float64)")
    if len(sym.list_outputs()) != 1:
        raise MinimxError(f"check_numeric_gradient: the symbol has outputs "
                          f"{sym.list_outputs()}; it must have one")
    ctx = ctx or default_context()
    args, aux = _parse(sym, location, aux_states, ctx, dtype)
    names = sym.list_arguments()
    if isinstance(grad_nodes, Mapping):
        reqs = _grad_reqs(grad_nodes, list(grad_nodes))
    else:
        reqs = _grad_reqs("write", list(names if grad_nodes is None else grad_nodes))
    unknown = sorted(set(reqs) - set(names))
    if unknown:
        raise MinimxError(f"check_numeric_gradient: grad_nodes {unknown} are not arguments "
                          f"of the symbol ({names})")
    _, out_shapes, _ = sym.infer_shape(**{k: v.shape for k, v in args.items()})
    proj = np.random.rand(*out_shapes[0]) + 0.1   # not too small: precision would be lost
    start = {k: np.random.normal(0, 0.01, size=args[k].shape) for k in reqs}
    grads = {k: array(v, ctx=ctx, dtype=dtype) for k, v in start.items()}
    loss = sym_ops.MakeLoss(sym * Variable("__random_proj"))
    exe = loss.bind(ctx, args={**args, "__random_proj": array(proj, ctx=ctx, dtype=dtype)},
                    args_grad=grads, aux_states=aux,
                    grad_req={n: reqs.get(n, "null") for n in loss.list_arguments()})
    exe.forward(is_train=True)
    exe.backward()
    numeric = _finite_differences(exe, list(reqs), aux, numeric_eps, use_forward_train)
    _check_grads(numeric, grads, start, reqs, rtol, atol, "NUMERICAL")


def _finite_differences(exe: Executor, names: list[str], aux: Mapping[str, NDArray] | None,
                        eps: float, is_train: bool) -> dict[str, np.ndarray]:
    """d sum(output) / d x for each element x of the arguments `names`, by central
    differences; auxiliary states are restored before each forward (a training forward may
    update them), and each argument afterwards."""
    aux_values = {k: v.asnumpy() for k, v in (aux or {}).items()}

    def total(name: str, values: np.ndarray) -> float:
        exe.arg_dict[name][:] = values
        for key, value in aux_values.items():
            exe.aux_dict[key][:] = value
        exe.forward(is_train=is_train)
        return float(exe.outputs[0].asnumpy().sum(dtype=np.float64))

    grads = {}
    for name in names:
        original = exe.arg_dict[name].asnumpy()
        values = original.copy().reshape(-1)
        grad = np.zeros(values.shape, dtype=original.dtype)
        if original.dtype.kind == "f":
            for i in range(values.size):
                values[i] = original.flat[i] + eps / 2
                plus = total(name, values.reshape(original.shape))
                values[i] = values[i] - eps
                grad[i] = (plus - total(name, values.reshape(original.shape))) / eps
                values[i] = original.flat[i]
        exe.arg_dict[name][:] = original
        grads[name] = grad.reshape(original.shape)
    return grads


def download(url: str, fname: str | None = None, dirname: str | None = None,
             overwrite: bool = False, retries: int = 5) -> str:
    """The local file MXNet's `download` would write (``dirname/fname``, the name defaulting
    to the URL's last part) when it exists already; minimx itself never downloads, so
    otherwise this raises, saying where to put the file."""
    name = fname or url.split("/")[-1]
    path = os.path.join(dirname, name) if dirname is not None else name
    if os.path.exists(path) and not overwrite:
        return path
    raise MinimxError(f"download({url!r}): minimx does not use the network; fetch the file "
                      f"yourself and save it as {path!r}")
