"""File formats: MXNet's binary NDArray list (``.params``) in pure numpy."""
from .params_file import load_arrays, save_arrays

__all__ = ["load_arrays", "save_arrays"]
