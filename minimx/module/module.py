"""`Module`: a symbol bound on one or more CPU contexts, with its parameters and
optimizer - MXNet 1.x's `mx.mod.Module` for scripts that use it unchanged.

The module keeps its own copies of the parameters (`get_params` gives them,
the mean over the contexts, synchronized after updates) and one executor per
context made by `simple_bind` (`executor_group.DataParallelExecutorGroup`), so a
bind honours MINIMX_SUBGRAPH_BACKEND as any bind does: ``bind(for_training=False)``
runs through the DNNL backend when it is chosen. A batch whose shapes differ from
the bound ones reshapes the executors, as in MXNet. Over several contexts each
takes its slice of every batch, and the module updates as MXNet's does: a 'local'
kvstore (made for it) sums the contexts' gradients, runs the optimizer once on the
sum and gives every context the new weights. Distributed kvstores, `group2ctxs`
and gradient compression are refused.

>>> import minimx as mx, numpy as np
>>> net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc")
>>> mod = mx.mod.Module(net, label_names=None)
>>> mod.bind(data_shapes=[("data", (1, 3))], for_training=False)
>>> mod.init_params(mx.init.One())
>>> mod.forward(mx.io.DataBatch([mx.nd.ones((1, 3))]))
>>> mod.get_outputs()[0].asnumpy().tolist()
[[3.0, 3.0]]
"""
from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from numbers import Real
from typing import Any

from .. import optimizer as opt
from ..base import MinimxError, warn_user
from ..context import Context, cpu
from ..initializer import InitDesc
from ..io import DataDesc
from ..kvstore import KVStore
from ..kvstore import create as create_store
from ..metric import EvalMetric
from ..model import load_checkpoint
from ..ndarray import NDArray, zeros
from ..symbol import Symbol
from .base_module import DEFAULT_INIT, BaseModule, ShapesArg, check_input_names, parse_data_desc
from .executor_group import DataParallelExecutorGroup

# MXNet's 'local' store leaves updates to the devices when a parameter is this large.
KVSTORE_UPDATE_LIMIT = 1024 * 1024 * 16


class Module(BaseModule):
    """A symbol with named data and label inputs; its other arguments are parameters
    (those in `fixed_param_names` are not updated)."""

    def __init__(self, symbol: Symbol, data_names: Sequence[str] | None = ("data",),
                 label_names: Sequence[str] | None = ("softmax_label",),
                 logger: Any = logging, context: Context | Sequence[Context] | None = None,
                 work_load_list: Any = None, fixed_param_names: Sequence[str] | None = None,
                 state_names: Sequence[str] | None = None, group2ctxs: Any = None,
                 compression_params: Any = None) -> None:
        super().__init__(logger=logger)
        self._context, self._work_load_list = as_contexts(context, work_load_list, group2ctxs,
                                                          compression_params)
        self._symbol = symbol
        self._data_names = list(data_names or [])
        self._label_names = list(label_names or [])
        self._state_names = list(state_names or [])
        self._fixed_param_names = list(fixed_param_names or [])
        check_input_names(symbol, self._data_names, "data", True)
        check_input_names(symbol, self._label_names, "label", False)
        check_input_names(symbol, self._state_names, "state", True)
        check_input_names(symbol, self._fixed_param_names, "fixed_param", True)
        inputs = set(self._data_names + self._label_names + self._state_names)
        self._param_names = [n for n in symbol.list_arguments() if n not in inputs]
        self._aux_names = symbol.list_auxiliary_states()
        self._output_names = symbol.list_outputs()
        self._arg_params: dict[str, NDArray] | None = None
        self._aux_params: dict[str, NDArray] | None = None
        self._params_dirty = False
        self._optimizer: opt.Optimizer | None = None
        self._updater: opt.Updater | None = None
        self._kvstore: KVStore | None = None
        self._update_on_kvstore = False
        self._preload_opt_states: str | None = None
        self._exec_group: DataParallelExecutorGroup | None = None
        self._data_shapes: list[DataDesc] | None = None
        self._label_shapes: list[DataDesc] | None = None

    # -- checkpoints ---------------------------------------------------------------------
    @staticmethod
    def load(prefix: str, epoch: int, load_optimizer_states: bool = False,
             **kwargs: Any) -> Module:
        """A module of the checkpoint ``prefix-symbol.json`` / ``prefix-%04d.params``
        (and its optimizer states, restored by `init_optimizer`); bind it next."""
        sym, args, auxs = load_checkpoint(prefix, epoch)
        mod = Module(symbol=sym, **kwargs)
        mod._arg_params = args
        mod._aux_params = auxs
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = f"{prefix}-{epoch:04d}.states"
        return mod

    def save_checkpoint(self, prefix: str, epoch: int, save_optimizer_states: bool = False,
                        remove_amp_cast: bool = True) -> None:
        """Write ``prefix-symbol.json``, ``prefix-%04d.params`` and, if asked,
        ``prefix-%04d.states``."""
        self._require("save_checkpoint", "params_initialized")
        self._symbol_or_fail().save(f"{prefix}-symbol.json")
        param_name = f"{prefix}-{epoch:04d}.params"
        self.save_params(param_name)
        logging.info('Saved checkpoint to "%s"', param_name)
        if save_optimizer_states:
            state_name = f"{prefix}-{epoch:04d}.states"
            self.save_optimizer_states(state_name)
            logging.info('Saved optimizer state to "%s"', state_name)

    def save_optimizer_states(self, fname: str) -> None:
        """Write the optimizer's states (momenta, moments) by parameter. As in MXNet,
        not the optimizer itself: its update counts (Adam's bias correction, a
        scheduler's position) start again when a loaded module trains on; pass
        `begin_num_update` to the optimizer to continue a schedule."""
        if self._update_on_kvstore and self._kvstore is not None:
            self._kvstore.save_optimizer_states(fname)
            return
        with open(fname, "wb") as f:
            f.write(self._updater_or_fail("save_optimizer_states").get_states())

    def load_optimizer_states(self, fname: str) -> None:
        if self._update_on_kvstore and self._kvstore is not None:
            self._kvstore.load_optimizer_states(fname)
            return
        with open(fname, "rb") as f:
            self._updater_or_fail("load_optimizer_states").set_states(f.read())

    # -- names and shapes ----------------------------------------------------------------
    @property
    def data_names(self) -> list[str]:
        return self._data_names

    @property
    def label_names(self) -> list[str]:
        return self._label_names

    @property
    def output_names(self) -> list[str]:
        return self._output_names

    @property
    def data_shapes(self) -> list[DataDesc]:
        self._require("data_shapes", "binded")
        return list(self._data_shapes or [])

    @property
    def label_shapes(self) -> list[DataDesc] | None:
        self._require("label_shapes", "binded")
        return self._label_shapes

    @property
    def output_shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        return self._group("output_shapes").get_output_shapes()

    # -- parameters ----------------------------------------------------------------------
    def get_params(self) -> tuple[dict[str, NDArray], dict[str, NDArray]]:
        """(arg_params, aux_params): the module's copies, brought up to date (each the
        mean of the contexts' arrays)."""
        self._require("get_params", "params_initialized")
        if self._params_dirty:
            self._sync_params_from_devices()
        return dict(self._arg_params or {}), dict(self._aux_params or {})

    def init_params(self, initializer: Any = DEFAULT_INIT, arg_params: dict | None = None,
                    aux_params: dict | None = None, allow_missing: bool = False,
                    force_init: bool = False, allow_extra: bool = False) -> None:
        """Parameters from `arg_params` / `aux_params` where given, else from
        `initializer` (called with an `InitDesc` carrying the symbol's attributes)."""
        if self.params_initialized and not force_init:
            warn_user("Parameters already initialized and force_init=False. "
                      "init_params call ignored.")
            return
        self._require("init_params", "binded")
        attrs = self._symbol_or_fail().attr_dict()
        for own, given in ((self._arg_params or {}, arg_params),
                           (self._aux_params or {}, aux_params)):
            for name, arr in sorted(own.items()):
                desc = InitDesc(name, attrs.get(name))
                if given is not None and name in given:
                    if given[name] is not arr:
                        given[name].copyto(arr)
                elif given is not None and not allow_missing:
                    raise MinimxError(f"init_params: {name} is not presented (pass "
                                      "allow_missing=True to initialize it)")
                elif initializer is not None:
                    initializer(desc, arr)
        self.params_initialized = True
        self._params_dirty = False
        self._group("init_params").set_params(self._arg_params or {}, self._aux_params or {},
                                              allow_extra=allow_extra)

    def _set_some_params(self, arg_params: dict[str, NDArray], aux_params: dict[str, NDArray],
                         allow_extra: bool) -> None:
        self._group("set_params").set_params(arg_params, aux_params, allow_extra=allow_extra)
        self._params_dirty = True

    def _sync_params_from_devices(self) -> None:
        self._group("get_params").get_params(self._arg_params or {}, self._aux_params or {})
        self._params_dirty = False

    # -- binding -------------------------------------------------------------------------
    def bind(self, data_shapes: ShapesArg, label_shapes: ShapesArg | None = None,
             for_training: bool = True, inputs_need_grad: bool = False,
             force_rebind: bool = False, shared_module: Any = None,
             grad_req: Any = "write") -> None:
        """Make an executor per context for its slice of these input shapes (with
        gradient arrays when `for_training`). With `shared_module` (a bound Module
        with parameters, on at least as many contexts) the executors run on its
        parameter, gradient and auxiliary arrays, and its optimizer."""
        if force_rebind:
            self.binded, self._exec_group = False, None
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if inputs_need_grad and not for_training:
            raise MinimxError("Module.bind: inputs_need_grad=True needs for_training=True")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._data_shapes, self._label_shapes = parse_data_desc(
            self._data_names, self._label_names, data_shapes, label_shapes)
        shared_group = None if shared_module is None else \
            _sharable(shared_module, len(self._context))
        group = DataParallelExecutorGroup(
            self._symbol_or_fail(), self._context, self._work_load_list, self._data_shapes,
            self._label_shapes, self._param_names, for_training, inputs_need_grad,
            shared_group, fixed_param_names=self._fixed_param_names, grad_req=grad_req,
            state_names=self._state_names)
        self._exec_group = group
        if shared_module is not None:
            self._arg_params = shared_module._arg_params
            self._aux_params = shared_module._aux_params
            self.params_initialized = True
            if shared_module.optimizer_initialized:
                self.borrow_optimizer(shared_module)
        elif self.params_initialized:
            group.set_params(self._arg_params or {}, self._aux_params or {})
        else:
            self._arg_params = {n: zeros(a[0].shape, dtype=a[0].dtype)
                                for n, a in zip(self._param_names, group.param_arrays,
                                                strict=True)}
            self._aux_params = {n: zeros(a[0].shape, dtype=a[0].dtype)
                                for n, a in zip(self._aux_names, group.aux_arrays, strict=True)}
        self.binded = True

    def borrow_optimizer(self, shared_module: Module) -> None:
        """Use `shared_module`'s optimizer, updater and kvstore (one set of optimizer
        states for the parameters the modules share)."""
        if not shared_module.optimizer_initialized:
            raise MinimxError("Module.borrow_optimizer: the shared module has no optimizer "
                              "(call its init_optimizer first)")
        self._optimizer = shared_module._optimizer
        self._updater = shared_module._updater
        self._kvstore = shared_module._kvstore
        self._update_on_kvstore = shared_module._update_on_kvstore
        self.optimizer_initialized = True

    def install_monitor(self, mon: Any) -> None:
        """Have `mon` (an ``mx.mon.Monitor``) watch every executor, and the executors
        `reshape` makes later."""
        self._group("install_monitor").install_monitor(mon)

    def reshape(self, data_shapes: ShapesArg, label_shapes: ShapesArg | None = None) -> None:
        """Reshape the executors for new input shapes, sharing the parameter arrays."""
        group = self._group("reshape")
        self._data_shapes, self._label_shapes = parse_data_desc(
            self._data_names, self._label_names, data_shapes, label_shapes)
        group.reshape(self._data_shapes, self._label_shapes)

    # -- the optimizer -------------------------------------------------------------------
    def init_optimizer(self, kvstore: Any = "local", optimizer: Any = "sgd",
                       optimizer_params: Any = (("learning_rate", 0.01),),
                       force_init: bool = False) -> None:
        """The optimizer (a name with `optimizer_params`, or an Optimizer), with
        ``rescale_grad = 1 / batch_size`` unless given, and the kvstore as MXNet
        chooses it (`_create_kvstore`): none for a name on one context, else a store
        of that name, or the store given (`mx.kv.create`). With a store the module
        updates through it: the store holds each parameter and the optimizer, and
        each update pushes the contexts' gradients (summed) and pulls the weight."""
        self._require("init_optimizer", "binded", "params_initialized")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring...")
            return
        if self._params_dirty:
            self._sync_params_from_devices()
        group = self._group("init_optimizer")
        store, update_on_kvstore = _create_kvstore(kvstore, len(self._context),
                                                   self._arg_params or {})
        if group.batch_size is None:
            raise MinimxError("init_optimizer: no input has a batch axis (layouts without "
                              "'N'), so rescale_grad = 1 / batch size is undefined")
        rescale_grad = 1.0 / group.batch_size
        devices = 1 if update_on_kvstore else len(self._context)
        # Updated on the devices, each device's copy of a parameter is an index of its own.
        idx2name = {i * devices + k: name for i, name in enumerate(self._param_names)
                    for k in range(devices)}
        if isinstance(optimizer, str):
            params = dict(optimizer_params)
            params.setdefault("rescale_grad", rescale_grad)
            optimizer = opt.create(optimizer, sym=self.symbol, param_idx2name=idx2name, **params)
        elif isinstance(optimizer, opt.Optimizer):
            if optimizer.rescale_grad != rescale_grad:
                warn_user(f"Optimizer created manually outside Module but rescale_grad is not "
                          f"normalized to 1.0/batch_size ({optimizer.rescale_grad} vs. "
                          f"{rescale_grad}). Is this intended?")
            if not optimizer.idx2name:
                optimizer.idx2name = idx2name
        else:
            raise MinimxError(f"init_optimizer: optimizer must be a name or an Optimizer, got "
                              f"{type(optimizer).__name__}")
        self._optimizer, self._kvstore = optimizer, store
        self._update_on_kvstore = update_on_kvstore
        self._updater = None if update_on_kvstore else opt.get_updater(optimizer)
        if store is not None:
            if update_on_kvstore:
                store.set_optimizer(optimizer)
            self._initialize_kvstore(store, group)
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def _initialize_kvstore(self, store: KVStore, group: DataParallelExecutorGroup) -> None:
        """Put every parameter into the store under its name; when the store updates,
        pull it back into every context (MXNet's broadcast)."""
        for name, arrays in zip(self._param_names, group.param_arrays, strict=True):
            value = (self._arg_params or {})[name]
            if self._update_on_kvstore:
                store.broadcast(name, value, out=arrays)
            else:
                store.init(name, value)

    # -- running -------------------------------------------------------------------------
    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        """Run a batch (anything with `.data`, and `.label` to feed the labels; or a
        list of such batches, one per context), each context its slice; a batch of
        other shapes than the bound ones reshapes the module first."""
        self._require("forward", "binded", "params_initialized")
        shapes = _batch_data_shapes(data_batch)
        if shapes != tuple(d.shape for d in self.data_shapes):
            self.reshape(*self._batch_shapes(data_batch, shapes))
        self._group("forward").forward(data_batch, is_train)

    def _batch_shapes(self, batch: Any, shapes: tuple[tuple[int, ...], ...]
                      ) -> tuple[list[DataDesc], list[DataDesc] | None]:
        """The shapes a batch brings (its provide_data / provide_label if it has them)."""
        new_data = getattr(batch, "provide_data", None) or [
            DataDesc(d.name, shape, d.dtype, d.layout)
            for d, shape in zip(self.data_shapes, shapes, strict=True)]
        labels = getattr(batch, "label", None) or []
        new_label = getattr(batch, "provide_label", None) or (
            [DataDesc(d.name, arr.shape, d.dtype, d.layout)
             for d, arr in zip(self._label_shapes or [], labels, strict=False)] or None)
        return new_data, new_label

    def backward(self, out_grads: Any = None) -> None:
        """Backward on every context, each from its slice of `out_grads`."""
        self._require("backward", "binded", "params_initialized")
        self._group("backward").backward(out_grads)

    def update(self) -> None:
        """One optimizer step for every parameter that has a gradient: through the
        store (the contexts' gradients summed, the weight pulled back into each), or
        on every context by the updater (after the store, if any, summed them)."""
        self._require("update", "binded", "params_initialized", "optimizer_initialized")
        self._params_dirty = True
        group = self._group("update")
        if group.grad_arrays is None:
            raise MinimxError("Module.update: bind with for_training=True to have gradients")
        devices = len(self._context)
        updates: list[list[tuple[int, NDArray, NDArray]]] = [[] for _ in range(devices)]
        for index, (name, weights, grads) in enumerate(zip(
                self._param_names, group.param_arrays, group.grad_arrays, strict=True)):
            if grads[0] is None:
                continue
            if self._kvstore is not None and self._update_on_kvstore:
                self._kvstore.pushpull(name, grads, out=weights, priority=-index)
                continue
            if self._kvstore is not None:
                self._kvstore.pushpull(name, grads, priority=-index)
            for k, (weight, grad) in enumerate(zip(weights, grads, strict=True)):
                updates[k].append((index * devices + k, grad, weight))
        for device_updates in updates:
            if device_updates:
                indices, grads_, weights_ = zip(*device_updates, strict=True)
                self._updater_or_fail("update")(list(indices), list(grads_), list(weights_))

    def get_outputs(self, merge_multi_context: bool = True) -> list[Any]:
        """The outputs of the last forward: merged along their batch axis, or, without
        `merge_multi_context`, per output a list of every context's."""
        self._require("get_outputs", "binded", "params_initialized")
        return self._group("get_outputs").get_outputs(merge_multi_context)

    def get_input_grads(self, merge_multi_context: bool = True) -> list[Any]:
        self._require("get_input_grads", "binded", "params_initialized")
        return self._group("get_input_grads").get_input_grads(merge_multi_context)

    def get_states(self, merge_multi_context: bool = True) -> list[list[NDArray]]:
        """The state inputs (`state_names`), per state every context's array; as in
        MXNet only with ``merge_multi_context=False``."""
        self._require("get_states", "binded", "params_initialized")
        return self._group("get_states").get_states(merge_multi_context)

    def set_states(self, states: Sequence[Sequence[NDArray]] | None = None,
                   value: float | None = None) -> None:
        """Set the state inputs: `states` per state every context's array, or all to
        `value`."""
        self._require("set_states", "binded", "params_initialized")
        self._group("set_states").set_states(states, value)

    def update_metric(self, eval_metric: EvalMetric, labels: Sequence[Any] | None,
                      pre_sliced: bool = False) -> None:
        """Add this batch's outputs and `labels` to `eval_metric`, context by context
        (`pre_sliced`: `labels` holds every context's list)."""
        self._group("update_metric").update_metric(eval_metric, labels, pre_sliced)

    def prepare(self, data_batch: Any, sparse_row_id_fn: Any = None) -> None:
        """Nothing to prepare: no parameter is sparse."""

    # -- helpers -------------------------------------------------------------------------
    def _group(self, what: str) -> DataParallelExecutorGroup:
        if self._exec_group is None:
            raise MinimxError(f"Module.{what}: call bind first")
        return self._exec_group

    def _updater_or_fail(self, what: str) -> opt.Updater:
        if self._updater is None:
            raise MinimxError(f"Module.{what}: call init_optimizer first")
        return self._updater

    def _symbol_or_fail(self) -> Symbol:
        if self._symbol is None:
            raise MinimxError("Module: no symbol")
        return self._symbol


def _batch_data_shapes(data_batch: Any) -> tuple[tuple[int, ...], ...]:
    """The data shapes of a batch; of a list of batches (one per context, all alike),
    the shapes they make together."""
    if not isinstance(data_batch, list):
        return tuple(tuple(d.shape) for d in data_batch.data)
    if not data_batch:
        raise MinimxError("Module.forward: an empty list of batches")
    shapes = [tuple(tuple(d.shape) for d in batch.data) for batch in data_batch]
    if len(set(shapes)) != 1:
        raise MinimxError(f"Module.forward: all data batches in a list need to have the same "
                          f"shape, got {shapes}")
    return tuple((len(data_batch) * shape[0], *shape[1:]) for shape in shapes[0])


def _create_kvstore(kvstore: Any, devices: int, arg_params: dict[str, NDArray]
                    ) -> tuple[KVStore | None, bool]:
    """(the store, whether it runs the optimizer), as MXNet's `_create_kvstore`: a name
    makes a store only for several devices (or a distributed name, refused here); a
    'local' store leaves the updates to the devices when a parameter has more than
    `KVSTORE_UPDATE_LIMIT` values."""
    update_on_kvstore = True
    if kvstore is None or isinstance(kvstore, KVStore):
        store = kvstore
    elif isinstance(kvstore, str):
        store = None
        if devices > 1 or "dist" in kvstore:
            store = create_store(kvstore)
            if kvstore == "local" and max(
                    (math.prod(a.shape) for a in arg_params.values()), default=0
            ) > KVSTORE_UPDATE_LIMIT:
                update_on_kvstore = False
    else:
        raise MinimxError(f"init_optimizer: kvstore must be a KVStore, a str or None, got "
                          f"{type(kvstore).__name__}")
    return store, store is not None and update_on_kvstore and store.is_capable("optimizer")


def _sharable(module: Any, devices: int) -> DataParallelExecutorGroup:
    """The executor group of `module`, a bound Module with parameters on at least
    `devices` contexts, to share arrays with."""
    if not isinstance(module, Module) or not module.binded or not module.params_initialized:
        raise MinimxError(f"Module.bind: shared_module must be a bound Module with initialized "
                          f"parameters, got {module!r}")
    group = module._group("bind")
    if len(group.execs) < devices:
        raise MinimxError(f"Module.bind: shared_module runs on {len(group.execs)} contexts, "
                          f"fewer than this module's {devices}")
    return group


def as_contexts(context: Context | Sequence[Context] | None, work_load_list: Any = None,
                group2ctxs: Any = None, compression_params: Any = None
                ) -> tuple[list[Context], list[float]]:
    """The CPU contexts a module runs on (cpu() for None) and their work loads (all 1
    for None). `group2ctxs` (model parallelism) and `compression_params` (for
    'device' and distributed stores) are refused."""
    if group2ctxs or compression_params:
        raise MinimxError("Module: group2ctxs and compression_params are not supported: "
                          "minimx runs a module data-parallel over CPU contexts, with a "
                          "'local' kvstore and without gradient compression")
    context = cpu() if context is None else context
    contexts = [context] if isinstance(context, Context) else list(context)
    if not contexts or not all(isinstance(c, Context) for c in contexts):
        raise MinimxError(f"Module: context={context!r}: give a Context or a non-empty list "
                          "of Contexts (mx.cpu(i))")
    loads = [1] * len(contexts) if work_load_list is None else list(work_load_list)
    if len(loads) != len(contexts):
        raise MinimxError(f"Module: work_load_list={work_load_list!r} has {len(loads)} entries "
                          f"for {len(contexts)} contexts")
    if not all(isinstance(w, Real) and 0 <= float(w) < math.inf for w in loads) or \
            sum(float(w) for w in loads) <= 0:
        raise MinimxError(f"Module: work_load_list={work_load_list!r}: the work loads must be "
                          "finite numbers >= 0, not all 0")
    return contexts, loads

