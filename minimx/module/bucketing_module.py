"""`BucketingModule`: one symbol per bucket key (a sequence length, say), made by
`sym_gen(key)`, trained as one model - MXNet 1.x's `mx.mod.BucketingModule`.

Each bucket gets its own `Module`, made the first time a batch of that key
arrives (`forward` switches by ``data_batch.bucket_key``, with the batch's
`provide_data` / `provide_label`). Every bucket's module is bound with the
default bucket's as its `shared_module`, so all of them run on the same
parameter, gradient and auxiliary arrays and the same optimizer, as MXNet
shares them; the default bucket should be the largest. Over several contexts every
bucket's module runs on all of them, splitting its batches as `Module` does.

>>> import minimx as mx
>>> def sym_gen(length):
...     data = mx.sym.Variable("data")
...     out = mx.sym.FullyConnected(mx.sym.sum(data, axis=1), num_hidden=2, name="fc")
...     return out, ("data",), None
>>> mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=5)
>>> mod.bind(data_shapes=[("data", (1, 5))], for_training=False)
>>> mod.init_params(mx.init.One())
>>> batch = mx.io.DataBatch([mx.nd.ones((1, 3))], bucket_key=3,
...                         provide_data=[mx.io.DataDesc("data", (1, 3))])
>>> mod.forward(batch)
>>> mod.get_outputs()[0].asnumpy().tolist()
[[3.0, 3.0]]
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from ..base import MinimxError
from ..context import Context
from ..metric import EvalMetric
from ..model import load_params
from ..name import NameManager
from ..ndarray import NDArray, array, load, save
from ..symbol import Symbol
from ..symbol import load as load_symbol
from .base_module import DEFAULT_INIT, BaseModule, ShapesArg, check_input_names
from .module import Module, as_contexts

SymGen = Callable[[Any], tuple[Symbol, Sequence[str] | None, Sequence[str] | None]]


class BucketingModule(BaseModule):
    """Modules by bucket key over shared parameters; `sym_gen(key)` gives a key's
    (symbol, data_names, label_names)."""

    def __init__(self, sym_gen: SymGen, default_bucket_key: Hashable = None,
                 logger: Any = logging, context: Context | Sequence[Context] | None = None,
                 work_load_list: Any = None, fixed_param_names: Sequence[str] | None = None,
                 state_names: Sequence[str] | None = None, group2ctxs: Any = None,
                 compression_params: Any = None) -> None:
        super().__init__(logger=logger)
        if default_bucket_key is None:
            raise MinimxError("BucketingModule: default_bucket_key is required (the key of "
                              "the largest bucket, e.g. BucketSentenceIter.default_bucket_key)")
        self._default_bucket_key = default_bucket_key
        self._sym_gen = sym_gen
        self._context, self._work_load_list = as_contexts(context, work_load_list, group2ctxs,
                                                          compression_params)
        self._fixed_param_names = list(fixed_param_names or [])
        self._state_names = list(state_names or [])
        symbol, data_names, label_names = self._call_sym_gen(default_bucket_key)
        check_input_names(symbol, list(data_names or []), "data", True)
        check_input_names(symbol, list(label_names or []), "label", False)
        check_input_names(symbol, self._state_names, "state", True)
        check_input_names(symbol, self._fixed_param_names, "fixed_param", True)
        self._buckets: dict[Any, Module] = {}
        self._curr_module: Module | None = None
        self._curr_bucket_key: Any = None
        self._params_dirty = False
        self._monitor: Any = None
        self._grad_req: Any = "write"

    def _call_sym_gen(self, bucket_key: Any
                      ) -> tuple[Symbol, Sequence[str] | None, Sequence[str] | None]:
        # A fresh name manager: each call names its automatic nodes the same way.
        with NameManager():
            return self._sym_gen(bucket_key)

    def _new_module(self, bucket_key: Any, symbol: Symbol | None = None) -> Module:
        """The module of `bucket_key` (for `symbol`, else sym_gen's), unbound."""
        made, data_names, label_names = self._call_sym_gen(bucket_key)
        return Module(made if symbol is None else symbol, data_names, label_names,
                      logger=self.logger, context=self._context,
                      work_load_list=self._work_load_list,
                      fixed_param_names=self._fixed_param_names,
                      state_names=self._state_names)

    @property
    def _module(self) -> Module:
        if self._curr_module is None:
            raise MinimxError("BucketingModule: call bind first")
        return self._curr_module

    # -- names and shapes (the current bucket's) -----------------------------------------
    @property
    def data_names(self) -> list[str]:
        if self.binded:
            return self._module.data_names
        return list(self._call_sym_gen(self._default_bucket_key)[1] or [])

    @property
    def output_names(self) -> list[str]:
        if self.binded:
            return self._module.output_names
        return self._call_sym_gen(self._default_bucket_key)[0].list_outputs()

    @property
    def data_shapes(self) -> list:
        self._require("data_shapes", "binded")
        return self._module.data_shapes

    @property
    def label_shapes(self) -> list | None:
        self._require("label_shapes", "binded")
        return self._module.label_shapes

    @property
    def output_shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        self._require("output_shapes", "binded")
        return self._module.output_shapes

    @property
    def symbol(self) -> Symbol | None:
        """The current bucket's symbol."""
        self._require("symbol", "binded")
        return self._module.symbol

    # -- parameters ----------------------------------------------------------------------
    def get_params(self) -> tuple[dict[str, NDArray], dict[str, NDArray]]:
        """(arg_params, aux_params), the same for every bucket."""
        self._require("get_params", "params_initialized")
        self._module._params_dirty = self._params_dirty
        params = self._module.get_params()
        self._params_dirty = False
        return params

    def _set_some_params(self, arg_params: dict[str, NDArray], aux_params: dict[str, NDArray],
                         allow_extra: bool) -> None:
        self._module.set_params(arg_params, aux_params, allow_missing=True, force_init=True,
                                allow_extra=allow_extra)
        self._params_dirty = True

    def init_params(self, initializer: Any = DEFAULT_INIT, arg_params: dict | None = None,
                    aux_params: dict | None = None, allow_missing: bool = False,
                    force_init: bool = False, allow_extra: bool = False) -> None:
        """Initialize the (shared) parameters through the current bucket's module."""
        if self.params_initialized and not force_init:
            return
        self._require("init_params", "binded")
        self._module.init_params(initializer=initializer, arg_params=arg_params,
                                 aux_params=aux_params, allow_missing=allow_missing,
                                 force_init=force_init, allow_extra=allow_extra)
        self._params_dirty = False
        self.params_initialized = True

    # -- binding and buckets -------------------------------------------------------------
    def bind(self, data_shapes: ShapesArg, label_shapes: ShapesArg | None = None,
             for_training: bool = True, inputs_need_grad: bool = False,
             force_rebind: bool = False, shared_module: Any = None,
             grad_req: Any = "write") -> None:
        """Bind the default bucket's module for these shapes (those of the default
        bucket); other buckets bind when their first batch comes."""
        params = self.get_params() if self.params_initialized else None
        if force_rebind:
            self.binded, self._buckets = False, {}
            self._curr_module = self._curr_bucket_key = None
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if shared_module is not None:
            raise MinimxError("BucketingModule.bind: shared_module is not supported for a "
                              "BucketingModule (its buckets share the default bucket's)")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        key = self._default_bucket_key
        module = self._buckets.get(key) or self._new_module(key)
        module.bind(data_shapes, label_shapes, for_training, inputs_need_grad,
                    force_rebind=False, shared_module=None, grad_req=grad_req)
        self._buckets[key] = module
        self._curr_module, self._curr_bucket_key = module, key
        self.binded = True
        if params is not None:
            self.set_params(*params)

    def switch_bucket(self, bucket_key: Any, data_shapes: ShapesArg | None,
                      label_shapes: ShapesArg | None = None) -> None:
        """Make `bucket_key`'s module the current one, binding it (sharing the default
        bucket's arrays) for `data_shapes` the first time."""
        self._require("switch_bucket", "binded")
        module = self._buckets.get(bucket_key)
        if module is None:
            module = self._new_module(bucket_key)
            self._buckets[bucket_key] = module
        if not module.binded:
            if data_shapes is None:
                raise MinimxError(f"BucketingModule.switch_bucket: bucket {bucket_key!r} is "
                                  "not bound yet; give its data_shapes (the batch's "
                                  "provide_data)")
            module.bind(data_shapes, label_shapes, self._module.for_training,
                        self._module.inputs_need_grad, force_rebind=False,
                        shared_module=self._buckets[self._default_bucket_key],
                        grad_req=self._grad_req)
            if self._monitor is not None:
                module.install_monitor(self._monitor)
        self._curr_module, self._curr_bucket_key = module, bucket_key

    def install_monitor(self, mon: Any) -> None:
        """Have `mon` watch every bucket's executor, including those bound later."""
        self._require("install_monitor", "binded")
        self._monitor = mon
        for module in self._buckets.values():
            module.install_monitor(mon)

    # -- the optimizer -------------------------------------------------------------------
    def init_optimizer(self, kvstore: Any = "local", optimizer: Any = "sgd",
                       optimizer_params: Any = (("learning_rate", 0.01),),
                       force_init: bool = False) -> None:
        """One optimizer for all buckets: the current module's, borrowed by the rest."""
        if not self._wants_optimizer(force_init):
            return
        self._module.init_optimizer(kvstore, optimizer, optimizer_params,
                                    force_init=force_init)
        for module in self._buckets.values():
            if module is not self._curr_module:
                module.borrow_optimizer(self._module)
        self.optimizer_initialized = True

    # -- running -------------------------------------------------------------------------
    def prepare(self, data_batch: Any, sparse_row_id_fn: Any = None) -> None:
        """Bind the batch's bucket if it is new (and stay on the current one)."""
        self._require("prepare", "binded", "params_initialized")
        current = self._curr_bucket_key
        self.switch_bucket(_bucket_key(data_batch), data_batch.provide_data,
                           getattr(data_batch, "provide_label", None))
        self.switch_bucket(current, None)

    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        """Run the batch through its bucket's module (`data_batch.bucket_key`)."""
        self._require("forward", "binded", "params_initialized")
        self.switch_bucket(_bucket_key(data_batch), getattr(data_batch, "provide_data", None),
                           getattr(data_batch, "provide_label", None))
        self._module.forward(data_batch, is_train=is_train)

    def backward(self, out_grads: Any = None) -> None:
        self._require("backward", "binded", "params_initialized")
        self._module.backward(out_grads=out_grads)

    def update(self) -> None:
        """One optimizer step on the shared parameters, from the current bucket's
        gradients."""
        self._require("update", "binded", "params_initialized", "optimizer_initialized")
        self._params_dirty = True
        self._module.update()

    def get_outputs(self, merge_multi_context: bool = True) -> list[NDArray]:
        self._require("get_outputs", "binded", "params_initialized")
        return self._module.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context: bool = True) -> list[NDArray]:
        self._require("get_input_grads", "binded", "params_initialized")
        return self._module.get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric: EvalMetric, labels: Sequence[NDArray] | None,
                      pre_sliced: bool = False) -> None:
        self._require("update_metric", "binded", "params_initialized")
        self._module.update_metric(eval_metric, labels, pre_sliced)

    # -- checkpoints ---------------------------------------------------------------------
    def save_checkpoint(self, prefix: str, epoch: int, remove_amp_cast: bool = False) -> None:
        """Write ``prefix-%04d.params``, each bucket's ``prefix-<key>-symbol.json`` and
        the keys (integers) as ``prefix.buckets``."""
        if not self._buckets:
            raise MinimxError("BucketingModule.save_checkpoint: an empty BucketingModule "
                              "cannot be saved (bind it first)")
        keys = list(self._buckets)
        if not all(isinstance(k, (int, np.integer)) for k in keys):
            raise MinimxError(f"BucketingModule.save_checkpoint: bucket keys {keys} must be "
                              "integers to be saved (as MXNet's prefix.buckets file)")
        self.save_params(f"{prefix}-{epoch:04d}.params")
        for key in keys:
            self._call_sym_gen(key)[0].save(f"{prefix}-{key}-symbol.json")
        save(f"{prefix}.buckets", [array(keys, dtype=np.int32)])

    @staticmethod
    def load(prefix: str, epoch: int, sym_gen: SymGen | None = None,
             default_bucket_key: Hashable = None, **kwargs: Any) -> BucketingModule:
        """A module of the checkpoint `save_checkpoint` wrote (every bucket's saved
        symbol, the parameters); bind it next."""
        if sym_gen is None or default_bucket_key is None:
            raise MinimxError("BucketingModule.load: sym_gen and default_bucket_key are "
                              "required")
        saved = load(f"{prefix}.buckets")
        keys = [int(k) for k in (saved[0] if isinstance(saved, list) else
                                 next(iter(saved.values()))).asnumpy()]
        symbols = {key: load_symbol(f"{prefix}-{key}-symbol.json") for key in keys}
        return BucketingModule.load_dict(symbols, sym_gen, default_bucket_key,
                                         *load_params(prefix, epoch),
                                         **kwargs)

    @staticmethod
    def load_dict(sym_dict: dict[Any, Symbol] | None = None, sym_gen: SymGen | None = None,
                  default_bucket_key: Hashable = None,
                  arg_params: dict[str, NDArray] | None = None,
                  aux_params: dict[str, NDArray] | None = None,
                  **kwargs: Any) -> BucketingModule:
        """A module of the symbols of `sym_dict` (by bucket key) and these parameters;
        bind it next."""
        if sym_dict is None or sym_gen is None or arg_params is None or aux_params is None:
            raise MinimxError("BucketingModule.load_dict: sym_dict, sym_gen, arg_params and "
                              "aux_params are required")
        if default_bucket_key not in sym_dict:
            raise MinimxError(f"BucketingModule.load_dict: default_bucket_key="
                              f"{default_bucket_key!r} is not among the buckets "
                              f"{sorted(sym_dict, key=repr)}")
        mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        mod._buckets = {key: mod._new_module(key, symbol) for key, symbol in sym_dict.items()}
        default = mod._buckets[default_bucket_key]
        default._arg_params, default._aux_params = arg_params, aux_params
        default.params_initialized = True
        mod._curr_module, mod._curr_bucket_key = default, default_bucket_key
        mod.params_initialized = True
        return mod


def _bucket_key(data_batch: Any) -> Any:
    key = getattr(data_batch, "bucket_key", None)
    if key is None:
        raise MinimxError("BucketingModule: the data batch has no bucket_key (give "
                          "DataBatch(..., bucket_key=..., provide_data=...))")
    return key
