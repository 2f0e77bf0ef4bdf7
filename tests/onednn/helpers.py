"""Running one primitive on numpy arrays through a Plan, and shared settings."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, settings

from minimx import onednn

# fp32 against a float64 reference: sums of a few hundred products.
RTOL, ATOL = 1e-4, 1e-4

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def random(shape, seed=0, low=-1.0, high=1.0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)


def run(op: onednn.Primitive, inputs: dict[str, np.ndarray],
        dst: np.ndarray | None = None) -> np.ndarray:
    """op applied to plain arrays: weights in MXNet layout go through
    onednn.constant, everything else is a plan input reordered to op's layout.
    ``dst`` is the initial content of the output (for a sum post-op)."""
    plan = onednn.Plan(op.kind)
    arrays, slots = [], {}
    for name in op.args:
        if name == "dst":
            continue
        if name == "weights":
            slots[name] = plan.constant(onednn.constant(op, name, inputs[name]))
            continue
        array = inputs[name].reshape(op.desc(name).shape)
        arrays.append(array)
        slots[name] = plan.reorder(plan.input(array.shape), op.desc(name))
    out = None
    if dst is not None:
        arrays.append(dst)
        out = plan.reorder(plan.input(dst.shape), op.desc("dst"), copy=True)
    plan.output(plan.add(op, dst=out, **slots))
    (result,) = plan.run(arrays)
    return result


def run_requantized(op: onednn.Primitive, x: np.ndarray, w: np.ndarray,
                    bias: np.ndarray | None, factor: np.ndarray, dst: np.dtype) -> np.ndarray:
    """A kernel of minimx's own INT8 convolutions (`dw8_conv`, `pw8_conv`) in a
    plan: NCHW 8-bit data in, weights in MXNet's layout, the factor per
    channel, NCHW `dst` out."""
    plan = onednn.Plan(op.kind)
    src = plan.reorder(plan.input(x.shape, dtype=x.dtype), op.desc("src"))
    args = {"src": src, "weights": plan.constant(onednn.constant(op, "weights", w)),
            "post0_src1": plan.constant(onednn.constant(op, "post0_src1",
                                                        factor.reshape(1, -1, 1, 1)))}
    if bias is not None:
        args["bias"] = plan.constant(onednn.constant(op, "bias", bias))
    y = plan.add(op, **args)
    plan.output(plan.reorder(y, onednn.MemoryDesc.plain(y.shape, dst)))
    (out,) = plan.run([x])
    return out


def run_with_threads(module: str, function: str, threads: int) -> None:
    """Call ``function()`` of test module ``module`` in a fresh interpreter with
    ``threads`` OpenMP threads (libgomp reads OMP_NUM_THREADS when it loads,
    and CI runs one): for kernels of minimx's own that split work among them."""
    done = subprocess.run(
        [sys.executable, "-c", f"from {module} import {function}; {function}()"],
        env={**os.environ, "OMP_NUM_THREADS": str(threads)}, capture_output=True, text=True,
        timeout=300, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
