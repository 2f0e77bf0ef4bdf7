"""configs/dnnl.yaml is the one list of the DNNL backend's operators: every
operator it accepts has a lowering, every lowering serves an operator, and
the eltwise table covers exactly the activations it accepts."""
from __future__ import annotations

import copy
from importlib import resources

import pytest
import yaml

from minimx.backends.dnnl import eltwise, lower
from minimx.backends.dnnl.config import CONFIG, Support, default_support
from minimx.backends.dnnl.patterns import PATTERNS
from minimx.base import BackendError
from minimx.graph import Node

CONFIG_DOC = yaml.safe_load(resources.files(CONFIG[0]).joinpath(CONFIG[1]).read_text())


def _support(edit) -> Support:
    doc = copy.deepcopy(CONFIG_DOC)
    edit(doc["ops"])
    return Support(doc)


def test_every_accepted_operator_has_a_lowering_and_every_lowering_an_operator():
    support = default_support()
    kinds = {op: support.lowering(op) for op in support.ops}
    assert all(k in lower.LOWERINGS or k in ("view", "identity", "cast")
               for k in kinds.values()), kinds
    used = set(kinds.values()) | {p.lower for p in PATTERNS} | {"reshape"}  # views' own
    assert set(lower.LOWERINGS) <= used
    assert lower.VIEWS == ("Flatten", "expand_dims", "Reshape", "_contrib_quantized_flatten")
    assert lower.IDENTITIES == ("Dropout",)
    assert lower.CASTS == ("amp_cast", "amp_multicast")
    lower.check_config(support)   # what importing the backend ran


def test_every_fused_operator_has_a_lowering_and_its_head_is_accepted():
    for p in PATTERNS:
        assert p.lower in lower.LOWERINGS and p.head in default_support().ops


def test_an_operator_without_a_lowering_is_refused():
    def add_op(ops):
        ops["Embedding"] = {"lower": "embedding"}
    with pytest.raises(BackendError, match=r"lowerings \['embedding'\] are missing"):
        lower.check_config(_support(add_op))


def test_a_lowering_no_operator_uses_is_refused():
    def drop_lrn(ops):
        del ops["LRN"]
    with pytest.raises(BackendError, match=r"\['lrn'\] serve no operator"):
        lower.check_config(_support(drop_lrn))


def test_an_operator_without_lower_is_malformed():
    def no_lower(ops):
        del ops["LRN"]["lower"]
    with pytest.raises(BackendError, match="DNNL config: bad rule for LRN"):
        _support(no_lower)


@pytest.mark.parametrize("edit, message", [
    (lambda ops: ops.pop("sqrt"), r"eltwise operators .* differ from eltwise.ALGORITHMS"),
    (lambda ops: ops.update(exp={"lower": "eltwise"}), r"eltwise operators .*'exp'.* differ"),
    (lambda ops: ops["Activation"]["params"]["act_type"].remove("tanh"),
     r"Activation act_types \['relu', 'sigmoid', 'softrelu'\] differ from eltwise.ALGORITHMS"),
])
def test_eltwise_table_must_match_the_config(edit, message):
    with pytest.raises(BackendError, match=message):
        eltwise.check_config(_support(edit))


@pytest.mark.parametrize("op, attrs, expected", [
    ("Activation", {"act_type": "sigmoid"}, eltwise.Eltwise("logistic")),
    ("LeakyReLU", {"act_type": "leaky", "slope": "0.1"}, eltwise.Eltwise("relu", 0.1)),
    ("LeakyReLU", {"act_type": "elu", "slope": "0.5"}, eltwise.Eltwise("elu", 0.5)),
    ("clip", {"a_min": "-1", "a_max": "2"}, eltwise.Eltwise("clip", -1.0, 2.0)),
    ("square", {}, eltwise.Eltwise("square")),
    ("Activation", {"act_type": "softsign"}, None),
    ("exp", {}, None),
])
def test_eltwise_of(op, attrs, expected):
    assert eltwise.eltwise_of(Node.create(op, "n", attrs)) == expected


def test_a_binary_operator_without_an_algorithm_is_refused():
    def add_op(ops):
        ops["broadcast_power"] = {"lower": "binary"}
    with pytest.raises(BackendError, match=r"binary operators .*broadcast_power.* differ"):
        lower.check_config(_support(add_op))
