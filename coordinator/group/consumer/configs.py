"""A consumer group's dynamic configs (Kafka's ``GroupConfig``, ``kafka-configs --entity-type
groups``): each ``consumer.X`` defaults to the broker's ``group.consumer.X``, within
``group.consumer.min.X`` and ``group.consumer.max.X``, and the session must outlast the heartbeat
interval."""
from __future__ import annotations

SESSION_TIMEOUT, HEARTBEAT_INTERVAL = "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"
ASSIGNMENT_INTERVAL = "consumer.assignment.interval.ms"       # Kafka 4.3 (KIP-1263)


def define_configs(configs, broker, assignment_interval: bool) -> None:
    """Define the consumer group configs in ``configs`` (the context's GroupConfigs) from the
    ``broker`` config; ``assignment_interval``: the release has it (4.3)."""
    names = [SESSION_TIMEOUT, HEARTBEAT_INTERVAL] + ([ASSIGNMENT_INTERVAL] if assignment_interval else [])
    for name in names:
        what = name[len("consumer."):]
        keys = [f"group.consumer.{what}", f"group.consumer.min.{what}", f"group.consumer.max.{what}"]
        configs.define(name, *(int(broker[k]) for k in keys), keys[1], keys[2], keys[0])
    configs.add_check(_check)


def _check(value) -> None:
    """GroupConfig.validate of a group's consumer configs taken together."""
    if value(HEARTBEAT_INTERVAL) >= value(SESSION_TIMEOUT):
        raise ValueError("consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms")
