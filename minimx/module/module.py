"""`Module`: a symbol, bound once to one CPU context, with its parameters and
optimizer - MXNet 1.x's `mx.mod.Module` for scripts that use it unchanged.

The module keeps its own copies of the parameters (`get_params` gives them,
synchronized from the executor after updates) and one executor made by
`simple_bind`, so a bind honours MINIMX_SUBGRAPH_BACKEND as any bind does:
``bind(for_training=False)`` runs through the DNNL backend when it is chosen.
A batch whose shapes differ from the bound ones reshapes the executor, as in
MXNet. Where MXNet would spread work over devices or use a kvstore, a module
here runs on one CPU context and refuses anything else.

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
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from .. import optimizer as opt
from ..base import MinimxError, ShapeError, warn_user
from ..context import Context, cpu
from ..executor import Executor, bind, simple_bind
from ..initializer import InitDesc
from ..io import DataDesc
from ..kvstore import KVStore
from ..metric import EvalMetric
from ..model import load_checkpoint
from ..ndarray import NDArray, zeros
from ..symbol import Symbol
from .base_module import DEFAULT_INIT, BaseModule, ShapesArg, check_input_names, parse_data_desc

LOCAL_KVSTORES = (None, "local", "device")


class ExecutorGroup(NamedTuple):
    """MXNet's ``DataParallelExecutorGroup`` as far as scripts read it: the executors
    of the module's devices (one, the CPU's)."""

    execs: list[Executor]


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
        self._context = one_device(context, group2ctxs, compression_params)
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
        self._preload_opt_states: str | None = None
        self._exec: Executor | None = None
        self._monitor: Any = None
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
        if self._kvstore is not None:
            self._kvstore.save_optimizer_states(fname)
            return
        with open(fname, "wb") as f:
            f.write(self._updater_or_fail("save_optimizer_states").get_states())

    def load_optimizer_states(self, fname: str) -> None:
        if self._kvstore is not None:
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
        executor = self._executor("output_shapes")
        return [(n, o.shape) for n, o in zip(self._output_names, executor.outputs, strict=True)]

    # -- parameters ----------------------------------------------------------------------
    def get_params(self) -> tuple[dict[str, NDArray], dict[str, NDArray]]:
        """(arg_params, aux_params): the module's copies, brought up to date."""
        self._require("get_params", "params_initialized")
        if self._params_dirty:
            self._sync_params_from_executor()
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
        self._executor("init_params").copy_params_from(self._arg_params or {},
                                                       self._aux_params,
                                                       allow_extra_params=allow_extra)

    def _set_some_params(self, arg_params: dict[str, NDArray], aux_params: dict[str, NDArray],
                         allow_extra: bool) -> None:
        self._executor("set_params").copy_params_from(arg_params, aux_params,
                                                      allow_extra_params=allow_extra)
        self._params_dirty = True

    def _sync_params_from_executor(self) -> None:
        executor = self._executor("get_params")
        for own, current in ((self._arg_params, executor.arg_dict),
                             (self._aux_params, executor.aux_dict)):
            for name, arr in (own or {}).items():
                current[name].copyto(arr)
        self._params_dirty = False

    # -- binding -------------------------------------------------------------------------
    def bind(self, data_shapes: ShapesArg, label_shapes: ShapesArg | None = None,
             for_training: bool = True, inputs_need_grad: bool = False,
             force_rebind: bool = False, shared_module: Any = None,
             grad_req: Any = "write") -> None:
        """Make the executor for these input shapes (with gradient arrays when
        `for_training`)."""
        if force_rebind:
            self.binded, self._exec = False, None
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if inputs_need_grad and not for_training:
            raise MinimxError("Module.bind: inputs_need_grad=True needs for_training=True")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._data_shapes, self._label_shapes = parse_data_desc(
            self._data_names, self._label_names, data_shapes, label_shapes)
        if shared_module is not None:
            self._exec = self._bind_shared(grad_req, _sharable(shared_module))
            self._arg_params = shared_module._arg_params
            self._aux_params = shared_module._aux_params
            self.params_initialized = True
            if shared_module.optimizer_initialized:
                self.borrow_optimizer(shared_module)
        else:
            self._exec = self._bind_executor(grad_req)
            if self.params_initialized:
                self._exec.copy_params_from(self._arg_params or {}, self._aux_params)
            else:
                args, auxs = self._exec.arg_dict, self._exec.aux_dict
                self._arg_params = {n: zeros(args[n].shape, dtype=args[n].dtype)
                                    for n in self._param_names}
                self._aux_params = {n: zeros(auxs[n].shape, dtype=auxs[n].dtype)
                                    for n in self._aux_names}
        self.binded = True

    def _bind_shared(self, grad_req: Any, shared: Executor) -> Executor:
        """An executor whose parameters, their gradients and the auxiliary states are
        `shared`'s arrays (MXNet's ``shared_module``: a bucket's module trains the
        default bucket's parameters); data and labels get arrays of their own."""
        sym = self._symbol_or_fail()
        descs = (self._data_shapes or []) + (self._label_shapes or [])
        arg_shapes, _, aux_shapes = sym.infer_shape(**{d.name: d.shape for d in descs})
        arg_types, _, aux_types = sym.infer_type(**{d.name: d.dtype for d in descs})
        reqs = self._grad_reqs(grad_req)
        args, grads = {}, {}
        for name, shape, dtype in zip(sym.list_arguments(), arg_shapes, arg_types, strict=True):
            if name in self._param_names:
                args[name] = _shared_array(shared.arg_dict, name, shape, "parameter")
                if reqs.get(name, "null") != "null":
                    grads[name] = _shared_array(shared.grad_dict, name, shape, "gradient")
            else:
                args[name] = zeros(shape, dtype=dtype)
                if reqs.get(name, "null") != "null":
                    grads[name] = zeros(shape, dtype=dtype)
        aux = {name: _shared_array(shared.aux_dict, name, shape, "auxiliary state")
               for name, shape in zip(sym.list_auxiliary_states(), aux_shapes, strict=True)}
        return bind(sym, self._context, args, grads, reqs, aux)

    def borrow_optimizer(self, shared_module: Module) -> None:
        """Use `shared_module`'s optimizer and updater (one set of optimizer states
        for the parameters the modules share)."""
        if not shared_module.optimizer_initialized:
            raise MinimxError("Module.borrow_optimizer: the shared module has no optimizer "
                              "(call its init_optimizer first)")
        self._optimizer = shared_module._optimizer
        self._updater = shared_module._updater
        self._kvstore = shared_module._kvstore
        self.optimizer_initialized = True

    def install_monitor(self, mon: Any) -> None:
        """Have `mon` (an ``mx.mon.Monitor``) watch this module's executor, and the
        executors `reshape` makes later."""
        mon.install(self._executor("install_monitor"))
        self._monitor = mon

    @property
    def _exec_group(self) -> ExecutorGroup:
        """What MXNet scripts reach into (``mod._exec_group.execs[0]``, for a monitor
        callback such as a calibration collector): minimx binds one executor."""
        return ExecutorGroup([self._executor("_exec_group")])

    def _bind_executor(self, grad_req: Any) -> Executor:
        descs = (self._data_shapes or []) + (self._label_shapes or [])
        shapes = {d.name: d.shape for d in descs}
        types = {d.name: d.dtype for d in descs}
        return simple_bind(self._symbol_or_fail(), self._context,
                           grad_req=self._grad_reqs(grad_req), type_dict=types, shapes=shapes)

    def _grad_reqs(self, grad_req: Any) -> dict[str, str]:
        """MXNet's executor group: parameters get `grad_req` (fixed ones none), data
        inputs only with `inputs_need_grad`, everything else none."""
        if not self.for_training:
            return {}
        if not isinstance(grad_req, str):
            return dict(grad_req)
        reqs = {n: ("null" if n in self._fixed_param_names else grad_req)
                for n in self._param_names}
        if self.inputs_need_grad:
            reqs.update(dict.fromkeys(self._data_names, grad_req))
        return reqs

    def reshape(self, data_shapes: ShapesArg, label_shapes: ShapesArg | None = None) -> None:
        """Rebind for new input shapes, sharing the parameter arrays."""
        executor = self._executor("reshape")
        self._data_shapes, self._label_shapes = parse_data_desc(
            self._data_names, self._label_names, data_shapes, label_shapes)
        descs = self._data_shapes + (self._label_shapes or [])
        self._exec = executor.reshape(partial_shaping=True, allow_up_sizing=True,
                                      **{d.name: d.shape for d in descs})
        if self._monitor is not None:
            self._monitor.install(self._exec)

    # -- the optimizer -------------------------------------------------------------------
    def init_optimizer(self, kvstore: Any = "local", optimizer: Any = "sgd",
                       optimizer_params: Any = (("learning_rate", 0.01),),
                       force_init: bool = False) -> None:
        """The optimizer (a name with `optimizer_params`, or an Optimizer), with
        ``rescale_grad = 1 / batch_size`` unless given. Given a store (`mx.kv.create`),
        the module updates through it, as MXNet does: the store gets the parameters
        and the optimizer, and each update pushes a gradient and pulls the weight."""
        self._require("init_optimizer", "binded", "params_initialized")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring...")
            return
        # A store from mx.kv.create counts by its type ("local": one process, one context).
        if getattr(kvstore, "type", kvstore) not in LOCAL_KVSTORES:
            raise MinimxError(f"init_optimizer: kvstore={kvstore!r} is not supported: minimx "
                              "updates parameters on one CPU context, without a kvstore "
                              "(use 'local' or None)")
        if self._params_dirty:
            self._sync_params_from_executor()
        desc = self.data_shapes[0]
        rescale_grad = 1.0 / desc.shape[max(DataDesc.get_batch_axis(desc.layout), 0)]
        idx2name = dict(enumerate(self._param_names))
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
        self._optimizer = optimizer
        if isinstance(kvstore, KVStore):
            self._updater, self._kvstore = None, kvstore
            self._init_kvstore(kvstore, optimizer)
        else:
            self._updater, self._kvstore = opt.get_updater(optimizer), None
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def _init_kvstore(self, kvstore: KVStore, optimizer: opt.Optimizer) -> None:
        """Put every parameter into `kvstore` under its name (and pull it back, as
        MXNet's broadcast does), then give the store the optimizer."""
        args = self._executor("init_optimizer").arg_dict
        for name in self._param_names:
            kvstore.broadcast(name, (self._arg_params or {})[name], out=args[name])
        kvstore.set_optimizer(optimizer)

    # -- running -------------------------------------------------------------------------
    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        """Run a batch (anything with `.data`, and `.label` to feed the labels); a
        batch of other shapes than the bound ones reshapes the module first."""
        self._require("forward", "binded", "params_initialized")
        data = list(data_batch.data)
        labels = list(getattr(data_batch, "label", None) or [])
        if tuple(d.shape for d in data) != tuple(d.shape for d in self.data_shapes):
            self.reshape(*self._batch_shapes(data_batch, data, labels))
        inputs = {d.name: arr for d, arr in zip(self.data_shapes, data, strict=True)}
        inputs.update((d.name, arr) for d, arr in zip(self._label_shapes or [], labels,
                                                      strict=False))
        train = self.for_training if is_train is None else is_train
        self._executor("forward").forward(is_train=train, **inputs)

    def _batch_shapes(self, batch: Any, data: list[NDArray], labels: list[NDArray]
                      ) -> tuple[list[DataDesc], list[DataDesc] | None]:
        """The shapes a batch brings (its provide_data / provide_label if it has them)."""
        new_data = getattr(batch, "provide_data", None) or [
            DataDesc(d.name, arr.shape, d.dtype, d.layout)
            for d, arr in zip(self.data_shapes, data, strict=True)]
        new_label = getattr(batch, "provide_label", None) or (
            [DataDesc(d.name, arr.shape, d.dtype, d.layout)
             for d, arr in zip(self._label_shapes or [], labels, strict=False)] or None)
        return new_data, new_label

    def backward(self, out_grads: Any = None) -> None:
        self._require("backward", "binded", "params_initialized")
        self._executor("backward").backward(out_grads)

    def update(self) -> None:
        """One optimizer step for every parameter that has a gradient."""
        self._require("update", "binded", "params_initialized", "optimizer_initialized")
        self._params_dirty = True
        grads = self._executor("update").grad_dict
        args = self._executor("update").arg_dict
        for index, name in enumerate(self._param_names):
            grad = grads.get(name)
            if grad is None:
                continue
            if self._kvstore is not None:   # the store updates its copy, then gives it back
                self._kvstore.pushpull(name, grad, out=args[name], priority=-index)
            else:
                self._updater_or_fail("update")(index, grad, args[name])

    def get_outputs(self, merge_multi_context: bool = True) -> list[NDArray]:
        self._require("get_outputs", "binded", "params_initialized")
        return list(self._executor("get_outputs").outputs)

    def get_input_grads(self, merge_multi_context: bool = True) -> list[NDArray]:
        self._require("get_input_grads", "binded", "params_initialized")
        if not self.inputs_need_grad:
            raise MinimxError("get_input_grads: bind with inputs_need_grad=True first")
        grads = self._executor("get_input_grads").grad_dict   # inputs_need_grad: none is None
        return [g for g in (grads[n] for n in self._data_names) if g is not None]

    def update_metric(self, eval_metric: EvalMetric, labels: Sequence[NDArray] | None,
                      pre_sliced: bool = False) -> None:
        """Add this batch's outputs and `labels` to `eval_metric`."""
        names = [d.name for d in self._label_shapes or []]
        eval_metric.update_dict(OrderedDict(zip(names, labels or [], strict=False)),
                                OrderedDict(zip(self._output_names, self.get_outputs(),
                                                strict=True)))

    def prepare(self, data_batch: Any, sparse_row_id_fn: Any = None) -> None:
        """Nothing to prepare: no kvstore holds parameters here."""

    # -- helpers -------------------------------------------------------------------------
    def _executor(self, what: str) -> Executor:
        if self._exec is None:
            raise MinimxError(f"Module.{what}: call bind first")
        return self._exec

    def _updater_or_fail(self, what: str) -> opt.Updater:
        if self._updater is None:
            raise MinimxError(f"Module.{what}: call init_optimizer first")
        return self._updater

    def _symbol_or_fail(self) -> Symbol:
        if self._symbol is None:
            raise MinimxError("Module: no symbol")
        return self._symbol


def _sharable(module: Any) -> Executor:
    """The executor of `module`, a bound Module with parameters, to share arrays with."""
    if not isinstance(module, Module) or not module.binded or not module.params_initialized:
        raise MinimxError(f"Module.bind: shared_module must be a bound Module with initialized "
                          f"parameters, got {module!r}")
    return module._executor("bind")


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


def one_device(context: Context | Sequence[Context] | None, group2ctxs: Any = None,
               compression_params: Any = None) -> Context:
    """The single CPU context a module runs on (cpu() for None); several contexts,
    `group2ctxs` and `compression_params` are refused."""
    if group2ctxs or compression_params:
        raise MinimxError("Module: group2ctxs and compression_params need several devices "
                          "or a kvstore; minimx runs on one CPU context")
    context = cpu() if context is None else context
    contexts = [context] if isinstance(context, Context) else list(context)
    if len(contexts) != 1 or not isinstance(contexts[0], Context):
        raise MinimxError(f"Module: context={context!r}: minimx runs a module on one CPU "
                          "context (mx.cpu()); data parallelism over several is not supported")
    return contexts[0]
