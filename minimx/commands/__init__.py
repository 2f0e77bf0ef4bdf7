"""The `minimx` command (also `python -m minimx`): inspect, run, benchmark and profile models.

One module per group of subcommands: `inspect` (info, summary, partition),
`run`, `bench`, `profile` and `demo`; `model_files` finds models and binds
them. Every subcommand that takes a model takes a checkpoint prefix
(``PREFIX-symbol.json`` and ``PREFIX-NNNN.params``), a symbol ``.json`` or a
model-zoo name (random weights). Errors minimx raises are printed as one
line, with exit status 1; ``--traceback`` shows the whole trace. Output piped
into a reader that stops early (``minimx info | head -1``) ends the command
quietly.
"""
from __future__ import annotations

import argparse
import os
import sys

from .. import __version__
from ..base import MinimxError
from . import bench, demo, inspect, profile, run


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(
        prog="minimx", description="Inspect, run, benchmark and profile MXNet 1.x models "
                                   "with minimx. Without a command: the demo.")
    main.add_argument("--version", action="version", version=f"minimx {__version__}")
    main.add_argument("--traceback", action="store_true",
                      help="show the whole traceback of an error")
    model = argparse.ArgumentParser(add_help=False)
    model.add_argument("model", metavar="MODEL",
                       help="checkpoint prefix (PREFIX-symbol.json, PREFIX-NNNN.params), "
                            "symbol .json file, or model-zoo name (random weights)")
    model.add_argument("--epoch", type=int, help="checkpoint epoch (default 0)")
    shapes = argparse.ArgumentParser(add_help=False)
    shapes.add_argument("--shape", action="append", default=[], metavar="NAME=D0,D1,...",
                        help="an input's shape, e.g. data=1,3,224,224 (repeat for several "
                             "inputs; default data=1,3,224,224 where there is a data input)")
    commands = main.add_subparsers(title="commands", metavar="COMMAND",
                                   help="the command (default: demo); COMMAND -h for its help")
    demo.add_parsers(commands)
    inspect.add_parsers(commands, model, shapes)
    run.add_parsers(commands, model)
    bench.add_parsers(commands, model, shapes)
    profile.add_parsers(commands, model, shapes)
    return main


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    command = getattr(args, "run", demo.demo)
    try:
        return command(args)
    except MinimxError as exc:
        if args.traceback:
            raise
        print(f"minimx: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader has gone: point stdout at /dev/null so that Python's own
        # flush at exit does not fail again (the recipe of Python's signal docs).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
