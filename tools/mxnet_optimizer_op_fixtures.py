"""The ``optimizer_ops`` fixture group (tools/mxnet_fixtures.py runs it with MXNet 1.9.1):
the optimizer update operators (``sgd_update`` ... ``_adamw_update``, ``mp_*``) on fixed
weights, gradients and states, three steps each with ``out=weight`` (``out=`` the weights
of a ``multi_*`` update), with weight decay, rescaling and clipping. Writes `cases.json`
(operator, attributes, step count, the weights' input indices) and
`cases.npz`: `<case>:in_<i>` (the inputs before the first step; each step gets a copy of the
gradient) and
`<case>:step<k>_<i>` (every input after step k, from 1; `:step<k>_out` for LAMB's phase 1,
whose output is not the weight). ``t`` is the step number where the operator takes one.
Also `contrib_multi.json` / `.npz`: `mx.nd.contrib`'s fronts of the multi-tensor AdamW and
LAMB updates (`CONTRIB_MULTI_CASES`).

Runs with MXNet's Python only (no minimx import).
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import mxnet as mx
import numpy as np

Case = tuple[str, str, dict, list[np.ndarray]]
STEPS = 3
TIMED = ("ftml_update", "lamb_update_phase1", "mp_lamb_update_phase1")
_COMMON = {"wd": "0.05", "rescale_grad": "0.5", "clip_gradient": "0.6"}


def optimizer_op_cases(rng: np.random.RandomState) -> list[Case]:
    def floats(low: float = -1.0, high: float = 1.0, dtype: str = "float32") -> np.ndarray:
        return rng.uniform(low, high, (3, 4)).astype(dtype)

    def zeros() -> np.ndarray:
        return np.zeros((3, 4), "float32")

    w16, g16 = floats(dtype="float16"), floats(-2.0, 2.0, "float16")
    return [
        ("sgd", "sgd_update", {"lr": "0.1"}, [floats(), floats(-2, 2)]),
        ("sgd_wd_clip", "sgd_update", {"lr": "0.1", **_COMMON}, [floats(), floats(-3, 3)]),
        ("sgd_mom", "sgd_mom_update", {"lr": "0.1", "momentum": "0.9", **_COMMON},
         [floats(), floats(-3, 3), floats(-0.1, 0.1)]),
        ("nag_mom", "nag_mom_update", {"lr": "0.1", "momentum": "0.9", **_COMMON},
         [floats(), floats(-3, 3), floats(-0.1, 0.1)]),
        ("adam", "adam_update", {"lr": "0.01", "beta1": "0.8", "epsilon": "1e-6", **_COMMON},
         [floats(), floats(-3, 3), zeros(), zeros()]),
        ("rmsprop", "rmsprop_update", {"lr": "0.01", "gamma1": "0.9", "clip_weights": "0.9",
                                       **_COMMON}, [floats(), floats(-3, 3), zeros()]),
        ("rmspropalex", "rmspropalex_update",
         {"lr": "0.01", "gamma1": "0.9", "gamma2": "0.8", "epsilon": "1e-4", **_COMMON},
         [floats(), floats(-3, 3), zeros(), zeros(), zeros()]),
        ("ftrl", "ftrl_update", {"lr": "0.2", "lamda1": "0.05", "beta": "0.5", **_COMMON},
         [floats(), floats(-3, 3), zeros(), zeros()]),
        ("ftml", "ftml_update", {"lr": "0.05", "beta1": "0.7", "wd": "0.05",
                                 "rescale_grad": "0.5", "clip_grad": "0.6"},
         [floats(), floats(-3, 3), zeros(), zeros(), zeros()]),
        ("signsgd", "signsgd_update", {"lr": "0.1", **_COMMON}, [floats(), floats(-2, 2)]),
        ("signum", "signum_update", {"lr": "0.1", "momentum": "0.7", "wd_lh": "0.1",
                                     **_COMMON}, [floats(), floats(-3, 3), zeros()]),
        ("lamb_phase1", "lamb_update_phase1", {"beta1": "0.8", **_COMMON},
         [floats(), floats(-3, 3), zeros(), zeros()]),
        ("lamb_phase1_uncorrected", "lamb_update_phase1",
         {"bias_correction": "False", "wd": "0.1"}, [floats(), floats(-3, 3), zeros(), zeros()]),
        ("lamb_phase2", "lamb_update_phase2", {"lr": "0.1", "upper_bound": "1.5"},
         [floats(), floats(), np.array([2.5], "float32"), np.array([1.25], "float32")]),
        ("lamb_phase2_lower", "lamb_update_phase2", {"lr": "0.1", "lower_bound": "4"},
         [floats(), floats(), np.array([2.5], "float32"), np.array([1.25], "float32")]),
        ("adamw", "_adamw_update", {"lr": "0.01", "eta": "0.5", "wd": "0.1",
                                    "clip_gradient": "0.6"},
         [floats(), floats(-3, 3), zeros(), zeros(), np.array([0.5], "float32")]),
        ("adamw_skip", "_adamw_update", {"lr": "0.01", "eta": "1.0"},
         [floats(), floats(), zeros(), zeros(), np.array([np.inf], "float32")]),
        ("mp_sgd", "mp_sgd_update", {"lr": "0.1", **_COMMON},
         [w16, g16, w16.astype("float32")]),
        ("mp_sgd_mom", "mp_sgd_mom_update", {"lr": "0.1", "momentum": "0.9", **_COMMON},
         [w16, g16, zeros(), w16.astype("float32")]),
        ("mp_nag_mom", "mp_nag_mom_update", {"lr": "0.1", "momentum": "0.9", **_COMMON},
         [w16, g16, zeros(), w16.astype("float32")]),
        *_multi_cases(floats, zeros),
    ]


def _multi_cases(floats: Callable[..., np.ndarray], zeros: Callable[[], np.ndarray]
                 ) -> list[Case]:
    """The multi-tensor SGD updates (two weights, their own lr and wd) and the mp_ LAMB
    and AdamW variants."""
    w16, v16, g16, h16 = (floats(dtype="float16"), floats(dtype="float16"),
                          floats(-2.0, 2.0, "float16"), floats(-2.0, 2.0, "float16"))
    multi = {"num_weights": "2", "lrs": "(0.1, 0.2)", "wds": "(0.05, 0.0)",
             "rescale_grad": "0.5", "clip_gradient": "0.6"}
    mom = {**multi, "momentum": "0.9"}
    return [
        ("multi_sgd", "multi_sgd_update", multi, [floats(), floats(-3, 3), floats(),
                                                  floats(-3, 3)]),
        ("multi_sgd_mom", "multi_sgd_mom_update", mom,
         [floats(), floats(-3, 3), zeros(), floats(), floats(-3, 3), floats(-0.1, 0.1)]),
        ("multi_mp_sgd", "multi_mp_sgd_update", multi,
         [w16, g16, w16.astype("float32"), v16, h16, v16.astype("float32")]),
        ("multi_mp_sgd_mom", "multi_mp_sgd_mom_update", mom,
         [w16, g16, zeros(), w16.astype("float32"), v16, h16, zeros(), v16.astype("float32")]),
        ("multi_sgd_one", "multi_sgd_update", {"lrs": "(0.1,)", "wds": "(0.1,)"},
         [floats(), floats(-3, 3)]),
        ("mp_lamb_phase1", "mp_lamb_update_phase1", {"beta1": "0.8", **_COMMON},
         [w16, g16, zeros(), zeros(), w16.astype("float32")]),
        ("mp_lamb_phase2", "mp_lamb_update_phase2", {"lr": "0.1", "upper_bound": "1.5"},
         [w16, floats(), np.array([2.5], "float32"), np.array([1.25], "float32"),
          w16.astype("float32")]),
        ("mp_adamw", "_mp_adamw_update", {"lr": "0.01", "eta": "0.5", "wd": "0.1",
                                          "clip_gradient": "0.6"},
         [w16, g16, zeros(), zeros(), w16.astype("float32"), np.array([0.5], "float32")]),
    ]


# mx.nd.contrib's Python fronts of the multi-tensor AdamW and LAMB updates, on two weights
# of shapes SHAPES, with out=weights (MXNet 1.9.1 fails without: "shape must have a valid
# ndim"): (case, function, the lists it takes, its keyword arguments - a list for
# rescale_grad is an NDArray; step_count grows by one each step -, float16 weights).
# Written to `contrib_multi.json` / `contrib_multi.npz`:
# `<case>:in:<list>:<i>` and, after step k, `<case>:step<k>:<list>:<i>` (but the gradients,
# which each step takes a copy of; the function returns the weights it wrote).
SHAPES = [(3, 4), (5,)]
_LISTS = ("weights", "grads", "mean", "var")
CONTRIB_MULTI_CASES = [
    ("adamw", "multi_adamw_update", _LISTS,
     {"rescale_grad": 0.5, "lrs": [0.01, 0.02], "wds": [0.1, 0.0], "etas": [1.0, 0.5],
      "beta1": 0.8, "clip_gradient": 0.6}, False),
    ("adamw_array_rescale", "multi_adamw_update", _LISTS,
     {"rescale_grad": [0.25], "lrs": [0.1, 0.05], "wds": [0.0, 0.2], "etas": [0.5, 1.0],
      "epsilon": 1e-6, "name": "adamw"}, False),
    ("adamw_skipped", "multi_adamw_update", _LISTS,
     {"rescale_grad": [float("inf")], "lrs": [0.1, 0.1], "wds": [0.0, 0.0],
      "etas": [1.0, 1.0]}, False),
    ("mp_adamw", "multi_mp_adamw_update", (*_LISTS, "weights32"),
     {"rescale_grad": 2.0, "lrs": [0.01, 0.03], "wds": [0.05, 0.1], "etas": [1.0, 1.0],
      "beta2": 0.9, "clip_gradient": 1.0}, True),
    ("lamb", "multi_lamb_update", _LISTS,
     {"step_count": [1, 3], "lrs": [0.01, 0.05], "wds": [0.01, 0.0], "beta1": 0.8,
      "rescale_grad": 0.5, "clip_gradient": 0.6, "upper_bound": 1.5}, False),
    ("lamb_uncorrected", "multi_lamb_update", _LISTS,
     {"step_count": [2, 2], "lrs": [0.1, 0.05], "wds": [0.0, 0.1], "bias_correction": False,
      "lower_bound": 4.0}, False),
    ("mp_lamb", "multi_mp_lamb_update", (*_LISTS, "weights32"),
     {"step_count": [1, 1], "lrs": [0.02, 0.01], "wds": [0.1, 0.01], "epsilon": 1e-4},
     True),
]


def _contrib_multi_inputs(rng: np.random.RandomState, lists: tuple[str, ...], half: bool
                          ) -> dict[str, list[np.ndarray]]:
    weights = [rng.uniform(-1, 1, s).astype("float16" if half else "float32") for s in SHAPES]
    made = {"weights": weights,
            "grads": [rng.uniform(-3, 3, w.shape).astype(w.dtype) for w in weights],
            "mean": [rng.uniform(-0.1, 0.1, s).astype("float32") for s in SHAPES],
            "var": [rng.uniform(0, 0.1, s).astype("float32") for s in SHAPES],
            "weights32": [w.astype("float32") for w in weights]}
    return {name: made[name] for name in lists}


def write_contrib_multi(out: Path) -> None:
    rng = np.random.RandomState(23)
    arrays, cases = {}, {}
    for case, fn_name, lists, kwargs, half in CONTRIB_MULTI_CASES:
        inputs = _contrib_multi_inputs(rng, lists, half)
        arrays.update({f"{case}:in:{n}:{i}": a for n, group in inputs.items()
                       for i, a in enumerate(group)})
        nds = {n: [mx.nd.array(a, dtype=a.dtype) for a in group] for n, group in inputs.items()}
        for step in range(1, STEPS + 1):
            given = dict(kwargs)
            if isinstance(given.get("rescale_grad"), list):
                given["rescale_grad"] = mx.nd.array(given["rescale_grad"])
            if "step_count" in given:
                given["step_count"] = [c + step - 1 for c in given["step_count"]]
            # A fresh gradient each step: MXNet's AdamW rescales and clips it in place.
            args = [[a.copy() for a in group] if n == "grads" else group
                    for n, group in nds.items()]
            returned = getattr(mx.nd.contrib, fn_name)(*args, out=nds["weights"], **given)
            assert all(r is w for r, w in zip(returned, nds["weights"], strict=True))
            arrays.update({f"{case}:step{step}:{n}:{i}": a.asnumpy()
                           for n, group in nds.items() if n != "grads"
                           for i, a in enumerate(group)})
        cases[case] = {"fn": fn_name, "lists": list(lists), "kwargs": kwargs, "steps": STEPS}
    np.savez_compressed(out / "contrib_multi.npz", **arrays)
    (out / "contrib_multi.json").write_text(json.dumps(cases, indent=1, sort_keys=True) + "\n")


def weight_indices(op: str, count: int) -> list[int]:
    """Where the weights are among `count` inputs: every stride-th of a multi_ update."""
    stride = 2 + ("_mom_" in op) + ("_mp_" in op) if op.startswith("multi_") else count
    return list(range(0, count, stride))


def write_optimizer_ops(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    arrays, cases = {}, {}
    for case, op, attrs, inputs in optimizer_op_cases(np.random.RandomState(19)):
        nds = [mx.nd.array(a, dtype=a.dtype) for a in inputs]
        arrays.update({f"{case}:in_{i}": a for i, a in enumerate(inputs)})
        weights = weight_indices(op, len(inputs))
        for step in range(1, STEPS + 1):
            kwargs = dict(attrs, **({"t": str(step)} if op in TIMED else {}))
            # MXNet's frontend shows _adamw_update and _mp_adamw_update only in contrib.
            fn = (getattr(mx.nd.contrib, op[1:]) if op.endswith("adamw_update")
                  else getattr(mx.nd, op))
            # A fresh gradient each step: MXNet's AdamW rescales and clips it in place.
            args = [nds[0], nds[1].copy(), *nds[2:]]
            if op.endswith("lamb_update_phase1"):
                arrays[f"{case}:step{step}_out"] = fn(*args, **kwargs).asnumpy()
            else:
                targets = [nds[i] for i in weights]
                fn(*args, out=targets if len(targets) > 1 else targets[0], **kwargs)
            arrays.update({f"{case}:step{step}_{i}": a.asnumpy() for i, a in enumerate(nds)})
        cases[case] = {"op": op, "attrs": attrs, "steps": STEPS, "weights": weights}
    np.savez_compressed(out / "cases.npz", **arrays)
    (out / "cases.json").write_text(json.dumps(cases, indent=1, sort_keys=True) + "\n")
    write_contrib_multi(out)
