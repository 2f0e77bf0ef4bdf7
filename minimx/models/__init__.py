"""Symbols of MXNet's gluon model zoo, named as ``net.export()`` names them.

``get_model(name)`` builds the symbol that MXNet 1.9's
``mxnet.gluon.model_zoo.vision.get_model(name)`` exports after ``hybridize()``:
the same operators with the same attributes, and the same argument and auxiliary
names in the same order, so the ``.params`` of an exported checkpoint bind directly.

>>> import minimx as mx
>>> net = mx.models.get_model("resnet18_v1")
>>> net.list_arguments()[1], net.list_auxiliary_states()[0]
('resnetv10_conv0_weight', 'resnetv10_batchnorm0_running_mean')
>>> net.infer_shape(data=(1, 3, 224, 224))[1]
[(1, 1000)]

Names are those of a net built first in a fresh process (``resnetv10_``); pass
``prefix=`` for another, as gluon's constructors take it.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..symbol import Symbol
from . import alexnet, densenet, inception, mobilenet, resnet, squeezenet, vgg
from .layers import ModelError

_MODELS: dict[str, Callable[..., Symbol]] = {
    **resnet.MODELS, **vgg.MODELS, **alexnet.MODELS, **densenet.MODELS,
    **squeezenet.MODELS, **inception.MODELS, **mobilenet.MODELS,
}


def get_model(name: str, classes: int = 1000, pretrained: bool = False,
              **kwargs: Any) -> Symbol:
    """The symbol of model-zoo net `name` (``resnet50_v1``, ``mobilenet0.25``...).

    `kwargs` are the family's options that gluon's constructors take: ``prefix`` for
    all, ``thumbnail`` for ResNets, ``bn_size`` and ``dropout`` for DenseNets.
    The input is the variable ``data``; its size is 224x224 (299x299 for inceptionv3).
    minimx downloads no weights: ``pretrained=True`` raises a `ModelError` that
    says how to load a checkpoint exported from MXNet instead.
    """
    if pretrained:
        raise ModelError(_NO_DOWNLOAD.format(name=name))
    try:
        build = _MODELS[name.lower()]
    except KeyError:
        raise ModelError(f"model {name!r} is not supported; available: "
                         f"{', '.join(list_models())}") from None
    return build(classes=classes, **kwargs)


_NO_DOWNLOAD = """\
get_model({name!r}, pretrained=True): minimx does not download weights. Export the \
pretrained model from MXNet 1.x once:
    net = mxnet.gluon.model_zoo.vision.get_model({name!r}, pretrained=True)
    net.hybridize(); net(mxnet.nd.zeros((1, 3, 224, 224))); net.export({name!r})
then load the checkpoint it wrote ({name}-symbol.json, {name}-0000.params):
    sym, arg_params, aux_params = mx.model.load_checkpoint({name!r}, 0)
(or bind get_model({name!r}) to those params: the names match)"""


def list_models() -> list[str]:
    """Names `get_model` accepts, sorted."""
    return sorted(_MODELS)


__all__ = ["ModelError", "alexnet", "densenet", "get_model", "inception", "list_models",
           "mobilenet", "resnet", "squeezenet", "vgg"]
