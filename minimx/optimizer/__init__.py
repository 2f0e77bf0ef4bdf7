"""`mx.optimizer`: update rules for parameters from their gradients, with MXNet
1.9's names, arguments and arithmetic (`SGD`, `NAG`, `Signum`, `DCASGD`, `SGLD`,
`Adam`, `RMSProp`, `AdaGrad`, `AdaDelta`, `Adamax`, `Nadam`, `Ftrl`, `FTML`,
`LARS`, `LAMB`), and the `Updater` that keeps each parameter's state and saves it.

>>> import minimx as mx
>>> opt = mx.optimizer.create("sgd", learning_rate=0.1)
>>> weight, grad = mx.nd.ones((2,)), mx.nd.ones((2,))
>>> mx.optimizer.get_updater(opt)(0, grad, weight)
>>> [round(float(v), 6) for v in weight.asnumpy()]
[0.9, 0.9]
"""
from .adaptive import AdaDelta, AdaGrad, Adam, Adamax, Nadam, RMSProp
from .follow_the_leader import FTML, Ftrl
from .layerwise import LAMB, LARS
from .optimizer import Optimizer, create, register
from .sgd import DCASGD, NAG, SGD, SGLD, Signum
from .updater import Updater, get_updater

__all__ = ["AdaDelta", "AdaGrad", "Adam", "Adamax", "DCASGD", "FTML", "Ftrl", "LAMB", "LARS",
           "NAG", "Nadam", "Optimizer", "RMSProp", "SGD", "SGLD", "Signum", "Updater", "create",
           "get_updater", "register"]
