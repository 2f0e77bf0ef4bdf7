"""Calibration: fp32 inference over the user's data, watching the layers to quantize.

`collect_ranges` binds the float symbol once (inference only, no subgraph
backend, so that every operator's output is there to watch), runs it over
the calibration batches and hands the outputs asked for to a collector
(`collectors`), which turns them into one ``(min, max)`` per layer. It
watches through the executor's monitor with ``monitor_all=True``, as MXNet
1.9.1 does: that also reports the graph's variables (``data``) under their
own names, once for each operator that reads them.

Calibration data is what MXNet takes, a DataIter (anything with ``reset()``
whose batches have a ``.data`` list, named by its ``provide_data``), or any
iterable whose items are an array (numpy or NDArray, the one input), a dict
of arrays by input name, or a list/tuple of arrays in `data_names` order
(extra items, such as labels, are left out). The first batch fixes the shapes
the symbol is bound with.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import chain
from typing import Any

import numpy as np
from tqdm import tqdm

from ...base import MinimxError, ShapeError, subgraph_backend
from ...context import cpu
from ...executor import Executor
from ...ndarray import NDArray
from ...symbol import Symbol
from .collectors import Collector, Ranges, make_collector
from .entropy import QUANTIZED_DTYPES

CALIB_MODES = ("none", "naive", "entropy")
Batch = dict[str, np.ndarray]


def collect_ranges(sym: Symbol, arg_params: Mapping[str, NDArray],
                   aux_params: Mapping[str, NDArray], calib_data: Any, mode: str,
                   layer_names: Iterable[str], data_names: Sequence[str] = ("data",),
                   num_calib_examples: int | None = None, quantized_dtype: str = "int8",
                   logger: logging.Logger | None = None) -> Ranges:
    """The calibrated ``(min, max)`` of each of `layer_names` (names of the symbol's
    internal outputs, ``conv0_output``, or of its inputs, ``data``) over `calib_data`.

    `mode` is ``'none'`` (nothing to calibrate: ``{}``), ``'naive'`` (min and max) or
    ``'entropy'`` (KL-divergence thresholds). Batches are used until they hold
    `num_calib_examples` examples (the batch that reaches it included) or run out.
    A progress bar shows on a terminal; `logger` gets one line per layer.

    >>> import minimx as mx, numpy as np
    >>> sym = mx.sym.relu(mx.sym.var('data'), name='relu0')
    >>> batches = [np.array([[-1.0, 2.0]]), np.array([[0.5, 3.0]])]
    >>> collect_ranges(sym, {}, {}, batches, 'naive', ['relu0_output'])
    {'relu0_output': (0.0, 3.0)}
    """
    _check_options(mode, calib_data, quantized_dtype)
    if mode == "none":
        return {}
    collector = make_collector(mode, layer_names, quantized_dtype)
    count = run_calibration(sym, arg_params, aux_params, calib_data, collector, data_names,
                            num_calib_examples, logger)
    if logger is not None:
        logger.info("Calibrated %d layers (%s) on %d examples", len(collector.names), mode,
                    count)
    return collector.ranges(quantized_dtype, logger)


def run_calibration(sym: Symbol, arg_params: Mapping[str, NDArray],
                    aux_params: Mapping[str, NDArray], calib_data: Any, collector: Collector,
                    data_names: Sequence[str] = ("data",), num_calib_examples: int | None = None,
                    logger: logging.Logger | None = None) -> int:
    """Run `sym` over `calib_data`, handing `collector` the values of the outputs it
    names; the number of examples used."""
    _check_limit(num_calib_examples)
    _check_names(sym, sorted(collector.names), data_names)
    batches = _batches(calib_data, data_names)
    first = next(batches, None)
    if first is None:
        raise MinimxError("calibration: calib_data gave no batches")
    shapes = {name: value.shape for name, value in first.items()}
    executor = _bind(sym, shapes, arg_params, aux_params)
    seen: list[tuple[str, NDArray]] = []
    # The monitor runs on the engine's thread: it only keeps what it is shown.
    executor.set_monitor_callback(
        lambda name, value: seen.append((name, value)) if name in collector.names else None,
        monitor_all=True)
    count = used = 0
    for index, batch in enumerate(tqdm(chain([first], batches), desc="calibration",
                                       unit="batch", total=_length(calib_data), disable=None)):
        _check_batch(index, batch, shapes)
        executor.forward(is_train=False, **batch)
        for output in executor.outputs:
            output.wait_to_read()
        for name, value in seen:
            collector.collect(name, _finite(index, name, value.asnumpy()))
        seen.clear()
        used, count = index + 1, count + len(batch[data_names[0]])
        if num_calib_examples is not None and count >= num_calib_examples:
            break
    if logger is not None:
        logger.info("Collected statistics from %d batches with batch_size=%d",
                    used, len(first[data_names[0]]))
    return count


def _check_options(mode: str, calib_data: Any, quantized_dtype: str) -> None:
    if mode not in CALIB_MODES:
        raise MinimxError(f"calib_mode must be one of {', '.join(CALIB_MODES)}, got {mode!r}")
    if quantized_dtype not in QUANTIZED_DTYPES:
        raise MinimxError(f"quantized_dtype must be one of {', '.join(QUANTIZED_DTYPES)}, "
                          f"got {quantized_dtype!r}")
    if mode != "none" and calib_data is None:
        raise MinimxError(f"calib_data must be given when calib_mode={mode!r}")


def _check_limit(num_calib_examples: int | None) -> None:
    if num_calib_examples is not None and (not isinstance(num_calib_examples, (int, np.integer))
                                           or num_calib_examples <= 0):
        raise MinimxError("num_calib_examples must be a positive integer or None, got "
                          f"{num_calib_examples!r}")


def _check_names(sym: Symbol, layer_names: list[str], data_names: Sequence[str]) -> None:
    outputs = sym.get_internals().list_outputs()
    known = set(outputs)
    missing = [n for n in layer_names if n not in known]
    if missing:
        raise MinimxError(f"calibration: the symbol has no output or input named "
                          f"{', '.join(missing)} (it has {', '.join(outputs[:8])}"
                          f"{', ...' if len(outputs) > 8 else ''})")
    arguments = sym.list_arguments()
    absent = [n for n in data_names if n not in arguments]
    if absent:
        raise MinimxError(f"calibration: data_names {', '.join(absent)} are not inputs of "
                          f"the symbol (its arguments: {', '.join(arguments)})")


def _length(calib_data: Any) -> int | None:
    try:
        return len(calib_data)
    except TypeError:
        return None


def _batches(calib_data: Any, data_names: Sequence[str]) -> Iterator[Batch]:
    """Each batch of `calib_data` as numpy arrays by input name."""
    items: Iterable[Any]
    if callable(getattr(calib_data, "reset", None)):  # a DataIter
        calib_data.reset()
        items = (_by_name(calib_data, batch.data) for batch in calib_data)
    else:
        items = calib_data
    for index, item in enumerate(items):
        yield {name: _numpy(value) for name, value in _named(index, item, data_names).items()}


def _by_name(calib_data: Any, arrays: Sequence[Any]) -> Mapping[str, Any] | Sequence[Any]:
    """A DataIter's batch by the names it provides (its order, often sorted, need
    not be `data_names`'), as MXNet's Module reads it; in order if it names none."""
    provided = getattr(calib_data, "provide_data", None)
    if not provided:
        return arrays
    names = [desc.name if hasattr(desc, "name") else desc[0] for desc in provided]
    return dict(zip(names, arrays, strict=True))


def _named(index: int, item: Any, data_names: Sequence[str]) -> Mapping[str, Any]:
    if isinstance(item, Mapping):
        missing = [n for n in data_names if n not in item]
        if missing:
            raise MinimxError(f"calibration batch {index}: has no {', '.join(missing)} of "
                              f"data_names {', '.join(data_names)} (it has "
                              f"{', '.join(map(str, item))})")
        return {name: item[name] for name in data_names}
    if isinstance(item, (list, tuple)):
        if len(item) < len(data_names):
            raise MinimxError(f"calibration batch {index}: {len(item)} arrays for the "
                              f"{len(data_names)} inputs {', '.join(data_names)}")
        return dict(zip(data_names, item, strict=False))
    if len(data_names) != 1:
        raise MinimxError(f"calibration batch {index}: one array for the {len(data_names)} "
                          f"inputs {', '.join(data_names)}; give a dict or a list")
    return {data_names[0]: item}


def _numpy(value: Any) -> np.ndarray:
    return value.asnumpy() if isinstance(value, NDArray) else np.asarray(value)


def _check_batch(index: int, batch: Batch, shapes: Mapping[str, tuple[int, ...]]) -> None:
    for name, value in batch.items():
        if value.shape != shapes[name]:
            raise ShapeError(f"calibration batch {index}: {name} has shape {value.shape}, but "
                             f"the symbol is bound for {name} of shape {shapes[name]} "
                             "(the first batch's)")
        if value.dtype.kind == "f" and not np.isfinite(value).all():
            bad = int(np.count_nonzero(~np.isfinite(value)))
            raise MinimxError(f"calibration batch {index}: {name} has {bad} NaN or infinite "
                              "values")


def _finite(index: int, layer: str, values: np.ndarray) -> np.ndarray:
    if not np.isfinite(values).all():
        raise MinimxError(f"calibration batch {index}: layer output {layer} has "
                          f"{np.count_nonzero(~np.isfinite(values))} NaN or infinite values "
                          "(the parameters?)")
    return values


def _bind(sym: Symbol, shapes: Mapping[str, tuple[int, ...]],
          arg_params: Mapping[str, NDArray], aux_params: Mapping[str, NDArray]) -> Executor:
    # A backend would hide the outputs of the operators it fuses, which calibration watches.
    with subgraph_backend("NONE"):
        executor = sym.simple_bind(cpu(), grad_req="null", **shapes)
    try:
        executor.copy_params_from(arg_params, aux_params, allow_extra_params=True)
    except ShapeError as err:
        # The parameters are the model's; what the user got wrong is the data.
        given = ", ".join(f"{name} {shape}" for name, shape in shapes.items())
        raise ShapeError(f"calibration data of shape {given} does not fit the model's "
                         f"parameters: {err}") from err
    return executor

