"""bfloat16 automatic mixed precision, as ``mxnet.contrib.amp`` (inference: symbols).

`convert_symbol` inserts ``amp_cast`` / ``amp_multicast`` nodes as MXNet 1.9.1's
``ReducePrecision`` pass does; `convert_model` also converts the parameters.
The operator lists are data (`minimx/configs/amp_bf16.yaml`), read by `lists`.
"""
import sys

from .convert import convert_model, convert_symbol
from .lists import (
    list_conditional_fp32_ops,
    list_fp32_ops,
    list_loss_output_functions,
    list_lp16_fp32_ops,
    list_lp16_ops,
    list_lp16_use_fp32_params,
    list_widest_type_cast,
)

__all__ = ["convert_model", "convert_symbol", "list_conditional_fp32_ops", "list_fp32_ops",
           "list_loss_output_functions", "list_lp16_fp32_ops", "list_lp16_ops",
           "list_lp16_use_fp32_params", "list_widest_type_cast"]

# MXNet's functions live in `mxnet.contrib.amp.amp`; scripts import them from there.
amp = sys.modules[__name__]
