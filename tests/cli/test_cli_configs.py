"""``groupcoord configs`` (Kafka's kafka-configs.sh): its option checks in ConfigCommandOptions'
words, --add-config's and a properties file's parsing, and describe and alter against an embedded
coordinator as kafka-configs.sh prints them (Kafka 4.3's, and 3.9's, which has neither ListConfigResources
v1 nor group configs). A running group taking an altered config is in tests/interop/test_interop_group_configs.py."""
from __future__ import annotations

import pytest

from groupcoord.cli.configs import ConfigCommandError, parse_add_config, read_properties

from test_cli_groups_topics import free_port, run


@pytest.mark.parametrize("argv, message", [
    (["--group", "g", "--describe", "--alter"], "Command must include exactly one action: --describe, --alter"),
    (["--group", "g", "--add-config", "a=1"], "Command must include exactly one action: --describe, --alter"),
    (["--group", "g", "--describe", "--delete-config", "a"],
     'Option "[describe]" can\'t be used with option "[delete-config]"'),
    (["--bootstrap-server", "h:1"], "At least one entity type must be specified"),
    (["--entity-type", "users", "--entity-name", "u"],
     "Invalid entity type users, the entity type must be one of topics, brokers, groups with a --bootstrap-server"),
    (["--group", "g", "--topic", "t"], "Only 'users' and 'clients' entity types may be specified together"),
    (["--entity-type", "groups", "--entity-type", "groups"], "Duplicate entity type(s) specified: groups"),
    (["--entity-name", "x", "--group", "g"],
     "--entity-{type,name,default} should not be used in conjunction with specific entity flags"),
    (["--broker", "one"], "The entity name for brokers must be a valid integer broker id, but it is: one"),
    (["--broker", "1_0"], "The entity name for brokers must be a valid integer broker id, but it is: 1_0"),
    (["--entity-type", "groups", "--entity-default", "--describe"],
     "--entity-default must not be specified with --describe of groups"),
    (["--entity-type", "groups", "--alter", "--add-config", "a=1"],
     "An entity name must be specified with --alter of groups"),
    (["--entity-type", "brokers", "--alter", "--add-config", "a=1"],
     "An entity-name or default entity must be specified with --alter of users, clients, brokers or ips"),
    (["--group", "g", "--alter", "--add-config", "a=1", "--add-config-file", "f"],
     "Only one of --add-config or --add-config-file must be specified"),
    (["--group", "g", "--alter"],
     "At least one of --add-config, --add-config-file, or --delete-config must be specified with --alter"),
])
def test_options_that_do_not_go_together_are_refused_with_kafkas_message(argv, message):
    r = run("configs", *argv)
    assert r.code == 2 and r.out == ""
    assert r.err.splitlines()[0].startswith(message) and r.err.endswith("See 'groupcoord configs --help'.\n")


def test_add_config_is_split_as_kafka_configs_splits_it(tmp_path):
    assert parse_add_config("a=1, b = 2,c=[x,y],d=") == {"a": "1", "b": "2", "c": "x,y", "d": ""}
    for bad in ("a", "a=1=2", "a=1,,b=2"):
        with pytest.raises(ConfigCommandError, match='all configs to be added must be in the format "key=val"'):
            parse_add_config(bad)
    f = tmp_path / "group.properties"
    f.write_text("# a comment\n! another\n\nconsumer.session.timeout.ms = 60000\nconsumer.heartbeat.interval.ms:6000\n")
    assert read_properties(str(f)) == {"consumer.session.timeout.ms": "60000", "consumer.heartbeat.interval.ms": "6000"}
    # what cannot be read is one line, as groupcoord serve --config says it
    bad = tmp_path / "bad.properties"
    bad.write_bytes(b"consumer.session.timeout.ms\n")
    with pytest.raises(ConfigCommandError, match=r"^--add-config-file .*bad.properties: .*:1: expected key=value$"):
        read_properties(str(bad))
    bad.write_bytes(b"a=\xff\xfe\n")
    with pytest.raises(ConfigCommandError, match=r"^--add-config-file .*bad.properties: .*codec can't decode"):
        read_properties(str(bad))
    with pytest.raises(ConfigCommandError, match=r"No such file"):
        read_properties(str(tmp_path / "missing.properties"))


def test_without_an_entity_the_broker_configs_and_defaults_are_listed():
    r = run("configs")
    assert r.code == 0
    assert "group.consumer.session.timeout.ms = 45000    # " in r.out
    # Kafka's spelling of booleans, not Python's
    assert "auto.create.topics.enable = true    # " in r.out and "True" not in r.out and "False" not in r.out
    # a profile's values
    r = run("configs", "--profile", "test")
    assert r.code == 0 and "group.initial.rebalance.delay.ms = 0    # " in r.out
    assert "group.consumer.session.timeout.ms = 6000    # " in r.out
    r = run("configs", "--profile", "fast")
    assert (r.code, r.err) == (2, "unknown profile 'fast'; known: default, test\n")


def test_a_group_config_is_altered_described_and_deleted(groupcoord):
    configs = ("configs", "--bootstrap-server", groupcoord.bootstrap_servers)
    r = run(*configs, "--group", "billing")
    assert (r.code, r.out) == (0, "The group 'billing' doesn't exist and doesn't have dynamic config.\n")

    r = run(*configs, "--group", "billing", "--alter",
            "--add-config", "consumer.session.timeout.ms=60000,consumer.heartbeat.interval.ms=6000")
    assert (r.code, r.out, r.err) == (0, "Completed updating config for group billing.\n", "")
    assert groupcoord.call(lambda: groupcoord.service.group_coordinator.group_configs.overridden("billing")) == {
        "consumer.session.timeout.ms": 60000, "consumer.heartbeat.interval.ms": 6000}

    # the group has no members: it is known by its configs (ListConfigResources)
    r = run(*configs, "--group", "billing", "--describe")
    assert r.out.splitlines() == [
        "Dynamic configs for group billing are:",
        "  consumer.heartbeat.interval.ms=6000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:"
        "consumer.heartbeat.interval.ms=6000, DEFAULT_CONFIG:group.consumer.heartbeat.interval.ms=250}",
        "  consumer.session.timeout.ms=60000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:"
        "consumer.session.timeout.ms=60000, DEFAULT_CONFIG:group.consumer.session.timeout.ms=6000}",
    ]
    r = run(*configs, "--entity-type", "groups", "--describe")
    assert r.out.splitlines()[0] == "Dynamic configs for group billing are:" and len(r.out.splitlines()) == 3
    r = run(*configs, "--entity-type", "groups", "--entity-name", "billing", "--describe", "--all")
    assert [line.split("=")[0] for line in r.out.splitlines()] == [
        "All configs for group billing are:", "  consumer.assignment.interval.ms",
        "  consumer.heartbeat.interval.ms", "  consumer.session.timeout.ms", "  share.assignment.interval.ms",
        "  share.auto.offset.reset", "  share.delivery.count.limit", "  share.heartbeat.interval.ms",
        "  share.isolation.level", "  share.partition.max.record.locks", "  share.record.lock.duration.ms",
        "  share.renew.acknowledge.enable", "  share.session.timeout.ms"]

    # the broker refuses: its message, exit 1, nothing changed
    r = run(*configs, "--group", "billing", "--alter", "--add-config", "consumer.session.timeout.ms=1")
    assert (r.code, r.out, r.err) == (
        1, "", "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms\n")
    r = run(*configs, "--group", "billing", "--alter", "--delete-config", "consumer.session.timeout.ms,"
            "consumer.heartbeat.interval.ms")
    assert r.code == 0
    r = run(*configs, "--group", "billing")
    assert r.out == "The group 'billing' doesn't exist and doesn't have dynamic config.\n"


def test_broker_and_topic_configs_are_described(groupcoord_factory):
    gc = groupcoord_factory(topics={"orders": 2}, config={"group.consumer.session.timeout.ms": 30000})
    configs = ("configs", "--bootstrap-server", gc.bootstrap_servers)
    r = run(*configs, "--broker", "0")
    assert (r.code, r.out) == (0, "Dynamic configs for broker 0 are:\n")       # every config is static here
    r = run(*configs, "--broker", "0", "--all")
    assert ("  group.consumer.session.timeout.ms=30000 sensitive=false "
            "synonyms={STATIC_BROKER_CONFIG:group.consumer.session.timeout.ms=30000}") in r.out.splitlines()
    assert "  group.consumer.heartbeat.interval.ms=250 sensitive=false synonyms={DEFAULT_CONFIG:" \
           "group.consumer.heartbeat.interval.ms=250}" in r.out.splitlines()
    r = run(*configs, "--entity-type", "brokers", "--describe")
    assert r.out == "Dynamic configs for broker 0 are:\nDefault configs for brokers in the cluster are:\n"
    r = run(*configs, "--broker", "7")
    assert r.out == "The broker '7' doesn't exist and doesn't have dynamic config.\n"
    r = run(*configs, "--topic", "nope")
    assert r.out == "The topic 'nope' doesn't exist and doesn't have dynamic config.\n"
    r = run(*configs, "--topic", "a b")
    assert r.code == 1 and r.err.splitlines()[1] == (
        "java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.InvalidTopicException: "
        "Topic name \"a b\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'")
    r = run(*configs, "--topic", "orders", "--alter", "--add-config", "retention.ms=5")
    assert r.code == 1 and r.err.startswith(f"Error while executing config command with args '--bootstrap-server "
                                            f"{gc.bootstrap_servers} --topic orders --alter --add-config retention.ms=5'\n")
    assert "InvalidRequestException" in r.err


def test_kafka_3_9_has_no_group_configs(groupcoord_factory):
    """Kafka 3.9 has neither ListConfigResources v1 (kafka-configs.sh then describes the group anyway)
    nor the GROUP resource type, which fails DescribeConfigs."""
    gc = groupcoord_factory(config={"groupcoord.kafka.version": "3.9"})
    r = run("configs", "--bootstrap-server", gc.bootstrap_servers, "--group", "billing")
    assert r.code == 1 and r.out == "Dynamic configs for group billing are:\n"
    assert "org.apache.kafka.common.errors.InvalidRequestException" in r.err.splitlines()[1]


def test_an_unreachable_server_is_one_line_and_exit_1():
    r = run("configs", "--bootstrap-server", f"127.0.0.1:{free_port()}", "--group", "g", "--timeout", "300")
    assert r.code == 1 and r.out == ""
    assert r.err.splitlines()[1].startswith("Cannot connect to the bootstrap server 127.0.0.1:")
