"""The code graph's own multigraph against networkx's MultiDiGraph, which it replaces on
the query path: the same nodes, edges and neighbour order, built or unpickled, and the same
node-link JSON both ways."""

from __future__ import annotations

import pickle

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from spider.graph.digraph import Digraph

NAMES = st.sampled_from([f"n{i}" for i in range(8)])
KEYS = st.sampled_from(["contains", "invokes", "imports", "inherits"])
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("node"), NAMES, st.integers(0, 3)),
        st.tuples(st.just("edge"), NAMES, NAMES, KEYS),
    ),
    max_size=60,
)


def build(steps: list[tuple]) -> tuple[nx.MultiDiGraph, Digraph]:
    """The same steps on both graphs (CodeGraph's add_edge: one edge per ends and key)."""
    theirs, ours = nx.MultiDiGraph(), Digraph()
    for step in steps:
        if step[0] == "node":
            _, name, line = step
            theirs.add_node(name, line=line)
            ours.add_node(name, line=line)
        else:
            _, src, dst, key = step
            if not theirs.has_edge(src, dst, key=key):
                theirs.add_edge(src, dst, key=key, type=key)
            ours.add_edge(src, dst, key)
    return theirs, ours


def same(theirs: nx.MultiDiGraph, ours: Digraph) -> None:
    assert list(theirs.nodes(data=True)) == list(ours.nodes(data=True))
    assert list(theirs.edges(keys=True)) == list(ours.edges(keys=True))
    assert theirs.number_of_edges() == ours.number_of_edges()
    assert list(ours.out_edges("absent")) == [] and list(ours.in_edges("absent")) == []
    for node in theirs.nodes:
        assert list(theirs.out_edges(node, keys=True)) == list(ours.out_edges(node, keys=True))
        assert list(theirs.in_edges(node, keys=True)) == list(ours.in_edges(node, keys=True))
        for other in theirs.nodes:
            for key in ("contains", "invokes", None):
                assert theirs.has_edge(node, other, key) == ours.has_edge(node, other, key)


@settings(max_examples=150, deadline=None)
@given(STEPS)
def test_built_it_answers_as_networkx_does(steps: list[tuple]) -> None:
    same(*build(steps))


@settings(max_examples=100, deadline=None)
@given(STEPS, STEPS)
def test_unpickled_it_answers_the_same_and_changes_the_same(steps: list[tuple],
                                                            more: list[tuple]) -> None:
    theirs, ours = build(steps)
    back = pickle.loads(pickle.dumps(ours))
    assert back == ours
    same(theirs, back)
    theirs_more, _ = build(steps + more)  # a graph read back, then changed
    for step in more:
        if step[0] == "node":
            back.add_node(step[1], line=step[2])
        else:
            back.add_edge(step[1], step[2], step[3])
    same(theirs_more, back)


@settings(max_examples=100, deadline=None)
@given(STEPS)
def test_its_node_link_json_is_networkx_s_both_ways(steps: list[tuple]) -> None:
    theirs, ours = build(steps)
    data = nx.node_link_data(theirs, edges="edges")
    assert ours.to_node_link() == data
    # read back, both hold the edges in the file's order (by source: an edge's place among
    # its target's in-edges can differ from the graph that was written, in networkx too)
    theirs_back = nx.node_link_graph(data, directed=True, multigraph=True, edges="edges")
    same(theirs_back, Digraph.from_node_link(data))
