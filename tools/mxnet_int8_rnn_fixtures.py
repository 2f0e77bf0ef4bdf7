"""The ``int8_rnn`` fixture group (tools/mxnet_fixtures.py writes it with MXNet 1.9.1):
MXNet's INT8 LSTM, `_contrib_quantized_rnn`, run imperatively.

- ``quantized_rnn.json``: per case its RNN parameters, data scale and shift.
- ``quantized_rnn.npz``: per case ``<case>:data`` (uint8), ``:parameters``, ``:state``,
  ``:state_cell`` and MXNet's outputs ``:out<i>``.

oneDNN 2.4 (MXNet 1.9.1's) cannot reorder the LSTM's int8 weights for its VNNI kernels
("could not create a primitive descriptor for a reorder primitive"), so on such CPUs
the operator runs only with ``DNNL_MAX_CPU_ISA`` below them: the group reruns itself
with ``DNNL_MAX_CPU_ISA=AVX512_CORE`` in a child process. Runs with MXNet's Python only.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ISA = "AVX512_CORE"
SEED = 21
# name: (num_layers, bidirectional, input size, state size, steps, batch, state_outputs).
# One layer; two fused (input as wide as the state); a first layer then a fused one;
# bidirectional (one and two layers); no state outputs.
CASES = {"one_layer": (1, False, 4, 3, 5, 2, True),
         "two_fused": (2, False, 6, 6, 4, 3, True),
         "two_layers": (2, False, 5, 4, 4, 2, True),
         "bidirectional": (1, True, 4, 3, 3, 2, True),
         "bidirectional_two": (2, True, 4, 3, 4, 2, True),
         "no_states": (1, False, 3, 5, 3, 1, False)}
DATA_SCALE, DATA_SHIFT = 255 / 4.0, 120.0


def _cases(out: Path) -> None:
    import mxnet as mx
    rng = np.random.RandomState(SEED)
    arrays, specs = {}, {}
    for name, (layers, bidir, width, hidden, steps, batch, states) in CASES.items():
        attrs = {"state_size": hidden, "num_layers": layers, "bidirectional": bidir,
                 "mode": "lstm", "state_outputs": states}
        size = mx.sym.RNN(*map(mx.sym.var, "xphc"), **attrs).infer_shape(
            x=(steps, batch, width))[0][1][0]
        cells = layers * (2 if bidir else 1)
        feeds = {"data": rng.randint(0, 256, (steps, batch, width)).astype("uint8"),
                 "parameters": rng.uniform(-0.5, 0.5, size).astype("float32"),
                 "state": rng.uniform(-1, 1, (cells, batch, hidden)).astype("float32"),
                 "state_cell": rng.uniform(-1, 1, (cells, batch, hidden)).astype("float32")}
        outs = mx.nd.contrib.quantized_rnn(
            *(mx.nd.array(v, dtype=v.dtype) for v in feeds.values()),
            mx.nd.array([DATA_SCALE]), mx.nd.array([DATA_SHIFT]), **attrs)
        outs = outs if isinstance(outs, list) else [outs]
        arrays.update({f"{name}:{k}": v for k, v in feeds.items()})
        arrays.update({f"{name}:out{i}": o.asnumpy() for i, o in enumerate(outs)})
        specs[name] = {"attrs": attrs, "data_scale": DATA_SCALE, "data_shift": DATA_SHIFT}
    np.savez_compressed(out / "quantized_rnn.npz", **arrays)
    (out / "quantized_rnn.json").write_text(json.dumps(
        {"isa": ISA, "seed": SEED, "cases": specs}, indent=1) + "\n")


def write_int8_rnn(out: Path) -> None:
    """The group, written by a child process that runs oneDNN at ISA."""
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, __file__, str(out)], check=True,
                   env={**os.environ, "DNNL_MAX_CPU_ISA": ISA})


if __name__ == "__main__":
    _cases(Path(sys.argv[1]))
