"""Modules written in Python - MXNet 1.x's `mx.mod.PythonModule` and
`mx.mod.PythonLossModule`.

`PythonModule` fills in the module API with "nothing to do": no parameters, no
optimizer, `bind` only records the shapes; a subclass gives the computation
(`forward`, `backward`, `get_outputs`, `get_input_grads`) and
`_compute_output_shapes`. `PythonLossModule` is the usual subclass: a loss
written in Python, typically the last module of a `SequentialModule`. Its
forward passes the scores through; its backward gives the gradient of the
scores, ``grad_func(scores, labels)``.

>>> import minimx as mx
>>> loss = mx.mod.PythonLossModule(grad_func=lambda scores, labels: scores - 1)
>>> loss.bind(data_shapes=[("data", (1, 2))], label_shapes=[("softmax_label", (1,))])
>>> loss.forward(mx.io.DataBatch([mx.nd.array([[1, 3]])], [mx.nd.array([0])]))
>>> loss.backward()
>>> loss.get_input_grads()[0].asnumpy().tolist()
[[0.0, 2.0]]
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..base import MinimxError
from ..metric import EvalMetric
from ..ndarray import NDArray, array
from .base_module import DEFAULT_INIT, BaseModule, ShapesArg

GradFunc = Callable[[NDArray, NDArray], "NDArray | np.ndarray"]


class PythonModule(BaseModule):
    """A module without parameters whose computation a subclass writes in Python."""

    def __init__(self, data_names: Sequence[str], label_names: Sequence[str] | None,
                 output_names: Sequence[str], logger: Any = logging) -> None:
        super().__init__(logger=logger)
        self._data_names = list(data_names)
        self._label_names = None if label_names is None else list(label_names)
        self._output_names = list(output_names)
        self._data_shapes: ShapesArg | None = None
        self._label_shapes: ShapesArg | None = None
        self._output_shapes: list[tuple[str, tuple[int, ...]]] | None = None

    # -- names and shapes ----------------------------------------------------------------
    @property
    def data_names(self) -> list[str]:
        return self._data_names

    @property
    def output_names(self) -> list[str]:
        return self._output_names

    @property
    def data_shapes(self) -> Any:
        return self._data_shapes

    @property
    def label_shapes(self) -> Any:
        """The label shapes given to `bind`: None for a module without labels."""
        return self._label_shapes

    @property
    def output_shapes(self) -> Any:
        return self._output_shapes

    # -- parameters: none ----------------------------------------------------------------
    def get_params(self) -> tuple[dict[str, NDArray], dict[str, NDArray]]:
        return {}, {}

    def init_params(self, initializer: Any = DEFAULT_INIT, arg_params: dict | None = None,
                    aux_params: dict | None = None, allow_missing: bool = False,
                    force_init: bool = False, allow_extra: bool = False) -> None:
        """Nothing to initialize (a subclass with parameters overrides this)."""

    def set_params(self, arg_params: dict[str, NDArray], aux_params: dict[str, NDArray],
                   allow_missing: bool = False, force_init: bool = True,
                   allow_extra: bool = False) -> None:
        """Nothing to set: MXNet's `set_params` is an `init_params`, which does nothing."""

    def init_optimizer(self, kvstore: Any = "local", optimizer: Any = "sgd",
                       optimizer_params: Any = (("learning_rate", 0.01),),
                       force_init: bool = False) -> None:
        """Nothing to optimize."""

    def update(self) -> None:
        """Nothing to update."""

    def install_monitor(self, mon: Any) -> None:
        """Nothing to watch: no operators run here. (MXNet's raises, so a monitor on a
        `SequentialModule` ending in a Python loss fails there.)"""

    def update_metric(self, eval_metric: EvalMetric, labels: Sequence[NDArray] | None,
                      pre_sliced: bool = False) -> None:
        """Score the outputs against `labels` - if the module was bound with labels."""
        if self._label_shapes is None:
            return
        if pre_sliced:
            raise MinimxError(f"{type(self).__name__}.update_metric: presliced labels "
                              "are not supported")
        eval_metric.update(labels or [], self.get_outputs())

    # -- binding -------------------------------------------------------------------------
    def bind(self, data_shapes: ShapesArg, label_shapes: ShapesArg | None = None,
             for_training: bool = True, inputs_need_grad: bool = False,
             force_rebind: bool = False, shared_module: Any = None,
             grad_req: Any = "write") -> None:
        """Record the shapes (which must name the module's data and labels, in order)
        and compute the output shapes."""
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if grad_req != "write":
            raise MinimxError(f"{type(self).__name__}.bind: only grad_req='write' is "
                              f"supported, got {grad_req!r}")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        _check_names("data", self._data_names, data_shapes)
        if label_shapes is not None:
            _check_names("label", self._label_names, label_shapes)
        self._data_shapes = data_shapes
        self._label_shapes = label_shapes
        self._output_shapes = self._compute_output_shapes()
        # MXNet's PythonModule never sets `binded` (so a second bind binds again).

    def _compute_output_shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        """The (name, shape) of each output, from the bound data and label shapes."""
        raise NotImplementedError


class PythonLossModule(PythonModule):
    """A loss in Python: forward passes the scores (its one data) through as the
    output ``<name>_output``; backward gives their gradient, ``grad_func(scores,
    labels)`` (an NDArray or numpy array), or what a subclass's `_backward_impl`
    computes."""

    def __init__(self, name: str = "pyloss", data_names: Sequence[str] = ("data",),
                 label_names: Sequence[str] = ("softmax_label",), logger: Any = logging,
                 grad_func: GradFunc | None = None) -> None:
        super().__init__(data_names, label_names, [name + "_output"], logger=logger)
        if len(data_names) != 1 or len(label_names) != 1:
            raise MinimxError(f"PythonLossModule takes one data and one label, got "
                              f"data_names={list(data_names)}, label_names={list(label_names)}")
        if grad_func is not None and not callable(grad_func):
            raise MinimxError(f"PythonLossModule: grad_func must be callable, got {grad_func!r}")
        self._name = name
        self._grad_func = grad_func
        self._scores: NDArray | None = None
        self._labels: NDArray | None = None
        self._scores_grad: NDArray | None = None

    def _compute_output_shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        assert self._data_shapes is not None
        return [(self._name + "_output", tuple(self._data_shapes[0][1]))]

    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        """Keep the scores (and, training, the labels) for `get_outputs` and `backward`."""
        self._scores = data_batch.data[0]
        if self.for_training if is_train is None else is_train:
            self._labels = data_batch.label[0]

    def get_outputs(self, merge_multi_context: bool = True) -> list[NDArray]:
        """The scores of the last forward."""
        return [self._scores] if self._scores is not None else []

    def backward(self, out_grads: Any = None) -> None:
        """The gradient of the scores; a loss takes no output gradients."""
        if out_grads is not None:
            raise MinimxError("PythonLossModule.backward: for a loss module, out_grads "
                              "should be None")
        if not self.for_training:
            raise MinimxError("PythonLossModule.backward: bind with for_training=True first")
        self._backward_impl()

    def _backward_impl(self) -> None:
        """Set ``self._scores_grad`` from ``self._scores`` and ``self._labels``: by
        `grad_func`, or by a subclass overriding this."""
        if self._grad_func is None:
            raise NotImplementedError("PythonLossModule: give grad_func or override "
                                      "_backward_impl")
        grad = self._grad_func(self._scores, self._labels)  # type: ignore[arg-type]
        self._scores_grad = grad if isinstance(grad, NDArray) else array(grad)

    def get_input_grads(self, merge_multi_context: bool = True) -> list[NDArray]:
        """The gradient of the scores from the last backward."""
        return [self._scores_grad] if self._scores_grad is not None else []


def _check_names(kind: str, names: Sequence[str] | None, shapes: ShapesArg) -> None:
    """Refuse shapes that do not name `names`, in order (a DataDesc is a (name, shape))."""
    given = [name for name, _ in shapes]
    if names is None or given != list(names):
        raise MinimxError(f"PythonModule.bind: {kind} shapes {given} do not match the "
                          f"module's {kind} names {names}")
