"""The KIP-848 server assignors: balance, stickiness, subscriptions honoured."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from kproto.broker.groups.assignors import (
    ASSIGNORS,
    Assignment,
    MemberSpec,
    range_assign,
    uniform_assign,
)

A, B, C = (uuid.UUID(int=i) for i in (1, 2, 3))


def counts(result: dict[str, Assignment]) -> dict[str, int]:
    return {m: sum(len(ps) for ps in a.values()) for m, a in result.items()}


def flat(result: dict[str, Assignment]) -> list[tuple[uuid.UUID, int]]:
    return sorted(
        ((t, p) for a in result.values() for t, ps in a.items() for p in ps),
        key=lambda tp: (str(tp[0]), tp[1]),
    )


def test_uniform_balances_a_homogeneous_group() -> None:
    members = {m: MemberSpec(frozenset({A, B})) for m in ("m1", "m2", "m3")}
    result = uniform_assign(members, {A: 4, B: 3})
    assert sorted(counts(result).values()) == [2, 2, 3]
    assert flat(result) == sorted(
        [(A, p) for p in range(4)] + [(B, p) for p in range(3)],
        key=lambda tp: (str(tp[0]), tp[1]),
    )


def test_uniform_is_sticky_when_a_member_joins() -> None:
    before = uniform_assign(
        {m: MemberSpec(frozenset({A})) for m in ("m1", "m2")}, {A: 6}
    )
    specs = {m: MemberSpec(frozenset({A}), before[m]) for m in ("m1", "m2")}
    specs["m3"] = MemberSpec(frozenset({A}))
    after = uniform_assign(specs, {A: 6})
    assert counts(after) == {"m1": 2, "m2": 2, "m3": 2}
    # the old members only lose partitions; nothing moves between them
    for m in ("m1", "m2"):
        assert after[m][A] <= before[m][A]


def test_uniform_is_sticky_when_a_member_leaves() -> None:
    before = uniform_assign(
        {m: MemberSpec(frozenset({A})) for m in ("m1", "m2", "m3")}, {A: 6}
    )
    specs = {m: MemberSpec(frozenset({A}), before[m]) for m in ("m1", "m2")}
    after = uniform_assign(specs, {A: 6})
    assert counts(after) == {"m1": 3, "m2": 3}
    for m in ("m1", "m2"):
        assert before[m][A] <= after[m][A]


def test_uniform_heterogeneous_subscriptions() -> None:
    members = {
        "m1": MemberSpec(frozenset({A})),
        "m2": MemberSpec(frozenset({A, B})),
        "m3": MemberSpec(frozenset({C})),
    }
    result = uniform_assign(members, {A: 3, B: 3})  # C does not exist
    assert set(result["m1"]) <= {A}
    assert result["m3"] == {}
    assert counts(result)["m1"] + counts(result)["m2"] == 6
    assert abs(counts(result)["m1"] - counts(result)["m2"]) <= 1


def test_range_gives_contiguous_ranges_in_member_order() -> None:
    members = {m: MemberSpec(frozenset({A, B})) for m in ("m2", "m1", "m3")}
    result = range_assign(members, {A: 7, B: 2})
    assert result["m1"][A] == {0, 1, 2}
    assert result["m2"][A] == {3, 4}
    assert result["m3"][A] == {5, 6}
    # co-partitioning: the same members lead each topic's ranges
    assert result["m1"][B] == {0} and result["m2"][B] == {1} and B not in result["m3"]


def test_range_is_sticky_within_quotas() -> None:
    before = range_assign({m: MemberSpec(frozenset({A})) for m in ("m1", "m2")}, {A: 6})
    assert (before["m1"][A], before["m2"][A]) == ({0, 1, 2}, {3, 4, 5})
    specs = {m: MemberSpec(frozenset({A}), before[m]) for m in ("m1", "m2")}
    specs["m0"] = MemberSpec(frozenset({A}))  # sorts first, owns nothing
    after = range_assign(specs, {A: 6})
    # m1 and m2 keep the lowest of theirs; the newcomer gets what they released
    assert after == {"m0": {A: {2, 5}}, "m1": {A: {0, 1}}, "m2": {A: {3, 4}}}


def test_registered_names() -> None:
    assert set(ASSIGNORS) == {"uniform", "range"}


@settings(max_examples=60, deadline=None)
@given(
    subs=st.lists(
        st.sets(st.sampled_from([A, B, C]), min_size=1), min_size=1, max_size=6
    ),
    sizes=st.tuples(*(st.integers(0, 9) for _ in range(3))),
    assignor=st.sampled_from(["uniform", "range"]),
)
def test_every_subscribed_partition_has_exactly_one_subscribed_owner(
    subs: list[set[uuid.UUID]], sizes: tuple[int, int, int], assignor: str
) -> None:
    partitions = dict(zip((A, B, C), sizes, strict=True))
    members = {f"m{i}": MemberSpec(frozenset(s)) for i, s in enumerate(subs)}
    result = ASSIGNORS[assignor](members, partitions)
    owners: dict[tuple[uuid.UUID, int], str] = {}
    for m, assignment in result.items():
        for topic, ps in assignment.items():
            assert topic in members[m].subscribed
            for p in ps:
                assert (topic, p) not in owners
                owners[(topic, p)] = m
    wanted = {(t, p) for s in subs for t in s for p in range(partitions[t])}
    assert set(owners) == wanted
    if assignor == "uniform" and len({frozenset(s) for s in subs}) == 1:
        assert max(counts(result).values()) - min(counts(result).values()) <= 1
