"""The cases of the ``random_ops`` fixture group (tools/mxnet_fixtures.py writes them with
MXNet 1.9.1, as ``tensor_ops``): the deterministic operators beside the samplers, whose
values and gradients can be MXNet's exactly - the densities `_random_pdf_*` (is_log both
ways, parameter sets with several samples each, the Dirichlet's vectors) and the modulo
family on negative operands (the sign rule), zero divisors and integer dtypes.

Runs with MXNet's Python only (numpy here; no minimx import).
"""
from __future__ import annotations

import numpy as np

Case = tuple[str, str, dict, list[np.ndarray]]


def _pdf_cases(rng: np.random.RandomState) -> list[Case]:
    def pos(*shape: int, low: float = 0.5, high: float = 3.0) -> np.ndarray:
        return rng.uniform(low, high, shape).astype("float32")

    def counts(*shape: int) -> np.ndarray:
        return rng.randint(0, 6, shape).astype("float32")

    x = rng.normal(0, 1.5, (2, 3, 4)).astype("float32")
    simplex = rng.dirichlet([1.0, 2.0, 3.0], (2, 4)).astype("float32")
    return [
        ("pdf_uniform", "_random_pdf_uniform", {}, [x, pos(2) - 4, pos(2)]),
        ("pdf_uniform_log", "_random_pdf_uniform", {"is_log": "True"}, [x, pos(2, 3) - 4,
                                                                       pos(2, 3)]),
        ("pdf_normal", "_random_pdf_normal", {}, [x, rng.normal(0, 1, 2).astype("float32"),
                                                  pos(2)]),
        ("pdf_normal_log", "_random_pdf_normal", {"is_log": "True"},
         [x, rng.normal(0, 1, (2, 3)).astype("float32"), pos(2, 3)]),
        ("pdf_gamma", "_random_pdf_gamma", {}, [pos(2, 5), pos(2), pos(2)]),
        ("pdf_gamma_log", "_random_pdf_gamma", {"is_log": "True"}, [pos(3, 2, 2), pos(3),
                                                                   pos(3)]),
        ("pdf_exponential", "_random_pdf_exponential", {}, [pos(2, 4), pos(2)]),
        ("pdf_exponential_log", "_random_pdf_exponential", {"is_log": "True"},
         [pos(2, 4), pos(2)]),
        ("pdf_poisson", "_random_pdf_poisson", {}, [counts(2, 5), pos(2)]),
        ("pdf_poisson_log", "_random_pdf_poisson", {"is_log": "True"}, [counts(3, 4), pos(3)]),
        ("pdf_negative_binomial", "_random_pdf_negative_binomial", {},
         [counts(2, 5), pos(2), pos(2, low=0.2, high=0.8)]),
        ("pdf_negative_binomial_log", "_random_pdf_negative_binomial", {"is_log": "True"},
         [counts(2, 3), pos(2), pos(2, low=0.2, high=0.8)]),
        ("pdf_generalized_negative_binomial", "_random_pdf_generalized_negative_binomial", {},
         [counts(2, 5), pos(2), pos(2, low=0.2, high=1.5)]),
        ("pdf_generalized_negative_binomial_log", "_random_pdf_generalized_negative_binomial",
         {"is_log": "True"}, [counts(2, 3), pos(2), pos(2, low=0.2, high=1.5)]),
        ("pdf_dirichlet", "_random_pdf_dirichlet", {}, [simplex, pos(2, 3)]),
        ("pdf_dirichlet_log", "_random_pdf_dirichlet", {"is_log": "True"},
         [simplex, pos(2, 3)]),
        ("pdf_dirichlet_one_vector", "_random_pdf_dirichlet", {}, [simplex[0, 0], pos(3)]),
    ]


def _mod_cases(rng: np.random.RandomState) -> list[Case]:
    # Operands of every sign, a zero divisor, and quotients away from integers (where
    # the gradient -floor(a / b) jumps).
    a = np.array([-7.5, 7.25, -7.0, 7.0, 5.5, -5.5, 0.0, 3.0], "float32")
    b = np.array([2.0, -3.0, -3.0, 3.0, 2.25, 2.25, 3.0, 0.0], "float32")
    ints = {dtype: (a.astype(dtype), b.astype(dtype)) for dtype in ("int32", "int64")}
    row = rng.uniform(-4, 4, (1, 3)).astype("float32")
    column = np.array([[1.75], [-2.5]], "float32")
    return [
        ("mod_float32", "_mod", {}, [a, np.where(b == 0, 1.5, b).astype("float32")]),
        ("mod_zero_divisor", "_mod", {}, [a, b]),
        ("mod_float64", "_mod", {}, [a.astype("float64"),
                                     np.where(b == 0, 1.5, b).astype("float64")]),
        ("mod_int32", "_mod", {}, list(ints["int32"])),
        ("mod_int64", "_mod", {}, list(ints["int64"])),
        ("broadcast_mod", "broadcast_mod", {}, [row, column]),
        ("mod_scalar", "_mod_scalar", {"scalar": "2.5"}, [a]),
        ("mod_scalar_negative", "_mod_scalar", {"scalar": "-2.5"}, [a]),
        ("mod_scalar_int", "_mod_scalar", {"scalar": "3"}, [ints["int32"][0]]),
        ("rmod_scalar", "_rmod_scalar", {"scalar": "5.0"}, [np.where(a == 0, 1.5, a)
                                                            .astype("float32")]),
        ("rmod_scalar_int", "_rmod_scalar", {"scalar": "-7"}, [ints["int64"][1]]),
    ]


def random_op_cases(rng: np.random.RandomState) -> list[Case]:
    """(case, operator, attributes, inputs) of the densities and the modulo family."""
    return _pdf_cases(rng) + _mod_cases(rng)
