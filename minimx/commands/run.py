"""`minimx run`: one forward of a checkpoint on an input from a .npy file."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from ..base import MinimxError
from .model_files import bind, inputs_of, load_model


def run(args: argparse.Namespace) -> int:
    m = load_model(args.model, args.epoch)
    if not m.arg_params:
        raise MinimxError(f"{args.model}: no parameters found; run needs a checkpoint "
                          "(PREFIX-symbol.json and PREFIX-NNNN.params)")
    data = np.load(args.input)
    name = args.input_name or inputs_of(m)[0]
    ex = bind(m, {name: data.shape}, args.backend)
    ex.arg_dict[name][:] = data
    outputs = [o.asnumpy() for o in ex.forward()]
    for out_name, out in zip(m.symbol.list_outputs(), outputs, strict=True):
        print(f"{out_name}: {out.shape} {out.dtype}")
        if args.top_k:
            for row, values in enumerate(out.reshape(out.shape[0], -1)):
                best = np.argsort(values)[::-1][:args.top_k]
                print(f"  [{row}] " + ", ".join(f"{k}: {values[k]:.4g}" for k in best))
        elif not args.output:
            print(np.array2string(out, precision=4, threshold=20))
    if args.output:
        _save(Path(args.output), m.symbol.list_outputs(), outputs)
    return 0


def _save(path: Path, names: list[str], outputs: list[np.ndarray]) -> None:
    """One output to a .npy, several to a .npz by output name."""
    if len(outputs) == 1:
        np.save(path, outputs[0])
    else:
        by_name: dict[str, Any] = dict(zip(names, outputs, strict=True))
        np.savez(path.with_suffix(".npz"), **by_name)
        path = path.with_suffix(".npz")
    print(f"written to {path}")


def add_parsers(commands: argparse._SubParsersAction, *parents: argparse.ArgumentParser
                ) -> None:
    p = commands.add_parser("run", parents=list(parents), help="one forward on an input")
    p.add_argument("--input", required=True, metavar="X.npy",
                   help="the input batch (its shape is the bound shape)")
    p.add_argument("--input-name", help="the argument it goes to (default: the first "
                                        "argument that is no parameter, e.g. data)")
    p.add_argument("--backend", default="NONE",
                   help="subgraph backend (NONE, DNNL, ...; default NONE)")
    p.add_argument("--top-k", type=int, default=0, metavar="K",
                   help="print the K largest values of each row and their indices")
    p.add_argument("-o", "--output", metavar="OUT.npy",
                   help="save the output there (several outputs: a .npz by name)")
    p.set_defaults(run=run)
