"""Hypothesis properties of the partitioner over random DAGs and selections."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings

import minimx as mx

from .invariants import check_partition, check_same_values
from .random_graphs import graphs, random_inputs

SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(graphs())
def test_invariants_hold(case):
    sym, op_names = case
    partitioned = mx.subgraph.partition(sym, "default", op_names=op_names)
    check_partition(sym, partitioned, op_names)


@SETTINGS
@given(graphs())
def test_same_values(case):
    sym, op_names = case
    partitioned = mx.subgraph.partition(sym, "default", op_names=op_names)
    check_same_values(sym, partitioned, random_inputs(sym))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_json_round_trip_of_partitioned_graph(case):
    sym, op_names = case
    partitioned = mx.subgraph.partition(sym, "default", op_names=op_names)
    loaded = mx.sym.load_json(partitioned.tojson())
    assert loaded.tojson() == partitioned.tojson()
    check_same_values(sym, loaded, random_inputs(sym))


@settings(max_examples=40, deadline=None)
@given(graphs())
def test_deterministic_and_input_untouched(case):
    sym, op_names = case
    before = sym.tojson()
    first = mx.subgraph.partition(sym, "default", op_names=op_names).tojson()
    second = mx.subgraph.partition(sym, "default", op_names=op_names).tojson()
    assert first == second
    assert sym.tojson() == before
