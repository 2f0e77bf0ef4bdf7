"""Fluent methods: the operators MXNet's Symbol and NDArray also offer as methods
(``x.sum(1)``, ``x.clip(0, 6)``, ``x.take(indices, axis=1)``).

`FLUENT` maps each method to its operator; ``x.<method>(*args, **kwargs)`` is
the generated ``<operator>(x, *args, **kwargs)`` (further inputs, then
parameters by position or keyword: `calling.split_call`). `Symbol` and
`NDArray` attach one method per entry (`NDArray` keeps its own `reshape` and
`astype`).
"""
from __future__ import annotations

FLUENT: dict[str, str] = {
    "reshape": "Reshape", "astype": "Cast", "flatten": "Flatten",
    "broadcast_axes": "broadcast_axes",   # an alias: MXNet names the node so
    **{name: name for name in (
        "transpose", "expand_dims", "split", "slice", "slice_axis", "clip", "swapaxes",
        "squeeze", "flip", "tile", "repeat", "broadcast_to", "broadcast_like", "one_hot",
        "take", "pick", "slice_like", "zeros_like", "ones_like", "shape_array", "size_array",
        "depth_to_space", "space_to_depth", "pad", "diag", "argmax_channel",
        "sum", "mean", "max", "min", "prod", "nansum", "nanprod", "norm", "argmax", "argmin",
        "topk", "sort", "argsort", "softmax", "softmin", "reshape_like",
        "log_softmax", "relu", "sigmoid", "tanh", "exp", "expm1", "log", "log1p", "log2",
        "log10", "sqrt", "rsqrt", "cbrt", "rcbrt", "square", "reciprocal", "abs", "sign",
        "round", "rint", "floor", "ceil", "trunc", "fix", "sin", "cos", "tan", "arcsin",
        "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh", "arctanh", "degrees",
        "radians")},
}
