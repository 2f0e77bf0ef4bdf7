"""The ``multi_context`` fixtures: MXNet 1.9.1's `mx.mod.Module` over several CPU
contexts (data parallelism: the batch split by `work_load_list`, one executor per
context, gradients summed through a 'local' kvstore).

Each case is an MXNet script, `run_case(mx, case, workdir)`, written against the module
``mx`` it is given and importing nothing else: with MXNet 1.9.1 it writes the fixtures,
and minimx's tests (tests/module/test_module_multi_context.py) run the very same
function with minimx and compare. Inputs and starting parameters come from seeded
numpy generators, made again on both sides. `tools/mxnet_fixtures.py --only
multi_context` writes ``multi_context/cases.json`` (slices, metric values, shapes) and
``multi_context/arrays.npz`` (``<case>:<name>``: outputs, parameters, auxiliary states,
gradients) for every case of `CASES`.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

Record = dict[str, Any]
Arrays = dict[str, np.ndarray]

# (net, number of contexts, work_load_list, batch size, kvstore, optimizer and its
# parameters, metric, training steps, batch size of a later inference forward)
STEP_CASES = {
    "mlp_2ctx_sgd": ("mlp", 2, None, 5, "local", "sgd",
                     {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.001}, ["acc", "ce"], 3, 4),
    "mlp_3ctx_adam_workload": ("mlp", 3, [1, 2, 1], 7, "local", "adam",
                               {"learning_rate": 0.01}, ["acc", "ce"], 3, 4),
    "mlp_1ctx_sgd": ("mlp", 1, None, 5, "local", "sgd",
                     {"learning_rate": 0.1, "momentum": 0.9}, ["acc", "ce"], 3, 4),
    "mlp_2ctx_no_kvstore": ("mlp", 2, None, 5, None, "sgd",
                            {"learning_rate": 0.1, "momentum": 0.9}, ["acc"], 3, 4),
    "cnn_2ctx_sgd": ("cnn", 2, None, 5, "local", "sgd",
                     {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.001}, ["acc", "ce"], 3, 4),
    "cnn_3ctx_adam": ("cnn", 3, None, 5, "local", "adam", {"learning_rate": 0.01},
                      ["acc", "ce"], 3, 3),
    "regression_2ctx_sgd": ("regression", 2, [2, 1], 5, "local", "sgd",
                            {"learning_rate": 0.05, "momentum": 0.5}, ["mse", "rmse", "mae"], 3,
                            4),
}
# (net, number of contexts, work_load_list, optimizer and its parameters)
FIT_CASES = {
    "fit_mlp_2ctx_sgd": ("mlp", 2, None, "sgd", {"learning_rate": 0.1, "momentum": 0.9,
                                                 "wd": 0.001}),
    "fit_cnn_3ctx_adam": ("cnn", 3, [1, 1, 2], "adam", {"learning_rate": 0.01}),
}
OTHER_CASES = ("input_grads_2ctx", "states_2ctx", "bucketing_2ctx", "sequential_2ctx")
CASES = [*STEP_CASES, *FIT_CASES, *OTHER_CASES]
EXAMPLES = 22    # fit's batches of 5: the last one padded


# -- nets and inputs --------------------------------------------------------------------------
def build_net(mx: ModuleType, kind: str) -> Any:
    """`mlp`, `cnn` (with BatchNorm) or `regression` (LinearRegressionOutput)."""
    data = mx.sym.Variable("data")
    if kind == "cnn":
        # No bias before BatchNorm: its gradient is zero up to rounding noise, which Adam
        # would make into steps of the learning rate's size.
        net = mx.sym.Convolution(data, num_filter=4, kernel=(3, 3), pad=(1, 1), no_bias=True,
                                 name="conv")
        net = mx.sym.BatchNorm(net, fix_gamma=False, name="bn")
        net = mx.sym.Activation(net, act_type="relu", name="relu")
        net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool")
        return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(net, num_hidden=3, name="fc"),
                                    name="softmax")
    act = "tanh" if kind == "regression" else "relu"
    net = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=8, name="fc1"),
                            act_type=act, name="act1")
    if kind == "regression":
        return mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(net, num_hidden=2,
                                                                   name="fc2"), name="lro")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(net, num_hidden=3, name="fc2"),
                                name="softmax")


def label_name(kind: str) -> str:
    return "lro_label" if kind == "regression" else "softmax_label"


def inputs(kind: str, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """`EXAMPLES` examples and their labels."""
    rng = np.random.RandomState(seed)
    shape = (EXAMPLES, 2, 6, 6) if kind == "cnn" else (EXAMPLES, 4)
    data = rng.normal(0, 1, shape).astype(np.float32)
    if kind == "regression":
        return data, rng.normal(0, 1, (EXAMPLES, 2)).astype(np.float32)
    return data, rng.randint(0, 3, EXAMPLES).astype(np.float32)


def start_params(mx: ModuleType, net: Any, shapes: dict[str, tuple[int, ...]],
                 seed: int = 3) -> tuple[dict, dict]:
    """Seeded arg_params (gammas near one) and auxiliary states (means 0, variances 1) of
    `net` for its inputs of `shapes` (labels are inputs too)."""
    rng = np.random.RandomState(seed)
    arg_shapes, _, aux_shapes = net.infer_shape(**shapes)
    args = {}
    for name, shape in zip(net.list_arguments(), arg_shapes, strict=True):
        if name in shapes or name.endswith("_label"):
            continue
        value = rng.uniform(0.5, 1.5, shape) if name.endswith("_gamma") else \
            rng.normal(0, 0.5, shape)
        args[name] = mx.nd.array(value.astype(np.float32))
    auxs = {name: (mx.nd.ones if name.endswith("_var") else mx.nd.zeros)(shape)
            for name, shape in zip(net.list_auxiliary_states(), aux_shapes, strict=True)}
    return args, auxs


def contexts(mx: ModuleType, count: int) -> list:
    return [mx.cpu(i) for i in range(count)]


def batch_of(mx: ModuleType, data: np.ndarray, label: np.ndarray, step: int,
             size: int) -> Any:
    rows = [(step * size + k) % EXAMPLES for k in range(size)]
    return mx.io.DataBatch([mx.nd.array(data[rows])], [mx.nd.array(label[rows])])


def slices(mod: Any) -> list[list[int]]:
    return [[s.start, s.stop] for s in mod._exec_group.slices]


def train(mx: ModuleType, mod: Any, batches: list, metric: Any) -> tuple[Record, Arrays]:
    """Train `mod` a step per batch (forward_backward, update, update_metric): the
    metric's values, each step's outputs and the parameters after."""
    eval_metric = mx.metric.create(metric)
    arrays: Arrays = {}
    for step, batch in enumerate(batches):
        mod.forward_backward(batch)
        mod.update()
        mod.update_metric(eval_metric, batch.label)
        arrays[f"output{step}"] = mod.get_outputs()[0].asnumpy()
    params_into(arrays, "param", mod)
    return {"metric": eval_metric.get_name_value()}, arrays


def params_into(arrays: Arrays, prefix: str, mod: Any) -> None:
    args, auxs = mod.get_params()
    arrays.update({f"{prefix}:{n}": v.asnumpy() for n, v in {**args, **auxs}.items()})


# -- the cases --------------------------------------------------------------------------------
def step_case(mx: ModuleType, case: str) -> tuple[Record, Arrays]:
    """Bind, initialize, train some steps by hand (forward_backward, update,
    update_metric), then an inference forward of another batch size."""
    kind, count, workload, size, kvstore, optimizer, params, metric, steps, later = \
        STEP_CASES[case]
    net = build_net(mx, kind)
    data, label = inputs(kind)
    mod = mx.mod.Module(net, label_names=[label_name(kind)], context=contexts(mx, count),
                        work_load_list=workload)
    mod.bind(data_shapes=[("data", (size, *data.shape[1:]))],
             label_shapes=[(label_name(kind), (size, *label.shape[1:]))])
    mod.init_params(None, *start_params(mx, net, {"data": (size, *data.shape[1:])}))
    mod.init_optimizer(kvstore=kvstore, optimizer=optimizer, optimizer_params=params)
    record, arrays = train(mx, mod, [batch_of(mx, data, label, step, size)
                                     for step in range(steps)], metric)
    record.update(slices=slices(mod), executors=len(mod._exec_group.execs),
                  per_device_shapes=[[o.shape for o in outs] for outs in
                                     mod.get_outputs(merge_multi_context=False)])
    for name, per_device in zip(net.list_auxiliary_states(), mod._exec_group.aux_arrays,
                                strict=True):
        arrays.update({f"device{k}:{name}": a.asnumpy() for k, a in enumerate(per_device)})
    mod.forward(batch_of(mx, data, label, steps, later), is_train=False)
    arrays["later_output"] = mod.get_outputs()[0].asnumpy()
    record.update(later_slices=slices(mod), output_shapes=mod.output_shapes)
    return record, arrays


def fit_case(mx: ModuleType, case: str, workdir: Path) -> tuple[Record, Arrays]:
    """`fit` for two epochs with a metric and validation data, `score`, `predict`, then a
    checkpoint loaded into a new module over the same contexts."""
    kind, count, workload, optimizer, params = FIT_CASES[case]
    net = build_net(mx, kind)
    data, label = inputs(kind)
    seen: list = []

    def batches() -> Any:
        return mx.io.NDArrayIter(data, label, batch_size=5)
    mod = mx.mod.Module(net, context=contexts(mx, count), work_load_list=workload)
    args, auxs = start_params(mx, net, {"data": (5, *data.shape[1:])})
    mod.fit(batches(), eval_data=batches(), eval_metric=["acc", "ce"], optimizer=optimizer,
            optimizer_params=params, num_epoch=2, arg_params=args, aux_params=auxs,
            batch_end_callback=lambda p: seen.append(p.eval_metric.get_name_value()))
    arrays: Arrays = {}
    params_into(arrays, "param", mod)
    record: Record = {"batch_metrics": seen, "score": mod.score(batches(), ["acc", "ce"])}
    arrays["predict"] = mod.predict(batches()).asnumpy()
    prefix = str(workdir / case)
    mod.save_checkpoint(prefix, 2)
    loaded = mx.mod.Module.load(prefix, 2, context=contexts(mx, count), work_load_list=workload)
    loaded.bind(data_shapes=[("data", (5, *data.shape[1:]))], for_training=False)
    arrays["loaded_predict"] = loaded.predict(batches()).asnumpy()
    return record, arrays


def input_grads_case(mx: ModuleType) -> tuple[Record, Arrays]:
    """A net without a loss over two contexts: backward from given output gradients
    (sliced over the devices), each device's parameter gradients, the input gradients."""
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    mod = mx.mod.Module(net, label_names=None, context=contexts(mx, 2))
    mod.bind(data_shapes=[("data", (5, 4))], inputs_need_grad=True)
    mod.init_params(None, *start_params(mx, net, {"data": (5, 4)}))
    rng = np.random.RandomState(11)
    mod.forward(mx.io.DataBatch([mx.nd.array(rng.normal(0, 1, (5, 4)))]), is_train=True)
    mod.backward([mx.nd.array(rng.normal(0, 1, (5, 3)))])
    arrays = {"input_grad": mod.get_input_grads()[0].asnumpy()}
    for name, per_device in zip(["fc_weight", "fc_bias"], mod._exec_group.grad_arrays,
                                strict=True):
        arrays.update({f"device{k}:grad:{name}": g.asnumpy() for k, g in enumerate(per_device)})
    shapes = [[g.shape for g in grads] for grads in mod.get_input_grads(False)]
    return {"input_grad_shapes": shapes}, arrays


def states_case(mx: ModuleType) -> tuple[Record, Arrays]:
    """A state input (its shape inferred per device): `set_states` by value and by
    per-device arrays, `get_states`."""
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc") + \
        mx.sym.Variable("state")
    mod = mx.mod.Module(net, label_names=None, state_names=["state"], context=contexts(mx, 2))
    mod.bind(data_shapes=[("data", (5, 4))], for_training=False)
    mod.init_params(None, *start_params(mx, net, {"data": (5, 4), "state": (5, 3)}))
    batch = mx.io.DataBatch([mx.nd.array(np.random.RandomState(12).normal(0, 1, (5, 4)))])
    mod.set_states(value=0.5)
    mod.forward(batch)
    arrays = {"by_value": mod.get_outputs()[0].asnumpy()}
    mod.set_states(states=[[mx.nd.full((2, 3), -1.0), mx.nd.full((3, 3), 2.0)]])
    mod.forward(batch)
    arrays["by_arrays"] = mod.get_outputs()[0].asnumpy()
    shapes = [[s.shape for s in per_device] for per_device in mod.get_states(False)]
    return {"state_shapes": shapes}, arrays


def bucketing_case(mx: ModuleType) -> tuple[Record, Arrays]:
    """A BucketingModule over two contexts: batches of three sequence lengths, SGD."""
    def sym_gen(length: int) -> tuple:
        net = mx.sym.sum(mx.sym.Variable("data"), axis=1, keepdims=True)
        net = mx.sym.Activation(mx.sym.FullyConnected(net, num_hidden=4, name="fc1"),
                                act_type="relu", name="act1")
        net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
        return mx.sym.SoftmaxOutput(net, name="softmax"), ("data",), ("softmax_label",)
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=6, context=contexts(mx, 2))
    mod.bind(data_shapes=[("data", (5, 6))], label_shapes=[("softmax_label", (5,))])
    mod.init_params(None, *start_params(mx, sym_gen(6)[0], {"data": (5, 6)}))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    rng = np.random.RandomState(13)
    batches = [mx.io.DataBatch([mx.nd.array(rng.normal(0, 1, (5, length)))],
                               [mx.nd.array(rng.randint(0, 3, 5))], bucket_key=length,
                               provide_data=[mx.io.DataDesc("data", (5, length))],
                               provide_label=[mx.io.DataDesc("softmax_label", (5,))])
               for length in [6, 3, 4, 3]]
    return train(mx, mod, batches, "acc")


def sequential_case(mx: ModuleType) -> tuple[Record, Arrays]:
    """A SequentialModule of two modules over two contexts (an uneven batch): the second's
    input gradients, merged, are the first's output gradients, sliced again."""
    first = mx.sym.Activation(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=5,
                                                    name="fc1"), act_type="relu", name="act1")
    second = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable("hidden"),
                                                        num_hidden=3, name="fc2"),
                                  name="softmax")
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(first, label_names=None, context=contexts(mx, 2)))
    seq.add(mx.mod.Module(second, data_names=["hidden"], context=contexts(mx, 2)),
            take_labels=True, auto_wiring=True)
    data, label = inputs("mlp")
    seq.bind(data_shapes=[("data", (5, 4))], label_shapes=[("softmax_label", (5,))])
    args = {**start_params(mx, first, {"data": (5, 4)})[0],
            **start_params(mx, second, {"hidden": (5, 5)}, seed=4)[0]}
    seq.init_params(arg_params=args, aux_params={}, allow_missing=False)
    seq.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    return train(mx, seq, [batch_of(mx, data, label, step, 5) for step in range(3)],
                 ["acc", "ce"])


def run_case(mx: ModuleType, case: str, workdir: Path) -> tuple[Record, Arrays]:
    """(what the case records, its arrays by name) with the module `mx` given."""
    if case in STEP_CASES:
        return step_case(mx, case)
    if case in FIT_CASES:
        return fit_case(mx, case, workdir)
    runs = {"input_grads_2ctx": input_grads_case, "states_2ctx": states_case,
            "bucketing_2ctx": bucketing_case, "sequential_2ctx": sequential_case}
    return runs[case](mx)


def as_json(value: Any) -> Any:
    """Tuples (shapes, name-value pairs) as lists, numpy numbers as Python's."""
    if isinstance(value, (list, tuple)):
        return [as_json(v) for v in value]
    if isinstance(value, dict):
        return {k: as_json(v) for k, v in value.items()}
    return value.item() if isinstance(value, np.generic) else value


def write_multi_context(out: Path) -> None:
    # Imported here: the case functions above run under minimx too.
    import mxnet as mx
    out.mkdir(parents=True, exist_ok=True)
    record: Record = {"mxnet_version": mx.__version__}
    arrays: Arrays = {}
    with tempfile.TemporaryDirectory() as workdir:
        for case in CASES:
            record[case], case_arrays = run_case(mx, case, Path(workdir))
            arrays.update({f"{case}:{name}": value for name, value in case_arrays.items()})
    (out / "cases.json").write_text(json.dumps(as_json(record), indent=1) + "\n")
    np.savez_compressed(out / "arrays.npz", **arrays)

