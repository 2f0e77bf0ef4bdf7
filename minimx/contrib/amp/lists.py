"""MXNet 1.9.1's bfloat16 operator lists, read from `minimx/configs/amp_bf16.yaml`."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

import yaml

from ...base import BFLOAT16, MinimxError, as_dtype

CONFIG = ("minimx", "configs/amp_bf16.yaml")
TARGET_DTYPES = ("bfloat16",)


def check_target(target_dtype: object) -> None:
    """Refuse any target but bfloat16 (by name or dtype, MXNet's structured one too)."""
    try:
        ok = as_dtype(target_dtype) == BFLOAT16
    except MinimxError:
        ok = False
    if not ok:
        raise MinimxError(f"target_dtype {target_dtype!r}: only {', '.join(TARGET_DTYPES)} "
                          "is supported (float16 AMP needs a GPU in MXNet)")


@dataclass(frozen=True)
class Lists:
    """The lists of one target dtype (see the YAML for what each means)."""

    target_dtype_ops: tuple[str, ...]
    target_fp32_ops: tuple[str, ...]
    fp32_ops: tuple[str, ...]
    conditional_fp32_ops: tuple[tuple[str, str, tuple[str, ...]], ...]
    widest_type_casts: tuple[str, ...]
    loss_output_functions: tuple[str, ...]
    use_fp32_params: dict[str, tuple[str, ...]]


def lists(target_dtype: object = "bfloat16") -> Lists:
    """The packaged lists for `target_dtype`."""
    check_target(target_dtype)
    return _packaged()


@cache
def _packaged() -> Lists:
    data = yaml.safe_load(resources.files(CONFIG[0]).joinpath(CONFIG[1]).read_text())
    return Lists(
        target_dtype_ops=tuple(data["target_dtype_ops"]),
        target_fp32_ops=tuple(data["target_fp32_ops"]),
        fp32_ops=tuple(data["fp32_ops"]),
        conditional_fp32_ops=tuple((op, param, tuple(values))
                                   for op, param, values in data["conditional_fp32_ops"]),
        widest_type_casts=tuple(data["widest_type_casts"]),
        loss_output_functions=tuple(data["loss_output_functions"]),
        use_fp32_params={op: tuple(names) for op, names in data["use_fp32_params"].items()})


# MXNet's accessors (mx.contrib.amp.list_*), as lists.
def list_lp16_ops(target_dtype: object) -> list[str]:
    return list(lists(target_dtype).target_dtype_ops)


def list_fp32_ops(target_dtype: object) -> list[str]:
    return list(lists(target_dtype).fp32_ops)


def list_lp16_fp32_ops(target_dtype: object) -> list[str]:
    return list(lists(target_dtype).target_fp32_ops)


def list_conditional_fp32_ops(target_dtype: object) -> list[tuple[str, str, list[str]]]:
    return [(op, param, list(values))
            for op, param, values in lists(target_dtype).conditional_fp32_ops]


def list_widest_type_cast(target_dtype: object) -> list[str]:
    return list(lists(target_dtype).widest_type_casts)


def list_loss_output_functions(target_dtype: object) -> list[str]:
    return list(lists(target_dtype).loss_output_functions)


def list_lp16_use_fp32_params(target_dtype: object) -> dict[str, list[str]]:
    return {op: list(names) for op, names in lists(target_dtype).use_fp32_params.items()}
