"""fp32 inference throughput: minimx DNNL against MXNet 1.9.1, ONNX Runtime and OpenVINO.

For each model and batch size, every path is set up once and then timed in
alternating rounds (DNNL, MXNet MKLDNN, ... then again), so that drift in the
machine's state hits all paths alike; the figure is batch / median forward
time, and the ratios come from the same run. The others run in their own
virtual environments (MINIMX_MXNET_PYTHON, MINIMX_ORT_PYTHON,
MINIMX_OPENVINO_PYTHON; default /work/venvs/{mxnet191,ort,openvino}/bin/python)
in worker processes (worker_protocol.py); a missing one's columns are
skipped. All run the same weights on the same input: MXNet's checkpoint of
the gluon model (seeded random weights, He's scale) and its ONNX export from
MXNet's own exporter (peer_export.py, written once to --models-dir), and
every output is checked against minimx's before timing. Without MXNet's
venv, minimx runs its own zoo symbol with random weights alone. Before
timing, the script checks that the machine is quiet (load average, other
busy processes) and says so when it is not: with 2 cores, one busy process
makes oneDNN many times slower. OMP_NUM_THREADS defaults to the number of cores.
Under each row: the model's MAC floor at this CPU's float32 FMA peak
(roofline.py), the share of its rate minimx reaches (above 100% where
Winograd computes fewer products than a direct convolution), and the most a
direct-convolution runtime could lead the fastest other one by.

Run: python benchmarks/dnnl_throughput.py [--models ...] [--batches 1 16]
     [--rounds 5] [--numpy] [--mxnet-off] [--peers ort openvino]
     [--models-dir DIR] [--tolerance 1e-3]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", str(os.cpu_count() or 1))

import numpy as np  # noqa: E402
import roofline  # noqa: E402

import minimx as mx  # noqa: E402
from minimx import onednn  # noqa: E402

MXNET_PYTHON = os.environ.get("MINIMX_MXNET_PYTHON", "/work/venvs/mxnet191/bin/python")
PEER_PYTHON = {"ort": os.environ.get("MINIMX_ORT_PYTHON", "/work/venvs/ort/bin/python"),
               "openvino": os.environ.get("MINIMX_OPENVINO_PYTHON",
                                          "/work/venvs/openvino/bin/python")}
PEER_NAMES = {"ort": "ONNX Runtime", "openvino": "OpenVINO"}
HERE = Path(__file__).parent
WORKER = HERE / "dnnl_mxnet_worker.py"
WARMUP = 3
SETTLE = 0.1   # seconds between one path's forwards and the next path's
MODELS = ["resnet50_v1", "resnet18_v1", "mobilenet1.0", "mobilenetv2_1.0"]


def busy_processes(interval: float = 1.0) -> list[tuple[str, float]]:
    """Other processes using over 10% of a core during `interval` (Linux /proc)."""
    def ticks() -> dict[int, tuple[str, int]]:
        out = {}
        for d in Path("/proc").iterdir():
            if d.name.isdigit() and int(d.name) != os.getpid():
                try:
                    stat = (d / "stat").read_text()
                except OSError:
                    continue
                name = stat[stat.index("(") + 1:stat.rindex(")")]
                fields = stat[stat.rindex(")") + 2:].split()
                out[int(d.name)] = (name, int(fields[11]) + int(fields[12]))
        return out
    before = ticks()
    time.sleep(interval)
    after = ticks()
    hz = os.sysconf("SC_CLK_TCK")
    busy = [(name, (t - before[pid][1]) / hz / interval)
            for pid, (name, t) in after.items() if pid in before]
    return sorted([b for b in busy if b[1] > 0.1], key=lambda b: -b[1])


NOISY_ROUNDS: list[str] = []


def wait_quiet(limit: float = 60.0) -> None:
    """Wait (up to `limit` seconds) until no other process is busy; a round that
    starts on a busy machine anyway is counted and reported at the end."""
    deadline = time.monotonic() + limit
    while True:
        busy = busy_processes(0.3)
        if not busy:
            return
        if time.monotonic() > deadline:
            NOISY_ROUNDS.append(", ".join(f"{n} {c:.0%}" for n, c in busy))
            return


def quiet_check() -> None:
    load = os.getloadavg()[0]
    busy = busy_processes()
    cores = os.cpu_count()
    print(f"machine: {cores} cores; oneDNN {onednn.version()} dispatching to {onednn.isa()}; "
          f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}")
    # The load average also counts this script's own earlier work: only other
    # busy processes make the machine not quiet.
    if busy:
        print("WARNING: the machine is not quiet (busy: "
              + ", ".join(f"{n} {c:.0%}" for n, c in busy)
              + f"; 1-min load {load:.2f}): figures may be several times too low")
    else:
        print(f"machine quiet (no other busy process; 1-min load {load:.2f})")


def closing_check() -> None:
    """After the runs: say which rounds started on a busy machine, and check again."""
    if NOISY_ROUNDS:
        print(f"WARNING: {len(NOISY_ROUNDS)} round(s) started while other processes were "
              f"busy ({'; '.join(NOISY_ROUNDS[:3])})")
    quiet_check()


def initial_value(name: str, shape: tuple[int, ...]) -> np.ndarray:
    """A trained network's scale of values (as MXNet's Xavier init and BatchNorm
    defaults give): activations must not shrink into denormal floats, which
    would time the CPU's slow path instead of the kernels."""
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    if name.endswith(("gamma", "moving_var")):
        return np.ones(shape, np.float32)
    if name.endswith(("beta", "moving_mean", "bias")):
        return np.zeros(shape, np.float32)
    if name.endswith("weight"):
        fan_in = int(np.prod(shape[1:]))
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)
    return rng.random(shape, np.float32)


class Minimx:
    """A minimx executor for `model` at `batch`, partitioned by `backend` (with its
    `options`, such as DNNL's dtype) or not, with the weights of the MXNet
    checkpoint `prefix` (epoch 0) or random ones."""

    def __init__(self, model: str, batch: int, backend: str | None,
                 prefix: Path | None = None, **options: str) -> None:
        shape = (batch, 3, 224, 224)
        if prefix is None:
            sym, params = mx.models.get_model(model), {}
        else:
            sym, args, auxs = mx.model.load_checkpoint(str(prefix), 0)
            params = {**args, **auxs}
        if backend:
            sym = mx.subgraph.partition(sym, backend, shapes={"data": shape}, **options)
        self.ex = sym.simple_bind(mx.cpu(), grad_req="null", data=shape)
        for name, arr in {**self.ex.arg_dict, **self.ex.aux_dict}.items():
            arr[:] = params[name] if name in params else initial_value(name, arr.shape)
        self.run(1)

    def run(self, n: int) -> list[float]:
        return time_forwards(self.ex, n)

    def output(self, data: np.ndarray) -> np.ndarray:
        """The first output of a forward on `data`."""
        return self.ex.forward(data=data)[0].asnumpy()


class Worker:
    """A worker process (worker_protocol.py) started by `python` (MXNet's venv's
    by default): it prints "ready", then answers each line N on stdin with a
    JSON list of N forward times. What else it prints before them (oneDNN's
    verbose lines, with MKLDNN_VERBOSE=1 in `env`) is kept for `run_logged`."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None,
                 python: str = MXNET_PYTHON) -> None:
        self.proc = subprocess.Popen([python, *argv], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, text=True)
        lines = self._until(lambda line: line == "ready\n")
        if not lines or lines[-1] != "ready\n":
            raise RuntimeError(f"worker {argv} failed to start: {lines[-1:]!r}")

    def _until(self, last: Callable[[str], bool]) -> list[str]:
        """The lines the worker prints up to and with the first that is `last`
        (all it printed, if it ends first)."""
        lines = []
        for line in self.proc.stdout:
            lines.append(line)
            if last(line):
                break
        return lines

    def _ask(self, line: str) -> str:
        self.proc.stdin.write(f"{line}\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline()

    def run_logged(self, n: int) -> tuple[list[str], list[float]]:
        """The lines printed during `n` forwards, and the forwards' times."""
        self.proc.stdin.write(f"{n}\n")
        self.proc.stdin.flush()
        *lines, times = self._until(lambda line: line.startswith("["))
        return lines, json.loads(times)

    def run(self, n: int) -> list[float]:
        return self.run_logged(n)[1]

    def output(self, data: np.ndarray | dict[str, np.ndarray]) -> np.ndarray:
        """The first output of a forward on `data`, the input or the inputs by name
        (which stay the worker's inputs)."""
        with tempfile.TemporaryDirectory() as tmp:
            if isinstance(data, dict):
                path = f"{tmp}/in.npz"
                np.savez(path, **data)
            else:
                path = f"{tmp}/in.npy"
                np.save(path, data)
            self._ask(f"input {path}")
            self.run(1)
            self._ask(f"output {tmp}/out.npy")
            return np.load(f"{tmp}/out.npy")

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def mxnet_zoo_worker(model: str, batch: int, mode: str, prefix: Path | None = None) -> Worker:
    """MXNet 1.9.1 running gluon's `model` at `batch` (the checkpoint `prefix`'s
    weights, or random ones), MKLDNN on or off."""
    # Without MKLDNN, MXNet warns about a storage fallback for every operator.
    env = dict(os.environ, MXNET_MKLDNN_ENABLED="0" if mode == "off" else "1",
               MXNET_STORAGE_FALLBACK_LOG_VERBOSE="0")
    return Worker([str(WORKER), model, str(batch), mode, *([str(prefix)] if prefix else [])],
                  env)


def peer_worker(runtime: str, onnx: Path, batch: int, precision: str = "fp32",
                profile: str | None = None) -> Worker:
    """ONNX Runtime (``ort``) or OpenVINO (``openvino``) running `onnx` at `batch`
    in its own venv (peer_worker.py), writing its per-node profile to `profile`*
    when it closes if asked."""
    return Worker([str(HERE / "peer_worker.py"), runtime, str(onnx), str(batch),
                   "--precision", precision, *(["--profile", profile] if profile else [])],
                  python=PEER_PYTHON[runtime])


def exported(model: str, models_dir: Path) -> Path:
    """The prefix of `model`'s MXNet checkpoint in `models_dir`, beside its ONNX
    export (both written by peer_export.py in MXNet's venv the first time)."""
    prefix = models_dir / f"{model}-fp32"
    if not (models_dir / f"{model}.onnx").exists():
        subprocess.run([MXNET_PYTHON, str(HERE / "peer_export.py"), str(models_dir), model],
                       check=True, stdout=subprocess.DEVNULL)
    return prefix


def check_agreement(paths: dict, batch: int, tolerance: float,
                    data: np.ndarray | dict[str, np.ndarray] | None = None) -> None:
    """Run every path on one input (`data`, by default a random image batch) and
    compare its first output with minimx DNNL's: the largest difference relative
    to the largest output must be within `tolerance`, or the run stops (timing
    different computations means nothing)."""
    if data is None:
        data = np.random.default_rng(0).random((batch, 3, 224, 224), np.float32)
    ours = paths["minimx DNNL"].output(data)
    errors = {}
    for name, path in paths.items():
        if name != "minimx DNNL":
            errors[name] = float(np.abs(path.output(data) - ours).max() / np.abs(ours).max())
            if not errors[name] <= tolerance:
                raise SystemExit(f"{name} disagrees with minimx DNNL: relative error "
                                 f"{errors[name]:.2e} > {tolerance:g}")
    print("  largest output difference to minimx DNNL's, relative: "
          + ", ".join(f"{name} {e:.1e}" for name, e in errors.items()))


def time_forwards(ex: mx.Executor, n: int) -> list[float]:
    """Seconds of each of `n` inference forwards of `ex`."""
    times = []
    for _ in range(n):
        start = time.perf_counter()
        ex.forward(is_train=False)[0].wait_to_read()
        times.append(time.perf_counter() - start)
    return times


def alternate(paths: dict, batch: int, rounds: int, iters: int,
              slow: frozenset[str] = frozenset()) -> dict[str, float]:
    """img/s of each path (anything with ``run(n) -> times``), timed in alternating
    rounds; worker processes are closed at the end. A `slow` path runs one forward
    per round."""
    times: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(rounds):
        wait_quiet()
        for name, path in paths.items():
            # The path before may leave OpenMP threads spinning for milliseconds
            # after its last forward (libgomp's default wait policy): let them
            # sleep, so that they take no core from this one.
            time.sleep(SETTLE)
            # Untimed forwards first: a path that sat idle while the others ran
            # runs slowly for a while (threads asleep, caches cold, vCPU clocks).
            path.run(1 if name in slow else WARMUP)
            times[name] += path.run(1 if name in slow else iters)
    for path in paths.values():
        if isinstance(path, Worker):
            path.close()
    return {name: batch / statistics.median(t) for name, t in times.items()}


def measure(model: str, batch: int, args: argparse.Namespace) -> dict[str, float]:
    has_mxnet = os.path.exists(MXNET_PYTHON)
    prefix = exported(model, args.models_dir) if has_mxnet else None
    paths: dict[str, object] = {"minimx DNNL": Minimx(model, batch, "DNNL", prefix)}
    if has_mxnet:
        paths["MXNet MKLDNN"] = mxnet_zoo_worker(model, batch, "mkldnn", prefix)
        if args.mxnet_off:
            paths["MXNet no-MKLDNN"] = mxnet_zoo_worker(model, batch, "off", prefix)
        for runtime in args.peers:
            if os.path.exists(PEER_PYTHON[runtime]):
                paths[PEER_NAMES[runtime]] = peer_worker(
                    runtime, args.models_dir / f"{model}.onnx", batch)
    if args.numpy:
        paths["minimx numpy"] = Minimx(model, batch, None, prefix)
    check_agreement(paths, batch, args.tolerance)
    return alternate(paths, batch, args.rounds, args.iters, slow=frozenset({"minimx numpy"}))


def peer_arguments(description: str, models: list[str], tolerance: float
                   ) -> argparse.ArgumentParser:
    """The options of every script that times minimx against MXNet's exports and
    the peer runtimes (this one, dnnl_bf16.py); each adds its own."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--models", nargs="+", default=models)
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 16])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iters", type=int, default=5, help="timed forwards per path per round")
    parser.add_argument("--models-dir", type=Path, default=Path(tempfile.gettempdir(),
                                                               "minimx-peer-models"),
                        help="where the MXNet checkpoints and ONNX exports are kept")
    parser.add_argument("--tolerance", type=float, default=tolerance,
                        help="largest output difference allowed, relative to the largest output")
    return parser


def ready_to_time() -> None:
    """oneDNN loaded, no backend from the environment, the machine checked quiet."""
    onednn.require()
    os.environ.pop("MINIMX_SUBGRAPH_BACKEND", None)  # each path partitions explicitly
    quiet_check()


def main() -> None:
    parser = peer_arguments(__doc__.splitlines()[0], MODELS, tolerance=1e-3)
    parser.add_argument("--numpy", action="store_true", help="also time minimx's numpy path")
    parser.add_argument("--mxnet-off", action="store_true",
                        help="also time MXNet with MKLDNN disabled")
    parser.add_argument("--peers", nargs="*", choices=list(PEER_PYTHON), default=list(PEER_PYTHON),
                        help="the peer runtimes to time (their venvs must exist)")
    args = parser.parse_args()
    ready_to_time()
    peaks = roofline.peaks()
    roofline.report(peaks)
    print("img/s (batch / median forward time); ratio = minimx DNNL / other")
    for model in args.models:
        for batch in args.batches:
            rates = measure(model, batch, args)
            ours = rates["minimx DNNL"]
            cells = [f"{name} {rate:7.1f}" + ("" if name == "minimx DNNL"
                                               else f" (x{ours / rate:.2f})")
                     for name, rate in rates.items()]
            print(f"{model:16s} batch {batch:2d}: " + " | ".join(cells), flush=True)
            others = [name for name in rates if name != "minimx DNNL"]
            if others:
                best = max(others, key=rates.__getitem__)
                print(" " * 26 + roofline.floor_line(mx.models.get_model(model),
                                                     (batch, 3, 224, 224), peaks, "float32",
                                                     rates, "minimx DNNL", best))
    closing_check()


if __name__ == "__main__":
    sys.exit(main())
