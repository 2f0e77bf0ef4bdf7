"""`mx.optimizer`: update rules for parameters from their gradients, with MXNet
1.9's names, arguments and arithmetic (`SGD`, `NAG`, `Signum`, `DCASGD`, `SGLD`,
`Adam`, `RMSProp`, `AdaGrad`, `GroupAdaGrad`, `AdaDelta`, `Adamax`, `Nadam`, `Ftrl`, `FTML`,
`LARS`, `LAMB`, `LBSGD`; `ccSGD` and `Test` too), and the `Updater` that keeps each
parameter's state and saves it.

>>> import minimx as mx
>>> opt = mx.optimizer.create("sgd", learning_rate=0.1)
>>> weight, grad = mx.nd.ones((2,)), mx.nd.ones((2,))
>>> mx.optimizer.get_updater(opt)(0, grad, weight)
>>> [round(float(v), 6) for v in weight.asnumpy()]
[0.9, 0.9]
"""
from . import contrib
from .adaptive import AdaDelta, AdaGrad, Adam, Adamax, GroupAdaGrad, Nadam, RMSProp
from .follow_the_leader import FTML, Ftrl
from .large_batch import LBSGD
from .layerwise import LAMB, LARS
from .optimizer import Optimizer, ScheduledRateError, Test, create, register
from .sgd import DCASGD, NAG, SGD, SGLD, Signum, ccSGD
from .updater import Updater, get_updater

__all__ = ["AdaDelta", "AdaGrad", "Adam", "Adamax", "DCASGD", "FTML", "Ftrl", "GroupAdaGrad",
           "LAMB", "LARS", "LBSGD", "NAG", "Nadam", "Optimizer", "RMSProp", "SGD", "SGLD", "Signum",
           "ScheduledRateError", "Test", "Updater", "ccSGD", "contrib", "create", "get_updater",
           "register"]
