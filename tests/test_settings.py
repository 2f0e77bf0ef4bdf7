"""base.settings(): every MINIMX_* variable, one boolean parser, MXNet's backend variable."""
import logging

import pytest

import minimx as mx
from minimx.base import env_flag, settings

FLAGS = ["MINIMX_DNNL_WINOGRAD", "MINIMX_DNNL_BATCH_PARTS", "MINIMX_DNNL_DEPTHWISE_INT8",
         "MINIMX_DNNL_NHWC_INPUT", "MINIMX_DNNL_FIRST_CONV_INT8",
         "MINIMX_DNNL_POINTWISE_DEPTHWISE",
         "MINIMX_EXEC_ENABLE_INPLACE", "MINIMX_EXEC_BULK_EXEC_INFERENCE"]


@pytest.mark.parametrize("text", ["0", "false", "False", "FALSE", "off", "Off", "no", "NO",
                                  " off "])
def test_every_spelling_of_false_turns_a_flag_off(monkeypatch, text):
    for name in FLAGS:
        monkeypatch.setenv(name, text)
    s = settings()
    assert (s.dnnl_winograd, s.dnnl_batch_parts, s.dnnl_depthwise_int8, s.dnnl_nhwc_input,
            s.dnnl_first_conv_int8, s.dnnl_pointwise_depthwise, s.exec_enable_inplace,
            s.exec_bulk_inference) == (False,) * 8


@pytest.mark.parametrize("text", ["1", "true", "True", "on", "ON", "yes", "Yes"])
def test_every_spelling_of_true_turns_a_flag_on(monkeypatch, text):
    monkeypatch.setenv("MINIMX_DNNL_WINOGRAD", text)
    assert env_flag("MINIMX_DNNL_WINOGRAD", False) is True


def test_unset_or_empty_flags_take_their_default(monkeypatch):
    monkeypatch.delenv("MINIMX_DNNL_WINOGRAD", raising=False)
    assert env_flag("MINIMX_DNNL_WINOGRAD", True) is True
    monkeypatch.setenv("MINIMX_DNNL_WINOGRAD", "")
    assert env_flag("MINIMX_DNNL_WINOGRAD", False) is False


@pytest.mark.parametrize("text", ["2", "maybe", "of", "enabled"])
def test_anything_else_is_refused_naming_the_variable(monkeypatch, text):
    monkeypatch.setenv("MINIMX_DNNL_WINOGRAD", text)
    with pytest.raises(mx.MinimxError, match=f"MINIMX_DNNL_WINOGRAD='{text}' is not a boolean"):
        settings()


def test_mxnet_subgraph_backend_is_used_when_minimx_s_is_unset(monkeypatch, caplog):
    monkeypatch.delenv("MINIMX_SUBGRAPH_BACKEND", raising=False)
    monkeypatch.setenv("MXNET_SUBGRAPH_BACKEND", "default")
    monkeypatch.setattr(mx.base, "_mxnet_backend_told", set())
    with caplog.at_level(logging.INFO, logger="minimx"):
        assert settings().subgraph_backends == ("default",)
        assert settings().subgraph_backends == ("default",)
    told = [r for r in caplog.records if "MXNET_SUBGRAPH_BACKEND" in r.getMessage()]
    assert len(told) == 1  # one line per value, not one per bind


def test_minimx_subgraph_backend_wins_even_when_empty(monkeypatch):
    monkeypatch.setenv("MXNET_SUBGRAPH_BACKEND", "DNNL")
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "")
    assert settings().subgraph_backends == ()
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "NONE")
    assert settings().subgraph_backends == ()


def test_mxnet_s_none_means_no_partitioning(monkeypatch):
    monkeypatch.delenv("MINIMX_SUBGRAPH_BACKEND", raising=False)
    monkeypatch.setenv("MXNET_SUBGRAPH_BACKEND", "NONE")
    assert settings().subgraph_backends == ()


def test_mxnet_backend_variable_partitions_a_bind(monkeypatch):
    monkeypatch.delenv("MINIMX_SUBGRAPH_BACKEND", raising=False)
    monkeypatch.setenv("MXNET_SUBGRAPH_BACKEND", "default")
    monkeypatch.setenv("MINIMX_SUBGRAPH_DEFAULT_OPS", "relu")
    net = mx.sym.relu(mx.sym.Variable("x"), name="r")
    ex = net.simple_bind(mx.cpu(), grad_req="null", x=(2,))
    assert "_subgraph_op" in ex.debug_str()


def test_dnnl_fusion_switches_name_the_steps_turned_off(monkeypatch):
    monkeypatch.setenv("MINIMX_DNNL_FUSE_CONV_BN", "0")
    monkeypatch.setenv("MINIMX_DNNL_FUSE_FC_ACT", "Off")
    monkeypatch.setenv("MINIMX_DNNL_FUSE_CONV_SUM", "1")
    assert settings().dnnl_fusions_off == {"conv_bn", "fc_act"}
    monkeypatch.setenv("MINIMX_DNNL_FUSE_DECONV_ACT", "nope")
    with pytest.raises(mx.MinimxError, match="MINIMX_DNNL_FUSE_DECONV_ACT='nope' is not a boolean"):
        settings()
