"""ONNX Runtime or OpenVINO side of the throughput benchmarks; runs in the runtime's venv.

Usage: <venv python> peer_worker.py RUNTIME ONNX BATCH [--precision fp32|bf16]
       [--profile PREFIX]
RUNTIME ``ort``: ONNX Runtime, CPU execution provider, ORT_ENABLE_ALL graph
optimizations, OMP_NUM_THREADS intra-op threads, sequential execution;
``openvino``: OpenVINO on the CPU plugin, the latency hint, OMP_NUM_THREADS
inference threads, INFERENCE_PRECISION_HINT f32 (``--precision bf16``: bf16).
The ONNX file is read with its batch dimension set to BATCH; the input is
uniform random until the driver sends one. ``--profile`` writes the per-node
profile to PREFIX*.json when the worker ends: ONNX Runtime's own profile file;
for OpenVINO (PERF_COUNT on), PREFIX.json holds one list per forward of its
executed nodes, each ``[name, type, kernel, microseconds]``. Then it serves
forwards (worker_protocol.py).
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np
from worker_protocol import serve_forwards  # beside this script: one protocol for all workers

THREADS = int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1))


class OrtSession:
    """An ONNX Runtime inference session (worker_protocol.Session)."""

    def __init__(self, onnx: str, batch: int, precision: str, profile: str | None) -> None:
        import onnxruntime as ort  # only in ONNX Runtime's venv
        if precision != "fp32":
            raise SystemExit("peer_worker: ONNX Runtime runs fp32 only here")
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.intra_op_num_threads = THREADS
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        if profile:
            opts.enable_profiling = True
            opts.profile_file_prefix = profile
        self.session = ort.InferenceSession(onnx, opts, providers=["CPUExecutionProvider"])
        self.name = self.session.get_inputs()[0].name
        self.data = np.random.default_rng(0).random((batch, 3, 224, 224), np.float32)
        self.out: np.ndarray | None = None

    def forward(self) -> None:
        self.out = self.session.run(None, {self.name: self.data})[0]

    def set_input(self, data: np.ndarray) -> None:
        self.data = np.ascontiguousarray(data, np.float32)

    def output(self) -> np.ndarray:
        assert self.out is not None  # the worker ran forwards before it was ready
        return self.out

    def close(self) -> None:
        if self.session.get_session_options().enable_profiling:
            self.session.end_profiling()


class OpenVinoSession:
    """An OpenVINO compiled model and its infer request (worker_protocol.Session)."""

    def __init__(self, onnx: str, batch: int, precision: str, profile: str | None) -> None:
        import openvino as ov  # only in OpenVINO's venv
        core = ov.Core()
        model = core.read_model(onnx)
        model.reshape([batch, 3, 224, 224])
        config = {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": THREADS,
                  "INFERENCE_PRECISION_HINT": {"fp32": "f32", "bf16": "bf16"}[precision],
                  "PERF_COUNT": bool(profile)}
        self.request = core.compile_model(model, "CPU", config).create_infer_request()
        self.set_input(np.random.default_rng(0).random((batch, 3, 224, 224), np.float32))
        self.profile = profile
        self.forwards: list[list[list]] = []   # with a profile: each forward's nodes

    def forward(self) -> None:
        self.request.infer()
        if self.profile:
            self.forwards.append([[p.node_name, p.node_type, p.exec_type,
                                   p.real_time.total_seconds() * 1e6]
                                  for p in self.request.profiling_info
                                  if p.status == p.Status.EXECUTED])

    def set_input(self, data: np.ndarray) -> None:
        self.data = np.ascontiguousarray(data, np.float32)   # the tensor shares its memory
        import openvino as ov  # only in OpenVINO's venv
        self.request.set_input_tensor(ov.Tensor(self.data, shared_memory=True))

    def output(self) -> np.ndarray:
        return np.array(self.request.get_output_tensor(0).data)

    def close(self) -> None:
        if self.profile:
            Path(f"{self.profile}.json").write_text(json.dumps(self.forwards))


RUNTIMES = {"ort": OrtSession, "openvino": OpenVinoSession}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runtime", choices=RUNTIMES)
    parser.add_argument("onnx")
    parser.add_argument("batch", type=int)
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--profile", help="the per-node profile's file prefix")
    args = parser.parse_args()
    session = RUNTIMES[args.runtime](args.onnx, args.batch, args.precision, args.profile)
    try:
        serve_forwards(session)
    finally:
        session.close()


if __name__ == "__main__":
    main()
