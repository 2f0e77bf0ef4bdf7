"""What the commands share: finding a model, parsing shapes, binding with a backend.

A model is named on the command line as an MXNet checkpoint prefix
(``PREFIX-symbol.json`` beside ``PREFIX-NNNN.params``), a symbol JSON file,
or a model-zoo name (``resnet50_v1``, random weights). Shapes are given as
``NAME=D0,D1,...``; backends as MXNet's ``MINIMX_SUBGRAPH_BACKEND`` values
(``NONE`` for none).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import model, models
from ..base import MinimxError, subgraph_backend
from ..executor import Executor
from ..ndarray import NDArray
from ..symbol import Symbol, load


@dataclass
class Model:
    """A symbol and the parameters found for it (empty when none were)."""

    name: str
    symbol: Symbol
    arg_params: dict[str, NDArray]
    aux_params: dict[str, NDArray]


def load_model(spec: str, epoch: int | None = None) -> Model:
    """The model `spec` names (a checkpoint prefix, a symbol file, a zoo name),
    with the parameters of `epoch` (default 0) when its checkpoint has them."""
    if spec.endswith(".json"):
        return Model(Path(spec).stem, load(spec), {}, {})
    symbol_file = Path(f"{spec}-symbol.json")
    if symbol_file.exists():
        params = Path(f"{spec}-{epoch or 0:04d}.params")
        if not params.exists():
            if epoch is not None:
                raise MinimxError(f"{params} not found (the checkpoint of epoch {epoch})")
            return Model(Path(spec).name, load(str(symbol_file)), {}, {})
        sym, args, auxs = model.load_checkpoint(spec, epoch or 0)
        return Model(Path(spec).name, sym, args, auxs)
    if spec.lower() in models.list_models():
        return Model(spec, models.get_model(spec), {}, {})
    raise MinimxError(f"{spec!r} is neither a checkpoint prefix ({symbol_file} not found), "
                      f"a symbol .json file nor a model-zoo name (minimx models: "
                      f"{', '.join(models.list_models())})")


def parse_shapes(specs: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """``['data=1,3,224,224']`` -> ``{'data': (1, 3, 224, 224)}``."""
    shapes = {}
    for spec in specs:
        name, sep, dims = spec.partition("=")
        try:
            shape = tuple(int(d) for d in dims.split(",")) if sep and name else None
        except ValueError:
            shape = None
        if shape is None or any(d <= 0 for d in shape):
            raise MinimxError(f"--shape {spec!r}: expected NAME=D0,D1,... with positive "
                              "integers, e.g. data=1,3,224,224")
        shapes[name] = shape
    return shapes


def parse_list(text: str, what: str) -> list[str]:
    """A comma-separated option's items (``NONE,DNNL``)."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise MinimxError(f"{what}: give at least one value")
    return items


def bind(m: Model, shapes: dict[str, tuple[int, ...]], backend_name: str) -> Executor:
    """An inference executor of `m` for `shapes`, with `backend_name`; parameters
    the checkpoint does not have get seeded random values (BatchNorm variances
    positive), so that a model without weights still runs."""
    with subgraph_backend(backend_name):
        ex = m.symbol.simple_bind(grad_req="null", **shapes)
    ex.copy_params_from(m.arg_params, m.aux_params, allow_extra_params=True)
    rng = np.random.default_rng(0)
    given = {*m.arg_params, *m.aux_params, *shapes}
    for name, arr in sorted({**ex.arg_dict, **ex.aux_dict}.items()):
        if name not in given:
            positive = name.endswith(("_var", "_gamma"))
            arr[:] = rng.uniform(0.5, 1.5, arr.shape) if positive else \
                rng.uniform(-0.1, 0.1, arr.shape)
    return ex


def fill_inputs(ex: Executor, names: Iterable[str], seed: int = 1) -> None:
    """Seeded normal data into the executor's inputs `names`."""
    rng = np.random.default_rng(seed)
    for name in names:
        arr = ex.arg_dict[name]
        arr[:] = rng.normal(size=arr.shape)


def data_shapes(m: Model, given: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
    """`given`, or when empty ``data`` of a zoo model's input size at batch 1."""
    if given:
        return given
    if "data" in m.symbol.list_arguments():
        side = 299 if "inception" in m.name else 224
        return {"data": (1, 3, side, side)}
    raise MinimxError(f"give the input shapes with --shape NAME=D0,D1,... (the inputs of "
                      f"{m.name}: {', '.join(inputs_of(m))})")


def inputs_of(m: Model) -> list[str]:
    """The arguments that no parameter fills: the data inputs."""
    return [n for n in m.symbol.list_arguments()
            if n not in m.arg_params and not n.endswith(PARAM_SUFFIXES)]


PARAM_SUFFIXES = ("_weight", "_bias", "_gamma", "_beta", "_label")
