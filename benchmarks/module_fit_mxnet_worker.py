"""MXNet 1.9.1 side of benchmarks/module_fit.py; runs in MXNet's venv.

Usage: <mxnet venv python> module_fit_mxnet_worker.py FOLDER EPOCHS BATCH OPTIMIZER_PARAMS_JSON
Prints one JSON line: the seconds of each epoch and the validation accuracy.
"""
import json
import sys
import time

import mxnet as mx
import numpy as np


def main() -> None:
    folder, epochs, batch, params = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
        json.loads(sys.argv[4])
    data = np.load(f"{folder}/digits.npz")
    sym, args, auxs = mx.model.load_checkpoint(f"{folder}/start", 0)
    mod = mx.mod.Module(sym)
    train = mx.io.NDArrayIter(data["train_x"], data["train_y"], batch_size=batch)
    ends = [time.perf_counter()]
    mod.fit(train, optimizer="sgd", optimizer_params=params, num_epoch=epochs,
            arg_params=args, aux_params=auxs,
            epoch_end_callback=lambda *_: ends.append(time.perf_counter()))
    val = mx.io.NDArrayIter(data["val_x"], data["val_y"], batch_size=batch)
    acc = float((mod.predict(val).asnumpy().argmax(1) == data["val_y"]).mean())
    print(json.dumps({"epoch_seconds": np.diff(ends).tolist(), "val_acc": acc}))


if __name__ == "__main__":
    main()
