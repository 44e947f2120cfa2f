"""Classic protocol membership with confluent-kafka: static membership (a member that
re-joins with the same group.instance.id triggers no rebalance) and cooperative-sticky
(adding a member revokes only the partitions that move)."""

import sys

from common import group_broker, create_topic, wait_for
from members import Member

PARTITIONS = 6


def rebalances(broker, group):
    count = broker.metric("oxbow_group_rebalances_total", group=group, protocol="classic")
    assert count is not None, f"no oxbow_group_rebalances_total for {group}"
    return count


def stable(members):
    return sorted(p for m in members for p in m.assignment) == list(range(PARTITIONS)) and all(
        m.assignment for m in members
    )


def static_membership(broker):
    create_topic(broker.bootstrap, "static", PARTITIONS)
    config = {"session.timeout.ms": 30000}
    a = Member(broker.bootstrap, "static-g", "static", **{"group.instance.id": "a", **config})
    b = Member(broker.bootstrap, "static-g", "static", **{"group.instance.id": "b", **config})
    for m in (a, b):
        m.start()
    wait_for(lambda: stable([a, b]), 60, "the static group to be stable")
    before = rebalances(broker, "static-g")
    assert before >= 1, f"the group became stable through {before} rebalances"
    b_events = b.assign_events
    a_partitions = set(a.assignment)
    # A static member's close sends no LeaveGroup; it comes back with the same instance id.
    a.stop()
    a2 = Member(broker.bootstrap, "static-g", "static", **{"group.instance.id": "a", **config})
    a2.start()
    wait_for(lambda: a2.assignment, 60, "the restarted static member's assignment")
    assert a2.assignment == a_partitions, (a2.assignment, a_partitions)
    assert rebalances(broker, "static-g") == before, "a static re-join caused a rebalance"
    assert b.assign_events == b_events, "the other member was re-assigned"
    for m in (a2, b):
        m.stop()
        assert not m.errors, m.errors
    print("static membership: restart with the same instance id, no rebalance, same partitions")


def cooperative_sticky(broker):
    create_topic(broker.bootstrap, "coop", PARTITIONS)
    config = {"partition.assignment.strategy": "cooperative-sticky"}
    a = Member(broker.bootstrap, "coop-g", "coop", **config)
    b = Member(broker.bootstrap, "coop-g", "coop", **config)
    for m in (a, b):
        m.start()
    wait_for(lambda: stable([a, b]) and len(a.assignment) == 3, 60, "two cooperative members with 3 partitions each")
    before = {"a": set(a.assignment), "b": set(b.assignment)}
    a.revoked.clear()
    b.revoked.clear()
    c = Member(broker.bootstrap, "coop-g", "coop", **config)
    c.start()
    wait_for(lambda: stable([a, b, c]) and all(len(m.assignment) == 2 for m in (a, b, c)), 60, "three members with 2 partitions each")
    for name, m in (("a", a), ("b", b)):
        revoked = set().union(*m.revoked) if m.revoked else set()
        assert revoked == before[name] - m.assignment, f"{name} revoked {revoked}, kept {m.assignment}"
        assert len(revoked) == 1, f"{name} revoked {revoked}: only moved partitions may be revoked"
    for m in (a, b, c):
        m.stop()
        assert not m.errors, m.errors
    print("cooperative-sticky: adding a member revoked exactly the partitions that moved")


def main():
    with group_broker("group.initial.rebalance.delay.ms=0") as broker:
        static_membership(broker)
        cooperative_sticky(broker)
    print("membership: OK")


if __name__ == "__main__":
    sys.exit(main())
