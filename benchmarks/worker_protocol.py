"""The protocol every benchmark worker process speaks (MXNet, ONNX Runtime, OpenVINO).

A worker runs in its own virtual environment and imports only this module
from minimx's benchmarks (no minimx, no MXNet: it must import in any venv).
It sets itself up, prints "ready", then answers each line on stdin:

- ``N`` (a number): runs N forwards and prints the JSON list of their times
  in seconds;
- ``input PATH``: takes the ``.npy`` array at PATH as its input, or the
  ``.npz`` arrays at PATH as its inputs by name (a model with several), prints "ok";
- ``output PATH``: saves its first output of the last forward to PATH, prints "ok".
"""
from __future__ import annotations

import json
import sys
import time
from typing import Protocol

import numpy as np


class Session(Protocol):
    """One bound model, as a worker serves it."""

    def forward(self) -> None:
        """One inference forward, finished when it returns."""

    def set_input(self, data: np.ndarray | dict[str, np.ndarray]) -> None:
        """Use `data` as the input (or the inputs by name) of the next forwards."""

    def output(self) -> np.ndarray:
        """The first output of the last forward."""


def serve_forwards(session: Session) -> None:
    """Warm `session` up, print "ready", then answer the lines on stdin (see above)."""
    for _ in range(2):
        session.forward()
    print("ready", flush=True)
    for line in sys.stdin:
        command, _, path = line.strip().partition(" ")
        if command == "input":
            if path.endswith(".npz"):
                with np.load(path) as named:
                    session.set_input(dict(named))
            else:
                session.set_input(np.load(path))
            print("ok", flush=True)
        elif command == "output":
            np.save(path, session.output())
            print("ok", flush=True)
        else:
            times = []
            for _ in range(int(command)):
                start = time.perf_counter()
                session.forward()
                times.append(time.perf_counter() - start)
            print(json.dumps(times), flush=True)
