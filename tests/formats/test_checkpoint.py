"""Checkpoints in MXNet's layout: file names, arg:/aux: prefixes, round trip."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx
from minimx.formats import load_arrays, save_arrays


def test_save_and_load_checkpoint(tmp_path):
    net = mx.sym.BatchNorm(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3,
                                                 name="fc"), name="bn")
    arg = {"fc_weight": mx.nd.array(np.arange(12).reshape(3, 4)), "fc_bias": mx.nd.ones(3),
           "bn_gamma": mx.nd.ones(3), "bn_beta": mx.nd.zeros(3)}
    aux = {"bn_moving_mean": mx.nd.zeros(3), "bn_moving_var": mx.nd.ones(3)}
    prefix = str(tmp_path / "model")
    mx.model.save_checkpoint(prefix, 7, net, arg, aux)
    assert (tmp_path / "model-symbol.json").exists()
    raw = load_arrays(f"{prefix}-0007.params")
    assert sorted(raw) == sorted([f"arg:{k}" for k in arg] + [f"aux:{k}" for k in aux])
    sym, arg2, aux2 = mx.model.load_checkpoint(prefix, 7)
    assert sym.tojson() == net.tojson()
    np.testing.assert_array_equal(arg2["fc_weight"].asnumpy(), arg["fc_weight"].asnumpy())
    assert sorted(aux2) == sorted(aux)


def test_params_without_prefix_are_rejected(tmp_path):
    save_arrays(str(tmp_path / "m-0000.params"), {"weight": np.ones(2, np.float32)})
    mx.sym.Variable("x").save(str(tmp_path / "m-symbol.json"))
    with pytest.raises(mx.GraphFormatError, match="'weight'"):
        mx.model.load_checkpoint(str(tmp_path / "m"), 0)


def test_missing_files_are_format_errors(tmp_path):
    with pytest.raises(mx.GraphFormatError):
        mx.model.load_checkpoint(str(tmp_path / "absent"), 0)


def test_load_params_takes_prefix_and_epoch_as_in_mxnet(tmp_path):
    save_arrays(str(tmp_path / "m-0012.params"), {"arg:w": np.ones(2, np.float32),
                                                 "aux:s": np.zeros(1, np.float32)})
    arg, aux = mx.model.load_params(str(tmp_path / "m"), 12)
    assert sorted(arg) == ["w"] and sorted(aux) == ["s"]


def test_an_empty_checkpoint_loads_as_empty_dicts(tmp_path):
    # MXNet saves {} with no name table, so the file reads back as an empty list.
    prefix = str(tmp_path / "empty")
    mx.model.save_checkpoint(prefix, 1, mx.sym.Variable("x"), {}, {})
    assert load_arrays(f"{prefix}-0001.params") == []
    sym, arg, aux = mx.model.load_checkpoint(prefix, 1)
    assert (sym.list_arguments(), arg, aux) == (["x"], {}, {})


def test_keys_with_other_prefixes_are_skipped_as_in_mxnet(tmp_path):
    save_arrays(str(tmp_path / "m-0000.params"), {"arg:w": np.ones(2, np.float32),
                                                 "opt:w_momentum": np.ones(2, np.float32)})
    arg, aux = mx.model.load_params(str(tmp_path / "m"), 0)
    assert (sorted(arg), aux) == (["w"], {})
