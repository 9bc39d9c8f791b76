"""Scenario files: the TOML format, round trips, overrides and clear errors."""
from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from groupcoord.sim import scenario
from groupcoord.sim.scenario import ScenarioError

EXAMPLES = sorted((Path(__file__).parents[2] / "examples" / "scenarios").glob("*.toml"))

BASE = {"topics": {"t": 6}, "groups": [{"name": "g", "topics": ["t"]}]}


def test_examples_load_and_round_trip():
    assert {p.name for p in EXAMPLES} >= {"rolling-restart-200.toml", "crashes-and-coordinator-move.toml"}
    for path in EXAMPLES:
        sc = scenario.load(path)
        assert sc.name == path.stem
        again = scenario.from_dict(sc.to_dict())
        assert again == sc, path


def test_rolling_restart_has_eager_and_cooperative_variants():
    sc = scenario.load(next(p for p in EXAMPLES if p.name == "rolling-restart-200.toml"))
    assert {g.protocol for g in sc.groups} == {"eager", "cooperative"}
    assert all(g.members == 200 and g.count == 1 for g in sc.groups)
    assert [e.action for e in sc.events] == ["restart"]


def test_defaults_and_protocol_derivation():
    sc = scenario.from_dict(BASE)
    g = sc.groups[0]
    assert (g.members, g.strategy, g.protocol, g.group_protocol, g.session_ms, g.heartbeat_ms) == \
        (3, ["range"], "eager", "classic", 45000, 3000)
    coop = scenario.from_dict({**BASE, "groups": [{"name": "g", "topics": ["t"], "strategy": "cooperative-sticky"}]})
    assert coop.groups[0].protocol == "cooperative"
    # the upgrade path: cooperative-sticky listed with range runs the eager protocol
    mixed = scenario.from_dict({**BASE, "groups": [{"name": "g", "topics": ["t"],
                                                    "strategy": ["cooperative-sticky", "range"]}]})
    assert mixed.groups[0].protocol == "eager"


def test_consumer_protocol_groups():
    sc = scenario.from_dict({**BASE, "groups": [{"name": "g", "topics": ["t"], "group_protocol": "consumer"}]})
    g = sc.groups[0]
    assert (g.consumer, g.session_ms, g.heartbeat_ms, g.group_configs()) == (True, None, None, {})
    assert scenario.from_dict(sc.to_dict()) == sc
    # explicit timeouts become the group's configs, once the coordinator's bounds allow them
    wide = {"group.consumer.min.session.timeout.ms": 6000, "group.consumer.min.heartbeat.interval.ms": 1000}
    sc = scenario.from_dict({**BASE, "coordinator": {"config": wide},
                             "groups": [{"name": "g", "topics": ["t"], "group_protocol": "consumer",
                                         "remote_assignor": "range", "session_timeout_ms": 10000,
                                         "heartbeat_interval_ms": 1000}]})
    assert sc.groups[0].group_configs() == {"consumer.session.timeout.ms": 10000, "consumer.heartbeat.interval.ms": 1000}
    # --set group_protocol=consumer on a classic scenario without explicit timeouts, and back
    classic = scenario.from_dict(BASE)
    out = scenario.apply_overrides(classic, {"group_protocol": "consumer", "remote_assignor": "uniform"})
    assert (out.groups[0].group_protocol, out.groups[0].remote_assignor, out.groups[0].session_ms) == \
        ("consumer", "uniform", None)
    back = scenario.apply_overrides(out, {"group_protocol": "classic"})
    assert (back.groups[0].session_ms, back.groups[0].heartbeat_ms) == (45000, 3000)
    # explicit classic timeouts outside the consumer bounds: the error says how to widen them
    explicit = scenario.from_dict({**BASE, "groups": [{"name": "g", "topics": ["t"], "heartbeat_interval_ms": 3000}]})
    with pytest.raises(ScenarioError, match="group.consumer.min.heartbeat.interval.ms"):
        scenario.apply_overrides(explicit, {"group_protocol": "consumer"})


def test_group_copies_have_distinct_ids():
    sc = scenario.from_dict({**BASE, "groups": [{"name": "g", "topics": ["t"], "count": 12}]})
    assert sc.group_ids()[:2] == ["g-00", "g-01"] and len(set(sc.group_ids())) == 12
    assert sc.spec_of("g-11") is sc.groups[0]


def test_overrides():
    sc = scenario.from_dict({**BASE, "events": [{"at_s": 1.5, "action": "crash", "count": 1}]})
    out = scenario.apply_overrides(sc, {"strategy": "cooperative-sticky", "members": 50, "static": True,
                                        "session_timeout_ms": 10000, "duration_s": 30, "seed": 9,
                                        "network.loss": 0.01, "coordinator.nodes": 3})
    g = out.groups[0]
    assert (g.strategy, g.protocol, g.members, g.static, g.session_timeout_ms) == \
        (["cooperative-sticky"], "cooperative", 50, True, 10000)
    assert (out.duration_s, out.seed, out.network.loss, out.coordinator.nodes) == (30, 9, 0.01, 3)
    assert out.events[0].at_ms == 1500
    assert sc.groups[0].strategy == ["range"]          # the original is untouched
    eager = scenario.apply_overrides(out, {"protocol": "eager"})
    assert eager.groups[0].protocol == "eager"
    with pytest.raises(ScenarioError, match="protocol"):
        scenario.apply_overrides(sc, {"strategy": "range", "protocol": "cooperative"})
    with pytest.raises(ScenarioError, match="override 'nope'"):
        scenario.apply_overrides(sc, {"nope": 1})


@pytest.mark.parametrize("change, message", [
    ({"topics": {}}, "topics"),
    ({"groups": [{"name": "g", "topics": ["missing"]}]}, r"groups\[0\].topics: 'missing'"),
    ({"groups": [{"name": "g", "topics": ["t"], "strategy": "fastest"}]}, "unknown assignor 'fastest'"),
    ({"groups": [{"name": "g", "topics": ["t"], "members": -1}]}, r"groups\[0\].members"),
    ({"groups": [{"name": "g", "topics": ["t"], "heartbeat_interval_ms": 50000}]}, "heartbeat_interval_ms"),
    ({"groups": [{"name": "g", "topics": ["t"], "sesion_timeout_ms": 1}]}, "unknown key 'sesion_timeout_ms'"),
    ({"events": [{"at_s": 1, "action": "explode"}]}, r"events\[0\].action"),
    ({"events": [{"action": "crash"}]}, "at_s and at_ms"),
    ({"events": [{"at_s": 1, "action": "slow", "members": [0]}]}, "duration_ms"),
    ({"events": [{"at_s": 1, "action": "crash", "group": "h"}]}, "no group 'h'"),
    ({"events": [{"at_s": 1, "action": "crash", "members": [0], "count": 1}]}, "not both"),
    ({"events": [{"at_s": 1, "action": "move_coordinator", "group": "g"}]}, "nodes >= 2"),
    ({"events": [{"at_s": 1, "action": "node_down", "node": 4}]}, "only 1 nodes"),
    ({"network": {"latency": {"dist": "pareto"}}}, "unknown distribution 'pareto'"),
    ({"network": {"latency": {"dist": "uniform", "min_ms": 1}}}, "max_ms"),
    ({"network": {"loss": 1.5}}, "loss"),
    ({"groups": [{"name": "g", "topics": ["t"], "group_protocol": "new"}]}, r"groups\[0\].group_protocol"),
    ({"groups": [{"name": "g", "topics": ["t"], "group_protocol": "consumer", "remote_assignor": "sticky"}]},
     r"groups\[0\].remote_assignor: expected one of uniform, range"),
    # a consumer group's timeouts are group configs within the coordinator's bounds
    ({"groups": [{"name": "g", "topics": ["t"], "group_protocol": "consumer", "session_timeout_ms": 10000}]},
     r"groups\[0\].session_timeout_ms: 10000 is outside 45000 to 60000.*group.consumer.min.session.timeout.ms"),
    ({"groups": [{"name": "g", "topics": ["t"], "group_protocol": "consumer", "heartbeat_interval_ms": 3000}]},
     r"heartbeat_interval_ms: 3000 is outside 5000 to 15000"),
])
def test_errors_name_the_key(change, message):
    with pytest.raises(ScenarioError, match=message):
        scenario.from_dict({**BASE, **change})


def test_load_reports_bad_toml(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [\n")
    with pytest.raises(ScenarioError, match="not valid TOML"):
        scenario.load(bad)


# ================================================================ share groups, work queues, producers
SHARE = {"name": "q", "topics": ["t"], "group_type": "share"}
#: bounds widened so that short share timeouts, locks and limits are allowed
WIDE_SHARE = {"group.share.min.session.timeout.ms": 1000, "group.share.min.heartbeat.interval.ms": 100,
              "group.share.min.record.lock.duration.ms": 1000, "group.share.max.delivery.count.limit": 20}


def share(**keys) -> dict:
    return {**BASE, "groups": [{**SHARE, **keys}]}


def test_share_group_defaults():
    sc = scenario.from_dict(share())
    g = sc.groups[0]
    assert (g.group_type, g.share, g.consumer, g.classic) == ("share", True, False, False)
    assert (g.session_ms, g.heartbeat_ms, g.lock_duration_ms, g.delivery_limit, g.group_configs()) == \
        (None, None, None, None, {})
    assert (g.acknowledgement_mode, g.max_poll_records, g.job_ms, g.work_queue, g.records_per_poll) == \
        ("implicit", 500, {"dist": "constant", "ms": 0}, True, 0)
    # what a share group has none of holds empty values
    assert (g.strategy, g.protocol, g.group_protocol, g.remote_assignor, g.static, g.callback_ms, g.auto_commit) == \
        ([], "", "", "", False, 0, False)
    # a consumer group is what it was: no work queue, no share settings
    c = scenario.from_dict(BASE).groups[0]
    assert (c.group_type, c.share, c.classic, c.work_queue, c.job_ms, c.records_per_poll, c.max_poll_records) == \
        ("consumer", False, True, False, None, 10, 500)
    assert (c.acknowledgement_mode, c.lock_duration_ms, c.delivery_limit) == ("", None, None)


def test_share_group_configs():
    sc = scenario.from_dict({**share(session_timeout_ms=6000, heartbeat_interval_ms=500, lock_duration_ms=2000,
                                     delivery_limit=15, acknowledgement_mode="explicit", max_poll_records=20),
                             "coordinator": {"config": WIDE_SHARE}})
    g = sc.groups[0]
    assert (g.session_ms, g.heartbeat_ms, g.acknowledgement_mode, g.max_poll_records) == (6000, 500, "explicit", 20)
    assert g.group_configs() == {"share.session.timeout.ms": 6000, "share.heartbeat.interval.ms": 500,
                                 "share.record.lock.duration.ms": 2000, "share.delivery.count.limit": 15}
    # within Kafka's default bounds nothing needs widening
    g = scenario.from_dict(share(session_timeout_ms=50000, lock_duration_ms=20000, delivery_limit=3)).groups[0]
    assert g.group_configs() == {"share.session.timeout.ms": 50000, "share.record.lock.duration.ms": 20000,
                                 "share.delivery.count.limit": 3}
    # Kafka 4.1 serves share groups with share.version = 1
    on = scenario.from_dict({**share(), "coordinator": {"config": {"groupcoord.kafka.version": "4.1",
                                                                    "share.version": 1}}})
    assert on.groups[0].share


@pytest.mark.parametrize("key, value", [
    ("group_protocol", "consumer"), ("strategy", "range"), ("protocol", "eager"), ("remote_assignor", "uniform"),
    ("static", True), ("callback_ms", 10), ("auto_commit", False), ("auto_commit_interval_ms", 1000),
    ("records_per_poll", 5),
])
def test_share_group_refuses_consumer_keys(key, value):
    with pytest.raises(ScenarioError, match=rf"groups\[0\]\.{key}: a share group"):
        scenario.from_dict(share(**{key: value}))


@pytest.mark.parametrize("key, value", [("acknowledgement_mode", "implicit"), ("lock_duration_ms", 30000),
                                        ("delivery_limit", 5)])
def test_consumer_group_refuses_share_keys(key, value):
    with pytest.raises(ScenarioError, match=rf"groups\[0\]\.{key}: a share group's setting"):
        scenario.from_dict({**BASE, "groups": [{"name": "g", "topics": ["t"], key: value}]})


@pytest.mark.parametrize("change, message", [
    ({"group_type": "streams"}, r"groups\[0\]\.group_type: expected 'consumer' or 'share', got 'streams'"),
    ({"acknowledgement_mode": "auto"}, r"groups\[0\]\.acknowledgement_mode: expected 'implicit' or 'explicit'"),
    ({"max_poll_records": 0}, r"groups\[0\]\.max_poll_records: must be at least 1"),
    ({"lock_duration_ms": 0}, r"groups\[0\]\.lock_duration_ms: must be at least 1"),
    ({"delivery_limit": "5"}, r"groups\[0\]\.delivery_limit: expected an integer"),
    # the group configs lie within the coordinator's group.share.min/max.* bounds; the error says how to widen them
    ({"session_timeout_ms": 10000},
     r"groups\[0\]\.session_timeout_ms: 10000 is outside 45000 to 60000, the coordinator's bounds for a share "
     r"group's share.session.timeout.ms .*group.share.min.session.timeout.ms"),
    ({"heartbeat_interval_ms": 20000},
     r"groups\[0\]\.heartbeat_interval_ms: 20000 is outside 5000 to 15000.*group.share.max.heartbeat.interval.ms"),
    ({"lock_duration_ms": 5000},
     r"groups\[0\]\.lock_duration_ms: 5000 is outside 15000 to 60000.*share.record.lock.duration.ms"
     r".*group.share.min.record.lock.duration.ms"),
    ({"delivery_limit": 11},
     r"groups\[0\]\.delivery_limit: 11 is outside 2 to 10.*group.share.max.delivery.count.limit=11"),
    # share groups' configs: enable.auto.commit is refused by the share consumer, max.poll.records has its key
    ({"config": {"enable.auto.commit": False}}, r"groups\[0\]\.config: 'enable.auto.commit' cannot be set in a share"),
    ({"config": {"group.instance.id": "x"}}, r"groups\[0\]\.config: 'group.instance.id' cannot be set"),
    ({"config": {"max.poll.records": 5}},
     r"groups\[0\]\.config: give 'max.poll.records' as the group's max_poll_records"),
    ({"config": {"share.acknowledgement.mode": "explicit"}}, "as the group's acknowledgement_mode"),
])
def test_share_group_errors(change, message):
    with pytest.raises(ScenarioError, match=message):
        scenario.from_dict(share(**change))


@pytest.mark.parametrize("keys, config, message", [
    # the heartbeat interval must stay below the session, the coordinator's default interval included
    ({"session_timeout_ms": 5000}, {"group.share.min.session.timeout.ms": 1000},
     r"groups\[0\]\.heartbeat_interval_ms: must be below the group's session timeout \(5000 ms\)"),
    # Kafka 4.1 serves no share groups unless share.version is 1; 3.9 never
    ({}, {"groupcoord.kafka.version": "4.1"},
     r"groups\[0\]\.group_type: .*serves no share groups.*\"share.version\" = 1"),
    ({}, {"groupcoord.kafka.version": "3.9"}, r"groups\[0\]\.group_type: .*came with Kafka 4.1"),
    # share.delivery.count.limit is a group config from Kafka 4.3
    ({"delivery_limit": 4}, {"groupcoord.kafka.version": "4.2"},
     r"groups\[0\]\.delivery_limit: .*came with Kafka 4.3"),
    ({}, {"group.share.max.delivery.count.limit": 1}, "coordinator.config: "),
])
def test_share_group_coordinator_errors(keys, config, message):
    with pytest.raises(ScenarioError, match=message):
        scenario.from_dict({**share(**keys), "coordinator": {"config": config}})


def test_consumer_group_refuses_share_consumer_configs():
    with pytest.raises(ScenarioError, match=r"groups\[0\]\.config: 'share.acquire.mode' cannot be set in a consumer"):
        scenario.from_dict({**BASE, "groups": [{"name": "g", "topics": ["t"], "config": {"share.acquire.mode": "x"}}]})
    with pytest.raises(ScenarioError, match="give 'max.poll.records' as the group's max_poll_records"):
        scenario.from_dict({**BASE, "groups": [{"name": "g", "topics": ["t"], "config": {"max.poll.records": 5}}]})
    g = scenario.from_dict({**BASE, "groups": [{"name": "g", "topics": ["t"], "max_poll_records": 7}]}).groups[0]
    assert (g.max_poll_records, g.records_per_poll, g.work_queue) == (7, 10, False)


@pytest.mark.parametrize("job, parsed", [
    ({"dist": "constant", "ms": 20}, {"dist": "constant", "ms": 20}),
    (20, {"dist": "constant", "ms": 20}),
    (2.5, {"dist": "constant", "ms": 2.5}),
    ({"ms": 3}, {"dist": "constant", "ms": 3}),
    ({"dist": "uniform", "min_ms": 5, "max_ms": 50}, {"dist": "uniform", "min_ms": 5, "max_ms": 50}),
    ({"dist": "exponential", "mean_ms": 12.5}, {"dist": "exponential", "mean_ms": 12.5}),
    ({"dist": "lognormal", "median_ms": 10, "sigma": 0.8}, {"dist": "lognormal", "median_ms": 10, "sigma": 0.8}),
    ({"dist": "pareto", "scale_ms": 4, "alpha": 1.2}, {"dist": "pareto", "scale_ms": 4, "alpha": 1.2}),
])
def test_job_distributions(job, parsed):
    for group in ({"name": "g", "topics": ["t"]}, SHARE):
        sc = scenario.from_dict({**BASE, "groups": [{**group, "job_ms": job}]})
        g = sc.groups[0]
        assert (g.job_ms, g.work_queue, g.records_per_poll) == (parsed, True, 0)
        assert scenario.from_dict(sc.to_dict()) == sc


@pytest.mark.parametrize("job, message", [
    ({"dist": "fixed", "ms": 1}, r"groups\[0\]\.job_ms\.dist: unknown distribution 'fixed' \(known: constant, uniform, "
                                 r"exponential, lognormal, pareto\)"),
    ({"dist": "normal", "mean_ms": 1, "stddev_ms": 1}, "unknown distribution 'normal'"),
    ({"dist": ["constant"]}, "unknown distribution"),
    ({"dist": "uniform", "min_ms": 5}, r"groups\[0\]\.job_ms\.max_ms: required by the uniform distribution"),
    ({"dist": "uniform", "min_ms": 50, "max_ms": 5}, r"groups\[0\]\.job_ms: min_ms is above max_ms"),
    ({"dist": "exponential", "mean_ms": -1}, r"groups\[0\]\.job_ms\.mean_ms: must be at least 0"),
    ({"dist": "lognormal", "median_ms": 10}, r"groups\[0\]\.job_ms\.sigma: required"),
    ({"dist": "pareto", "scale_ms": 4, "alpha": 0}, r"groups\[0\]\.job_ms\.alpha: must be above 0"),
    ({"dist": "pareto", "scale_ms": 4}, r"groups\[0\]\.job_ms\.alpha: required by the pareto distribution"),
    ({"dist": "constant", "ms": 1, "mean_ms": 2}, r"groups\[0\]\.job_ms: unknown key 'mean_ms'"),
    ({"dist": "constant", "ms": "fast"}, r"groups\[0\]\.job_ms\.ms: expected a number"),
    ("fast", r"groups\[0\]\.job_ms: expected a number of ms or a table with 'dist'"),
    (True, r"groups\[0\]\.job_ms: expected a number of ms"),
])
def test_job_distribution_errors(job, message):
    with pytest.raises(ScenarioError, match=message):
        scenario.from_dict({**BASE, "groups": [{"name": "g", "topics": ["t"], "job_ms": job}]})


def test_records_per_poll_not_with_job_ms():
    with pytest.raises(ScenarioError,
                       match=r"groups\[0\]\.records_per_poll: give records_per_poll or job_ms, not both"):
        scenario.from_dict({**BASE, "groups": [{"name": "g", "topics": ["t"], "job_ms": 5, "records_per_poll": 10}]})


def test_produce():
    sc = scenario.from_dict({**BASE, "duration_s": 10, "topics": {"t": 6, "u": 2},
                             "produce": [{"topic": "t", "rate_per_s": 50},
                                         {"topic": "u", "rate_per_s": 2.5, "start_s": 1, "stop_s": 4.5,
                                          "records": 5, "batch": 2}]})
    first, second = sc.produce
    assert (first.topic, first.rate_per_s, first.start_s, first.stop_s, first.records, first.batch) == \
        ("t", 50.0, 0.0, None, None, 1)
    assert (second.topic, second.rate_per_s, second.start_s, second.stop_s, second.records, second.batch) == \
        ("u", 2.5, 1.0, 4.5, 5, 2)
    # 50 a second for the run's 10 s, one record a request, every 20 ms
    assert first.stop_ms(sc.duration_ms) == 10000
    reqs = list(first.requests(sc.duration_ms))
    assert (len(reqs), reqs[:3], reqs[-1]) == (500, [(0, 1), (20, 1), (40, 1)], (9980, 1))
    # batches of 2 at 2.5 a second: every 800 ms from 1 s, capped at 5 records
    assert list(second.requests(sc.duration_ms)) == [(1000, 2), (1800, 2), (2600, 1)]
    # without the cap it stops before stop_s
    uncapped = scenario.ProduceSpec("u", 2.5, 1.0, 4.5, None, 2)
    assert list(uncapped.requests(sc.duration_ms)) == [(1000, 2), (1800, 2), (2600, 2), (3400, 2), (4200, 2)]
    # the run's end comes first
    late = scenario.ProduceSpec("u", 1.0, 0.0, 600.0)
    assert (late.stop_ms(3000), list(late.requests(3000))) == (3000, [(0, 1), (1000, 1), (2000, 1)])
    assert scenario.from_dict(sc.to_dict()) == sc
    assert scenario.from_dict(json.loads(json.dumps(sc.to_dict()))) == sc
    assert scenario.from_dict(BASE).produce == []


@pytest.mark.parametrize("produce, message", [
    ({"topic": "nope", "rate_per_s": 1}, r"produce\[0\]\.topic: expected a topic declared in \[topics\], got 'nope'"),
    ({"rate_per_s": 1}, r"produce\[0\]\.topic: .*got None"),
    ({"topic": "t"}, r"produce\[0\]\.rate_per_s: required"),
    ({"topic": "t", "rate_per_s": 0}, r"produce\[0\]\.rate_per_s: must be above 0"),
    ({"topic": "t", "rate_per_s": -2}, r"produce\[0\]\.rate_per_s: must be at least 0"),
    ({"topic": "t", "rate_per_s": 1, "start_s": 5, "stop_s": 5}, r"produce\[0\]\.stop_s: must be after start_s"),
    ({"topic": "t", "rate_per_s": 1, "start_s": -1}, r"produce\[0\]\.start_s: must be at least 0"),
    ({"topic": "t", "rate_per_s": 1, "records": 0}, r"produce\[0\]\.records: must be at least 1"),
    ({"topic": "t", "rate_per_s": 1, "batch": 0}, r"produce\[0\]\.batch: must be at least 1"),
    ({"topic": "t", "rate_per_s": 1, "batch": 1.5}, r"produce\[0\]\.batch: expected an integer"),
    ({"topic": "t", "rate_per_s": 1, "rate": 2}, r"produce\[0\]: unknown key 'rate'"),
    ("t", r"produce\[0\]: expected a table"),
])
def test_produce_errors(produce, message):
    with pytest.raises(ScenarioError, match=message):
        scenario.from_dict({**BASE, "produce": [produce]})
    with pytest.raises(ScenarioError, match=r"produce: expected a list of \[\[produce\]\] tables"):
        scenario.from_dict({**BASE, "produce": {"topic": "t", "rate_per_s": 1}})


def test_events_act_on_share_groups():
    events = [{"at_s": 1, "action": "join", "group": "q", "count": 2},
              {"at_s": 2, "action": "crash", "group": "q", "members": [4], "restart_after_ms": 100},
              {"at_s": 3, "action": "slow", "group": "q", "members": [0], "kind": "heartbeat", "duration_ms": 10},
              {"at_s": 4, "action": "slow", "group": "q", "count": 1, "kind": "poll", "duration_ms": 10},
              {"at_s": 5, "action": "restart", "group": "q", "interval_ms": 10},
              {"at_s": 6, "action": "leave", "group": "q", "members": [1]},
              {"at_s": 7, "action": "subscribe", "group": "q", "topics": ["t"]},
              {"at_s": 8, "action": "network_partition", "group": "q", "duration_ms": 10},
              {"at_s": 9, "action": "move_coordinator", "group": "q"}]
    sc = scenario.from_dict({**share(), "coordinator": {"nodes": 2}, "events": events})
    assert [e.action for e in sc.events] == ["join", "crash", "slow", "slow", "restart", "leave", "subscribe",
                                             "network_partition", "move_coordinator"]
    assert sc.events[1].params["members"] == [4] and sc.events[3].params["kind"] == "poll"
    assert scenario.from_dict(sc.to_dict()) == sc
    # member indices are checked against the share group's members as against any other's
    with pytest.raises(ScenarioError, match=r"events\[0\]\.members: group 'q' has no member 3"):
        scenario.from_dict({**share(), "events": [{"at_s": 1, "action": "crash", "group": "q", "members": [3]}]})


def test_round_trip_of_every_new_key():
    sc = scenario.from_dict({
        "topics": {"t": 6}, "duration_s": 30, "coordinator": {"config": WIDE_SHARE},
        "groups": [{**SHARE, "count": 2, "session_timeout_ms": 6000, "heartbeat_interval_ms": 500,
                    "acknowledgement_mode": "explicit", "lock_duration_ms": 2000, "delivery_limit": 12,
                    "max_poll_records": 10, "job_ms": {"dist": "lognormal", "median_ms": 8, "sigma": 1}},
                   {"name": "w", "topics": ["t"], "job_ms": {"dist": "uniform", "min_ms": 1, "max_ms": 3},
                    "max_poll_records": 100, "group_protocol": "consumer"},
                   {"name": "c", "topics": ["t"], "records_per_poll": 4}],
        "produce": [{"topic": "t", "rate_per_s": 100, "start_s": 2, "stop_s": 20, "records": 1000, "batch": 10}]})
    d = sc.to_dict()
    assert scenario.from_dict(d) == sc
    assert scenario.from_dict(json.loads(json.dumps(d))) == sc
    q, w, c = d["groups"]
    # each group writes the keys of its type only
    assert not {"strategy", "protocol", "group_protocol", "static", "auto_commit", "records_per_poll"} & set(q)
    assert (q["acknowledgement_mode"], q["lock_duration_ms"], q["delivery_limit"], q["job_ms"]["dist"]) == \
        ("explicit", 2000, 12, "lognormal")
    assert not {"acknowledgement_mode", "lock_duration_ms", "delivery_limit", "records_per_poll"} & set(w)
    assert (w["job_ms"], w["max_poll_records"]) == ({"dist": "uniform", "min_ms": 1, "max_ms": 3}, 100)
    assert (c["records_per_poll"], "job_ms" in c) == (4, False)
    assert d["produce"] == [{"topic": "t", "rate_per_s": 100.0, "start_s": 2.0, "stop_s": 20.0, "records": 1000,
                             "batch": 10}]
    # a share group's default job_ms is not written, and read back as the default
    plain = scenario.from_dict(share())
    assert "job_ms" not in plain.to_dict()["groups"][0] and scenario.from_dict(plain.to_dict()) == plain


def test_overrides_of_share_groups_and_work_queues():
    mixed = scenario.from_dict({**BASE, "groups": [{"name": "g", "topics": ["t"]}, SHARE],
                                "produce": [{"topic": "t", "rate_per_s": 10}]})
    # a group key goes to the groups that have it
    out = scenario.apply_overrides(mixed, {"static": True, "acknowledgement_mode": "explicit", "max_poll_records": 9,
                                           "records_per_poll": 3, "lock_duration_ms": 20000})
    g, q = out.groups
    assert (g.static, g.acknowledgement_mode, g.max_poll_records, g.records_per_poll) == (True, "", 9, 3)
    assert (q.static, q.acknowledgement_mode, q.max_poll_records, q.lock_duration_ms) == (False, "explicit", 9, 20000)
    # job_ms makes every group a work queue
    wq = scenario.apply_overrides(mixed, {"job_ms": {"dist": "exponential", "mean_ms": 5}})
    assert [(x.job_ms, x.records_per_poll) for x in wq.groups] == [({"dist": "exponential", "mean_ms": 5}, 0)] * 2
    assert scenario.apply_overrides(mixed, {"job_ms": 7}).groups[0].job_ms == {"dist": "constant", "ms": 7}
    # group_type turns consumer groups into share groups and back, dropping what the new type has not
    to_share = scenario.apply_overrides(out, {"group_type": "share"})
    assert [(x.group_type, x.static, x.records_per_poll, x.job_ms) for x in to_share.groups] == \
        [("share", False, 0, {"dist": "constant", "ms": 0})] * 2
    back = scenario.apply_overrides(to_share, {"group_type": "consumer"})
    assert [(x.group_type, x.group_protocol, x.strategy, x.acknowledgement_mode, x.lock_duration_ms, x.job_ms,
             x.records_per_poll) for x in back.groups] == [("consumer", "classic", ["range"], "", None, None, 10)] * 2
    # with explicit classic timeouts outside the share bounds, the error says how to widen them
    classic = scenario.from_dict({**BASE, "groups": [{"name": "g", "topics": ["t"], "session_timeout_ms": 10000}]})
    with pytest.raises(ScenarioError, match="group.share.min.session.timeout.ms"):
        scenario.apply_overrides(classic, {"group_type": "share"})
    # a key no group has is an error
    with pytest.raises(ScenarioError, match="override 'strategy': no group of the scenario has it"):
        scenario.apply_overrides(to_share, {"strategy": "range"})
    with pytest.raises(ScenarioError, match="override 'delivery_limit': no group of the scenario has it"):
        scenario.apply_overrides(back, {"delivery_limit": 3})
    with pytest.raises(ScenarioError, match="override 'records_per_poll': no group"):
        scenario.apply_overrides(wq, {"records_per_poll": 3})
    with pytest.raises(ScenarioError, match="override 'static'"):
        scenario.apply_overrides(mixed, {"group_type": "share", "static": True})
    # a new strategy re-derives the consumer groups' protocol, and leaves share groups alone
    coop = scenario.apply_overrides(mixed, {"strategy": "cooperative-sticky"})
    assert [(x.strategy, x.protocol) for x in coop.groups] == [(["cooperative-sticky"], "cooperative"), ([], "")]
    # produce.<key> sets one key of every producer
    fast = scenario.apply_overrides(mixed, {"produce.rate_per_s": 500, "produce.batch": 50})
    assert [(p.rate_per_s, p.batch) for p in fast.produce] == [(500.0, 50)]
    with pytest.raises(ScenarioError, match="override 'produce.rate': not a"):
        scenario.apply_overrides(mixed, {"produce.rate": 1})
    with pytest.raises(ScenarioError, match=r"override 'produce.batch': the scenario has no \[\[produce\]\]"):
        scenario.apply_overrides(scenario.from_dict(BASE), {"produce.batch": 2})
    with pytest.raises(ScenarioError, match=r"produce\[0\]\.rate_per_s: must be above 0"):
        scenario.apply_overrides(mixed, {"produce.rate_per_s": 0})


def test_readme_share_example_parses():
    readme = (Path(__file__).parents[2] / "examples" / "scenarios" / "README.md").read_text()
    block = next(b.split("\n", 1)[1] for b in readme.split("```")[1::2] if 'group_type = "share"' in b)
    sc = scenario.from_dict(tomllib.loads(block))
    g = sc.groups[0]
    assert (g.share, g.members, g.job_ms, g.max_poll_records) == \
        (True, 8, {"dist": "pareto", "scale_ms": 10, "alpha": 1.5}, 50)
    assert [(p.topic, p.rate_per_s) for p in sc.produce] == [("jobs", 200.0)]
