"""`DataParallelExecutorGroup`: a symbol bound once per context, each executor running
its slice of every batch - MXNet 1.x's data parallelism inside `Module`.

A batch is cut along each input's batch axis (the ``N`` of its layout; axis 0
without one) into one slice per context, sized by the work loads as MXNet's
`_split_input_slice` sizes them (`split_input_slice`). Each context gets an
executor bound for its slice's shapes, with parameters, gradients and auxiliary
states of its own: `param_arrays`, `grad_arrays`, `aux_arrays` hold, per name, the
array of every context, as MXNet scripts reach into them. Outputs and input
gradients are joined again along their batch axis when merged; a metric is updated
slice by slice, as MXNet's is. Summing the gradients and averaging the parameters
across contexts is the module's business (`Module.update`, `get_params`). One
context is the one-slice case of the same code.

>>> [(s.start, s.stop) for s in split_input_slice(5, [1, 1])]
[(0, 2), (2, 5)]
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from numbers import Real
from typing import Any

from .. import ndarray as nd
from ..base import MinimxError, ShapeError
from ..context import Context
from ..executor import Executor, bind, simple_bind
from ..io import DataDesc
from ..metric import EvalMetric
from ..ndarray import NDArray, zeros
from ..symbol import Symbol

PerDevice = list[list[NDArray]]


def split_input_slice(batch_size: int, work_load_list: Sequence[float]) -> list[slice]:
    """The slice of a batch each device takes: shares of `batch_size` in proportion to
    the work loads, rounded as Python rounds (half to even); what rounding leaves
    over goes to the last device, and a share past the batch is cut at its end."""
    total = sum(work_load_list)
    counts = [round(load * batch_size / total) for load in work_load_list]
    if sum(counts) < batch_size:
        counts[-1] += batch_size - sum(counts)
    slices, end = [], 0
    for count in counts:
        begin = min(end, batch_size)
        end = min(begin + count, batch_size)
        if begin >= end:
            raise ShapeError(f"Too many slices: a batch of {batch_size} over work loads "
                             f"{list(work_load_list)} leaves a device no examples (MXNet "
                             "refuses it too); use a larger batch or fewer contexts")
        slices.append(slice(begin, end))
    return slices


def _crop(array: Any, axis: int, part: slice | None) -> Any:
    """`array`'s `part` along `axis` (a view), or `array` itself when that is all of it."""
    if axis < 0 or part is None or (part.start == 0 and part.stop == array.shape[axis]):
        return array
    return array[(slice(None),) * axis + (part,)]


def _merge(per_device: PerDevice, axes: Sequence[int]) -> list[NDArray]:
    """Each entry's arrays joined along its batch axis (the first device's where it has
    none, as MXNet takes it without checking the others)."""
    return [arrays[0] if axis < 0 or len(arrays) == 1 else nd.concat(*arrays, dim=axis)
            for arrays, axis in zip(per_device, axes, strict=True)]


class DataParallelExecutorGroup:
    """The executors of a module, one per context (see the module docstring). Arguments
    as MXNet's: `workload` has one number per context, `shared_group` is the group of
    another bucket whose parameter, gradient and auxiliary arrays this one runs on."""

    def __init__(self, symbol: Symbol, contexts: Sequence[Context], workload: Sequence[float],
                 data_shapes: Sequence[DataDesc], label_shapes: Sequence[DataDesc] | None,
                 param_names: Sequence[str], for_training: bool, inputs_need_grad: bool,
                 shared_group: DataParallelExecutorGroup | None = None,
                 fixed_param_names: Sequence[str] = (), grad_req: Any = "write",
                 state_names: Sequence[str] = ()) -> None:
        self.symbol = symbol
        self.contexts = list(contexts)
        self.workload = list(workload)
        self.param_names = list(param_names)
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        self.output_names = symbol.list_outputs()
        self.state_names = list(state_names)
        self.fixed_param_names = list(fixed_param_names)
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.output_layouts = [DataDesc.get_batch_axis(symbol[i].attr("__layout__"))
                               for i in range(len(self.output_names))]
        self.grad_req = self._grad_reqs(grad_req if for_training else "null",
                                        [d.name for d in data_shapes])
        self.batch_size: int | None = None
        self.slices: list[slice | None] = []
        self.execs: list[Executor] = []
        self._default_execs: list[Executor] | None = None
        self.data_shapes: list[DataDesc] = []
        self.label_shapes: list[DataDesc] | None = None
        self.data_layouts: list[int] = []
        self.label_layouts: list[int] = []
        # the names update_metric gives the labels: kept by a reshape without label
        # shapes, as MXNet keeps them
        self.label_names: list[str] = []
        self.bind_exec(data_shapes, label_shapes, shared_group)

    def _grad_reqs(self, grad_req: Any, data_names: list[str]) -> dict[str, str]:
        """MXNet's rule: parameters get `grad_req` (fixed ones 'null'), data only with
        `inputs_need_grad`, labels and states 'null'; a list gives every argument's in
        order, a dict overrides those defaults (taken with 'write')."""
        if isinstance(grad_req, (list, tuple)):
            if len(grad_req) != len(self.arg_names):
                raise MinimxError(f"Module.bind: grad_req lists {len(grad_req)} requests for "
                                  f"{len(self.arg_names)} arguments {self.arg_names}")
            return dict(zip(self.arg_names, grad_req, strict=True))
        if not isinstance(grad_req, (str, Mapping)):
            raise MinimxError(f"Module.bind: grad_req must be a str, a list or a dict, got "
                              f"{type(grad_req).__name__}")
        default = grad_req if isinstance(grad_req, str) else "write"
        reqs = {}
        for name in self.arg_names:
            if name in self.param_names:
                reqs[name] = "null" if name in self.fixed_param_names else default
            elif name in data_names:
                reqs[name] = default if self.inputs_need_grad else "null"
            else:
                reqs[name] = "null"
        if isinstance(grad_req, Mapping):
            reqs.update(grad_req)
        return reqs

    # -- binding -------------------------------------------------------------------------
    def decide_slices(self, shapes: Sequence[DataDesc]) -> list[int]:
        """The batch axis of each input; the first with one sets the batch size (and the
        slices), which the others must share."""
        axes = [DataDesc.get_batch_axis(d.layout) for d in shapes]
        for desc, axis in zip(shapes, axes, strict=True):
            if axis < 0:
                continue
            size = desc.shape[axis]
            if self.batch_size is None:
                self.batch_size = size
                self.slices = list(split_input_slice(size, self.workload))
            elif size != self.batch_size:
                raise ShapeError(f"all data must have the same batch size: batch_size = "
                                 f"{self.batch_size}, but {desc.name} has shape {desc.shape}")
        return axes

    def bind_exec(self, data_shapes: Sequence[DataDesc], label_shapes: Sequence[DataDesc] | None,
                  shared_group: DataParallelExecutorGroup | None = None,
                  reshape: bool = False) -> None:
        """Bind an executor per context for its slice of these shapes (with `reshape`,
        reshape the first executors bound instead)."""
        self.batch_size, self.slices = None, [None] * len(self.contexts)
        self.data_layouts = self.decide_slices(data_shapes)
        if label_shapes is not None:
            self.label_layouts = self.decide_slices(label_shapes)
            self.label_names = [d.name for d in label_shapes]
        for i, context in enumerate(self.contexts):
            shapes = self._sliced_shapes(data_shapes, i, self.data_layouts)
            if label_shapes is not None:
                shapes += self._sliced_shapes(label_shapes, i, self.label_layouts)
            if reshape:
                self.execs[i] = self._reshaped(i, shapes)
            else:
                shared = None if shared_group is None else shared_group.execs[i]
                self.execs.append(self._bind_ith_exec(context, shapes, shared))
        self.data_shapes = list(data_shapes)
        self.label_shapes = None if label_shapes is None else list(label_shapes)

    def _sliced_shapes(self, shapes: Sequence[DataDesc], i: int, axes: list[int]
                       ) -> list[DataDesc]:
        sliced = []
        for desc, axis in zip(shapes, axes, strict=True):
            shape = list(desc.shape)
            part = self.slices[i]
            if axis >= 0 and part is not None:
                shape[axis] = part.stop - part.start
            sliced.append(DataDesc(desc.name, tuple(shape), desc.dtype, desc.layout))
        return sliced

    def _bind_ith_exec(self, context: Context, shapes: list[DataDesc],
                       shared: Executor | None) -> Executor:
        if shared is None:
            return simple_bind(self.symbol, context, grad_req=self.grad_req,
                               type_dict={d.name: d.dtype for d in shapes},
                               shapes={d.name: d.shape for d in shapes})
        return self._bind_shared(context, shapes, shared)

    def _bind_shared(self, context: Context, shapes: list[DataDesc],
                     shared: Executor) -> Executor:
        """An executor whose parameters, their gradients and the auxiliary states are
        `shared`'s arrays (MXNet's ``shared_module``: a bucket's module trains the
        default bucket's parameters); data and labels get arrays of their own."""
        sym = self.symbol
        arg_shapes, _, aux_shapes = sym.infer_shape(**{d.name: d.shape for d in shapes})
        arg_types, _, _ = sym.infer_type(**{d.name: d.dtype for d in shapes})
        args, grads = {}, {}
        for name, shape, dtype in zip(self.arg_names, arg_shapes, arg_types, strict=True):
            needs_grad = self.grad_req.get(name, "null") != "null"
            if name in self.param_names:
                args[name] = _shared_array(shared.arg_dict, name, shape, "parameter")
                if needs_grad:
                    grads[name] = _shared_array(shared.grad_dict, name, shape, "gradient")
            else:
                args[name] = zeros(shape, context, dtype)
                if needs_grad:
                    grads[name] = zeros(shape, context, dtype)
        aux = {name: _shared_array(shared.aux_dict, name, shape, "auxiliary state")
               for name, shape in zip(self.aux_names, aux_shapes, strict=True)}
        return bind(sym, context, args, grads, self.grad_req, aux)

    def _reshaped(self, i: int, shapes: list[DataDesc]) -> Executor:
        if self._default_execs is None:
            self._default_execs = list(self.execs)
        new = self._default_execs[i].reshape(partial_shaping=True, allow_up_sizing=True,
                                             **{d.name: d.shape for d in shapes})
        # A monitor installed after the first reshape watches the new executor too.
        watched = self.execs[i]._monitor_callback
        if watched is not None:
            new.set_monitor_callback(*watched)
        return new

    def reshape(self, data_shapes: Sequence[DataDesc],
                label_shapes: Sequence[DataDesc] | None) -> None:
        """Reshape every executor (from the first ones bound) for new input shapes; the
        reshaped executors keep the monitor's callback, and the monitor keeps reading
        the arguments of the ones it was installed on (which the new ones share), as
        in MXNet."""
        labels = None if label_shapes is None else list(label_shapes)
        if list(data_shapes) == self.data_shapes and labels == self.label_shapes:
            return
        self.bind_exec(data_shapes, label_shapes, reshape=True)

    # -- the arrays of every context, by name (MXNet's attributes) ------------------------
    def _per_device(self, names: Sequence[str], attribute: str) -> list[list[Any]]:
        by_name = [getattr(e, attribute) for e in self.execs]   # each a dict made anew
        return [[arrays[name] for arrays in by_name] for name in names]

    @property
    def param_arrays(self) -> PerDevice:
        return self._per_device(self.param_names, "arg_dict")

    @property
    def grad_arrays(self) -> PerDevice | None:
        """Each parameter's gradient on every context (None where it has none; the whole
        is None when not bound for training)."""
        return self._per_device(self.param_names, "grad_dict") if self.for_training else None

    @property
    def aux_arrays(self) -> PerDevice:
        return self._per_device(self.aux_names, "aux_dict")

    @property
    def state_arrays(self) -> PerDevice:
        return self._per_device(self.state_names, "arg_dict")

    @property
    def input_grad_arrays(self) -> PerDevice | None:
        if not self.inputs_need_grad:
            return None
        names = [d.name for d in self.data_shapes if d.name in self.arg_names]
        return self._per_device(names, "grad_dict")

    @property
    def data_arrays(self) -> list[list[tuple[slice | None, NDArray]]]:
        """Each data input's (slice, array) on every context, as MXNet's."""
        return [list(zip(self.slices, arrays, strict=True))
                for arrays in self._per_device([d.name for d in self.data_shapes], "arg_dict")]

    @property
    def label_arrays(self) -> list[list[tuple[slice | None, NDArray]]] | None:
        if self.label_shapes is None:
            return None
        return [list(zip(self.slices, arrays, strict=True))
                for arrays in self._per_device([d.name for d in self.label_shapes], "arg_dict")]

    # -- parameters ----------------------------------------------------------------------
    def set_params(self, arg_params: Mapping[str, NDArray], aux_params: Mapping[str, NDArray],
                   allow_extra: bool = False) -> None:
        """Copy the parameters into every executor."""
        for executor in self.execs:
            executor.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)

    def get_params(self, arg_params: Mapping[str, NDArray],
                   aux_params: Mapping[str, NDArray]) -> None:
        """Copy into `arg_params` / `aux_params` each array's mean over the contexts
        (summed in context order, then divided, as MXNet's)."""
        for names, per_device, targets in ((self.param_names, self.param_arrays, arg_params),
                                           (self.aux_names, self.aux_arrays, aux_params)):
            for name, arrays in zip(names, per_device, strict=True):
                mean = sum(arrays[1:], arrays[0]) / len(arrays)
                mean.astype(targets[name].dtype).copyto(targets[name])

    # -- running -------------------------------------------------------------------------
    def _inputs(self, data_batch: Any) -> list[dict[str, Any]]:
        """What each executor's forward copies in: its slice of the batch's data (and
        labels, when bound with labels and the batch has some); from a list of
        batches, one per context, each whole."""
        batches = data_batch if isinstance(data_batch, list) else [data_batch] * len(self.execs)
        if len(batches) != len(self.execs):
            raise MinimxError(f"Module.forward: {len(batches)} batches for {len(self.execs)} "
                              "contexts (a list of batches gives one to each)")
        inputs = []
        for batch, part in zip(batches, self.slices, strict=True):
            whole = None if isinstance(data_batch, list) else part
            fed = [(self.data_shapes, self.data_layouts, batch.data)]
            labels = getattr(batch, "label", None)
            if self.label_shapes is not None and labels:
                fed.append((self.label_shapes, self.label_layouts, labels))
            inputs.append({d.name: _crop(array, axis, whole)
                           for descs, axes, arrays in fed
                           for d, axis, array in zip(descs, axes, arrays, strict=False)})
        return inputs

    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        """Load each context's slice of `data_batch` (a batch, or a list of one batch
        per context) and run every executor."""
        train = self.for_training if is_train is None else is_train
        for executor, inputs in zip(self.execs, self._inputs(data_batch), strict=True):
            executor.forward(is_train=train, **inputs)

    def backward(self, out_grads: Any = None) -> None:
        """Backward on every context, each from its slice of `out_grads` (an NDArray,
        a list by output, or a dict by output name)."""
        if not self.for_training:
            raise MinimxError("Module.backward: re-bind with for_training=True to run backward")
        if isinstance(out_grads, NDArray):
            out_grads = [out_grads]
        elif isinstance(out_grads, Mapping):
            out_grads = [out_grads.get(name) for name in self.output_names]
        for executor, part in zip(self.execs, self.slices, strict=True):
            executor.backward([None if grad is None else _crop(grad, axis, part)
                               for grad, axis in zip(out_grads or [], self.output_layouts,
                                                     strict=False)])

    def get_outputs(self, merge_multi_context: bool = True, begin: int = 0,
                    end: int | None = None) -> list[Any]:
        """Outputs `begin` .. `end` - 1: merged, or per output a list of every
        context's."""
        stop = len(self.output_names) if end is None else end
        outputs = [[e.outputs[i] for e in self.execs] for i in range(begin, stop)]
        return _merge(outputs, self.output_layouts[begin:stop]) if merge_multi_context \
            else outputs

    def get_output_shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        """Each output's merged shape: along its batch axis, the contexts' summed."""
        shapes = []
        for i, (name, axis) in enumerate(zip(self.output_names, self.output_layouts,
                                             strict=True)):
            shape = list(self.execs[0].outputs[i].shape)
            if axis >= 0:
                shape[axis] = sum(e.outputs[i].shape[axis] for e in self.execs)
            shapes.append((name, tuple(shape)))
        return shapes

    def get_input_grads(self, merge_multi_context: bool = True) -> list[Any]:
        grads = self.input_grad_arrays
        if grads is None:
            raise MinimxError("get_input_grads: bind with inputs_need_grad=True first")
        return _merge(grads, self.data_layouts) if merge_multi_context else grads

    def get_states(self, merge_multi_context: bool = True) -> PerDevice:
        if merge_multi_context:
            raise MinimxError("get_states: merge_multi_context=True is not supported (MXNet "
                              "neither): pass merge_multi_context=False for every context's")
        return self.state_arrays

    def set_states(self, states: Sequence[Sequence[NDArray]] | None = None,
                   value: float | None = None) -> None:
        """Copy in `states` (per state, every context's array) or fill every state
        with `value`; exactly one of the two."""
        if (states is None) == (value is None):
            raise MinimxError("set_states: give exactly one of states and value")
        if value is not None:
            if not isinstance(value, Real):
                raise MinimxError(f"set_states: value must be a number, got {value!r}")
            for arrays in self.state_arrays:
                for array in arrays:
                    array[:] = value
            return
        for given, arrays in zip(states or [], self.state_arrays, strict=True):
            for source, target in zip(given, arrays, strict=True):
                source.copyto(target)

    def update_metric(self, eval_metric: EvalMetric, labels: Sequence[Any] | None,
                      pre_sliced: bool = False) -> None:
        """Update `eval_metric` context by context: each one's outputs with its slice
        of `labels` (or, `pre_sliced`, ``labels[i]``)."""
        for i, (executor, part) in enumerate(zip(self.execs, self.slices, strict=True)):
            if pre_sliced:
                mine = list(labels[i]) if labels else []
            else:
                mine = [_crop(label, axis, part)
                        for label, axis in zip(labels or [], self.label_layouts, strict=False)]
            eval_metric.update_dict(OrderedDict(zip(self.label_names, mine, strict=False)),
                                    OrderedDict(zip(self.output_names, executor.outputs,
                                                    strict=True)))

    def install_monitor(self, mon: Any) -> None:
        """Have `mon` watch every executor (and, through their callback, those
        `reshape` makes from them later)."""
        for executor in self.execs:
            mon.install(executor)


def _shared_array(arrays: Mapping[str, NDArray | None], name: str, shape: tuple[int, ...],
                  what: str) -> NDArray:
    """`arrays[name]`, checked to exist with `shape`."""
    array = arrays.get(name)
    if array is None:
        raise MinimxError(f"Module.bind: {what} {name!r} is not in the shared module "
                          f"(a bucket's parameters must be the default bucket's)")
    if array.shape != tuple(shape):
        raise ShapeError(f"Module.bind: {what} {name!r} has shape {tuple(shape)} here but "
                         f"{array.shape} in the shared module")
    return array
