"""`SequentialModule`: modules chained one after another, each module's outputs the
next one's data - MXNet 1.x's `mx.mod.SequentialModule`.

`add(module, take_labels=..., auto_wiring=...)` appends a module. The chain's
data are the first module's, its outputs the last module's. Binding binds
every module in order, each for the output shapes of the one before it (with
``auto_wiring``, renamed to the module's own data names) and, when training,
with gradients for its inputs, which `backward` hands down the chain. Every
module added with ``take_labels`` gets the batch's labels and counts in
`update_metric`. The modules' parameters are one dictionary, so their names
must differ.

>>> import minimx as mx
>>> fc1 = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc1")
>>> fc2 = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc2")
>>> seq = mx.mod.SequentialModule()
>>> seq = seq.add(mx.mod.Module(fc1, label_names=None)).add(
...     mx.mod.Module(fc2, label_names=None), auto_wiring=True)
>>> seq.bind(data_shapes=[("data", (1, 4))], for_training=False)
>>> seq.init_params(mx.init.One())
>>> seq.forward(mx.io.DataBatch([mx.nd.ones((1, 4))]))
>>> seq.get_outputs()[0].asnumpy().tolist()
[[12.0, 12.0]]
"""
from __future__ import annotations

import copy
import logging
from collections.abc import Sequence
from typing import Any

from ..base import MinimxError
from ..io import DataDesc
from ..metric import EvalMetric
from ..ndarray import NDArray
from .base_module import DEFAULT_INIT, BaseModule, ShapesArg


class SequentialModule(BaseModule):
    """A chain of modules; `add` appends one (and returns the chain)."""

    META_TAKE_LABELS = "take_labels"
    META_AUTO_WIRING = "auto_wiring"

    def __init__(self, logger: Any = logging) -> None:
        super().__init__(logger=logger)
        self._modules: list[BaseModule] = []
        self._metas: list[dict[str, Any]] = []
        self._label_shapes: ShapesArg | None = None

    def add(self, module: BaseModule, **meta: Any) -> SequentialModule:
        """Append `module`. Its meta: ``take_labels`` (it gets the batch's labels and
        is scored by `update_metric`), ``auto_wiring`` (the previous outputs are
        renamed to its data names). The chain must be bound again afterwards."""
        unknown = sorted(set(meta) - {self.META_TAKE_LABELS, self.META_AUTO_WIRING})
        if unknown:
            raise MinimxError(f"SequentialModule.add: unknown meta {unknown} (a typo? known: "
                              f"{self.META_TAKE_LABELS}, {self.META_AUTO_WIRING})")
        self._modules.append(module)
        self._metas.append(meta)
        self.binded = self.params_initialized = self.optimizer_initialized = False
        return self

    def _takes_labels(self, index: int) -> bool:
        return bool(self._metas[index].get(self.META_TAKE_LABELS, False))

    # -- names and shapes ----------------------------------------------------------------
    @property
    def data_names(self) -> list[str]:
        """The first module's data names."""
        return self._modules[0].data_names if self._modules else []

    @property
    def output_names(self) -> list[str]:
        """The last module's output names."""
        return self._modules[-1].output_names if self._modules else []

    @property
    def data_shapes(self) -> list[DataDesc]:
        self._require("data_shapes", "binded")
        return self._modules[0].data_shapes

    @property
    def label_shapes(self) -> Any:
        """The label shapes given to `bind` (None when no module takes labels)."""
        self._require("label_shapes", "binded")
        return self._label_shapes

    @property
    def output_shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        self._require("output_shapes", "binded")
        return self._modules[-1].output_shapes

    # -- parameters ----------------------------------------------------------------------
    def get_params(self) -> tuple[dict[str, NDArray], dict[str, NDArray]]:
        """(arg_params, aux_params): every module's, in one dictionary each."""
        self._require("get_params", "binded", "params_initialized")
        arg_params: dict[str, NDArray] = {}
        aux_params: dict[str, NDArray] = {}
        for module in self._modules:
            args, auxs = module.get_params()
            arg_params.update(args)
            aux_params.update(auxs)
        return arg_params, aux_params

    def init_params(self, initializer: Any = DEFAULT_INIT, arg_params: dict | None = None,
                    aux_params: dict | None = None, allow_missing: bool = False,
                    force_init: bool = False, allow_extra: bool = False) -> None:
        """Initialize every module's parameters with the same arguments (each module
        takes its own from `arg_params` / `aux_params`); two modules with a
        parameter of the same name are refused."""
        if self.params_initialized and not force_init:
            return
        self._require("init_params", "binded")
        for module in self._modules:
            module.init_params(initializer=initializer, arg_params=arg_params,
                               aux_params=aux_params, allow_missing=allow_missing,
                               force_init=force_init, allow_extra=allow_extra)
        self._check_unique_param_names()
        self.params_initialized = True

    def _check_unique_param_names(self) -> None:
        """MXNet's check: `get_params` merges the modules' dictionaries, so a name
        used twice would lose one of the parameters."""
        owners: tuple[dict[str, int], dict[str, int]] = ({}, {})
        for index, module in enumerate(self._modules):
            for known, params in zip(owners, module.get_params(), strict=True):
                for name in params:
                    if name in known:
                        first = known[name]
                        raise MinimxError(
                            f"SequentialModule: duplicated parameter names: name {name!r} in "
                            f"layer {index} ({type(module).__name__}) is already used in "
                            f"layer {first} ({type(self._modules[first]).__name__})")
                    known[name] = index

    def _set_some_params(self, arg_params: dict[str, NDArray], aux_params: dict[str, NDArray],
                         allow_extra: bool) -> None:
        # Each module picks its own parameters out of the chain's dictionaries: the
        # others are extra for it, whatever `allow_extra` says about the chain.
        for module in self._modules:
            module.set_params(arg_params, aux_params, allow_missing=True, force_init=True,
                              allow_extra=True)

    # -- binding -------------------------------------------------------------------------
    def bind(self, data_shapes: ShapesArg, label_shapes: ShapesArg | None = None,
             for_training: bool = True, inputs_need_grad: bool = False,
             force_rebind: bool = False, shared_module: Any = None,
             grad_req: Any = "write") -> None:
        """Bind each module for the output shapes of the one before it; when training,
        the modules after the first get gradients for their inputs."""
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if inputs_need_grad and not for_training:
            raise MinimxError("SequentialModule.bind: inputs_need_grad=True needs "
                              "for_training=True")
        if shared_module is not None:
            raise MinimxError("SequentialModule.bind: shared_module is not supported for a "
                              "SequentialModule")
        if not self._modules:
            raise MinimxError("SequentialModule.bind: attempting to bind an empty "
                              "SequentialModule (add modules first)")
        # MXNet leaves these two False on the chain, so its get_input_grads always fails.
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        shapes: list = list(data_shapes)
        for index, module in enumerate(self._modules):
            if self._metas[index].get(self.META_AUTO_WIRING, False):
                shapes = self._wired(index, shapes)
            module.bind(data_shapes=shapes,
                        label_shapes=label_shapes if self._takes_labels(index) else None,
                        for_training=for_training,
                        inputs_need_grad=inputs_need_grad or (for_training and index > 0),
                        force_rebind=force_rebind, shared_module=None, grad_req=grad_req)
            shapes = module.output_shapes
        needs_labels = any(self._takes_labels(i) for i in range(len(self._modules)))
        self._label_shapes = label_shapes if needs_labels else None
        self.binded = True

    def _wired(self, index: int, shapes: list) -> list[tuple[str, tuple[int, ...]]]:
        """`shapes` (the previous module's outputs) renamed to module `index`'s data."""
        names = self._modules[index].data_names
        if len(names) != len(shapes):
            raise MinimxError(f"SequentialModule: auto_wiring layer {index}: it takes "
                              f"{len(names)} data {names} but the layer before gives "
                              f"{len(shapes)} outputs")
        # A DataDesc is a (name, shape) pair too.
        return [(name, tuple(shape)) for name, (_, shape) in zip(names, shapes, strict=True)]

    def install_monitor(self, mon: Any) -> None:
        """Have `mon` watch every module's executors."""
        self._require("install_monitor", "binded")
        for module in self._modules:
            module.install_monitor(mon)

    # -- the optimizer -------------------------------------------------------------------
    def init_optimizer(self, kvstore: Any = "local", optimizer: Any = "sgd",
                       optimizer_params: Any = (("learning_rate", 0.01),),
                       force_init: bool = False) -> None:
        """Give every module its own optimizer, made from the same arguments."""
        if not self._wants_optimizer(force_init):
            return
        for module in self._modules:
            module.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                                  optimizer_params=optimizer_params, force_init=force_init)
        self.optimizer_initialized = True

    # -- running -------------------------------------------------------------------------
    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        """Run the batch through the chain: each module's outputs are the next one's
        data (with the batch's labels, pad and other fields kept)."""
        self._require("forward", "binded", "params_initialized")
        batch = copy.copy(data_batch)
        for index, module in enumerate(self._modules):
            module.forward(batch, is_train=is_train)
            if index + 1 == len(self._modules):
                break
            batch.data = module.get_outputs()
            if hasattr(batch, "provide_data"):
                # As MXNet: named by the outputs, for a module that reshapes to them.
                names = [name for name, _ in module.output_shapes]
                batch.provide_data = [(name, out.shape)
                                      for name, out in zip(names, batch.data, strict=True)]

    def backward(self, out_grads: Any = None) -> None:
        """Backward through the chain from the last module: each module's input
        gradients are the output gradients of the one before it."""
        self._require("backward", "binded", "params_initialized")
        for index in reversed(range(len(self._modules))):
            module = self._modules[index]
            module.backward(out_grads=out_grads)
            if index > 0:
                out_grads = module.get_input_grads()

    def update(self) -> None:
        """One optimizer step in every module."""
        self._require("update", "binded", "params_initialized", "optimizer_initialized")
        for module in self._modules:
            module.update()

    def get_outputs(self, merge_multi_context: bool = True) -> list[NDArray]:
        """The last module's outputs."""
        self._require("get_outputs", "binded", "params_initialized")
        return self._modules[-1].get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context: bool = True) -> list[NDArray]:
        """The gradients of the chain's data (bind with inputs_need_grad=True)."""
        self._require("get_input_grads", "binded", "params_initialized")
        if not self.inputs_need_grad:
            raise MinimxError("SequentialModule.get_input_grads: bind with "
                              "inputs_need_grad=True first")
        return self._modules[0].get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric: EvalMetric, labels: Sequence[NDArray] | None,
                      pre_sliced: bool = False) -> None:
        """Add the outputs of every module that takes labels to `eval_metric`."""
        self._require("update_metric", "binded", "params_initialized")
        for index, module in enumerate(self._modules):
            if self._takes_labels(index):
                module.update_metric(eval_metric, labels, pre_sliced)
