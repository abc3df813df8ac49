"""Member reconciliation (Kafka's ``CurrentAssignmentBuilder``): revocation before
assignment, unreleased partitions, epochs."""

from __future__ import annotations

import uuid

from kproto.broker.groups.consumer_group import (
    ConsumerGroup,
    ConsumerGroupMember,
    ConsumerGroupState,
    MemberState,
)
from kproto.broker.groups.modern import reconcile

T = uuid.UUID(int=7)


def fs(*ps: int) -> frozenset[int]:
    return frozenset(ps)


def test_a_new_member_gets_only_free_partitions() -> None:
    m = ConsumerGroupMember("m")
    held = {(T, 0): 3}
    assert reconcile(m, 4, {T: fs(0, 1)}, {}, held)
    assert (m.member_epoch, m.state, m.assigned) == (
        4,
        MemberState.UNRELEASED_PARTITIONS,
        {T: fs(1)},
    )
    # once partition 0 is released, the next heartbeat gets it
    assert reconcile(m, 4, {T: fs(0, 1)}, {T: fs(1)}, {})
    assert (m.state, m.assigned) == (MemberState.STABLE, {T: fs(0, 1)})
    assert not reconcile(m, 4, {T: fs(0, 1)}, {T: fs(0, 1)}, {})


def test_revocation_keeps_the_epoch_until_acknowledged() -> None:
    m = ConsumerGroupMember("m", member_epoch=4, assigned={T: fs(0, 1, 2)})
    assert reconcile(m, 5, {T: fs(0, 3)}, {T: fs(0, 1, 2)}, {})
    assert (m.member_epoch, m.state) == (4, MemberState.UNREVOKED_PARTITIONS)
    assert (m.assigned, m.pending_revocation) == ({T: fs(0)}, {T: fs(1, 2)})
    # still owned (or not reported at all): no progress
    assert not reconcile(m, 5, {T: fs(0, 3)}, {T: fs(0, 2)}, {})
    assert not reconcile(m, 5, {T: fs(0, 3)}, None, {})
    # acknowledged: the new epoch and the new partition
    assert reconcile(m, 5, {T: fs(0, 3)}, {T: fs(0)}, {})
    assert (m.member_epoch, m.previous_member_epoch, m.state) == (
        5,
        4,
        MemberState.STABLE,
    )
    assert (m.assigned, m.pending_revocation) == ({T: fs(0, 3)}, {})


def test_partitions_already_dropped_need_no_revocation_round() -> None:
    m = ConsumerGroupMember("m", member_epoch=4, assigned={T: fs(0, 1)})
    assert reconcile(m, 5, {T: fs(0)}, {T: fs(0)}, {})
    assert (m.member_epoch, m.state, m.assigned) == (5, MemberState.STABLE, {T: fs(0)})


def test_group_state_follows_epochs() -> None:
    g = ConsumerGroup("g")
    assert g.state is ConsumerGroupState.EMPTY
    m = ConsumerGroupMember("m")
    g.add_member(m)
    g.group_epoch = 1
    assert g.state is ConsumerGroupState.ASSIGNING
    g.assignment_epoch = 1
    assert g.state is ConsumerGroupState.RECONCILING
    m.member_epoch = 1
    assert g.state is ConsumerGroupState.STABLE
    m.assigned = {T: fs(0)}
    g.add_partition_epochs(m)
    assert g.partition_epochs == {(T, 0): 1}
    g.remove_member("m")
    assert (g.partition_epochs, g.state) == ({}, ConsumerGroupState.EMPTY)
