"""The custom operators of the custom_op and test_utils fixture groups, registered
with minimx from the definitions the fixture scripts register with MXNet
(tools/custom_op_defs.py), so both runtimes run the same operator code."""
from __future__ import annotations

import minimx as mx
from tools import custom_op_defs

custom_op_defs.register(mx)


def build_customnet() -> mx.sym.Symbol:
    """FC, a scaled relu and FC, then the softmax loss (the script's `build_customnet`)."""
    return custom_op_defs.build_customnet(mx)
