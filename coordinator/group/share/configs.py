"""A share group's dynamic configs (Kafka's ``GroupConfig``, ``kafka-configs --entity-type groups``):
each ``share.X`` that has a broker config defaults to the broker's ``group.share.X``, within
``group.share.min.X`` and ``group.share.max.X``; ``share.auto.offset.reset``,
``share.isolation.level`` and ``share.renew.acknowledge.enable`` have Kafka's fixed defaults. The
session must outlast the heartbeat interval.

Per release, as Kafka's GroupConfig defines them: 4.1 and 4.2 have the session timeout, the heartbeat
interval, the record lock duration, the auto offset reset and the isolation level; 4.3 adds the
delivery count limit, the partition's record locks, renew acknowledgements and the assignment
interval (KIP-1240, KIP-1263).
"""
from __future__ import annotations

from ...releases import at_least
from ...share.partition import java_duration_ns
from ..configs import BOOLEAN, STRING

SESSION_TIMEOUT, HEARTBEAT_INTERVAL = "share.session.timeout.ms", "share.heartbeat.interval.ms"
RECORD_LOCK_DURATION = "share.record.lock.duration.ms"
DELIVERY_COUNT_LIMIT = "share.delivery.count.limit"                     # Kafka 4.3
PARTITION_MAX_RECORD_LOCKS = "share.partition.max.record.locks"         # Kafka 4.3
AUTO_OFFSET_RESET = "share.auto.offset.reset"
ISOLATION_LEVEL = "share.isolation.level"
RENEW_ACKNOWLEDGE_ENABLE = "share.renew.acknowledge.enable"             # Kafka 4.3
ASSIGNMENT_INTERVAL = "share.assignment.interval.ms"                    # Kafka 4.3

#: the INT configs of each release, in GroupConfig's order: (group config, what its broker configs name)
_BOUNDED = [(SESSION_TIMEOUT, "session.timeout.ms"), (HEARTBEAT_INTERVAL, "heartbeat.interval.ms"),
            (RECORD_LOCK_DURATION, "record.lock.duration.ms")]
_BOUNDED_4_3 = [(DELIVERY_COUNT_LIMIT, "delivery.count.limit"),
                (PARTITION_MAX_RECORD_LOCKS, "partition.max.record.locks")]


def define_configs(configs, broker, release: str) -> None:
    """Define the share group configs of the ``release`` in ``configs`` (the context's GroupConfigs)
    from the ``broker`` config."""
    new = at_least(release, "4.3")
    for name, what in _BOUNDED + (_BOUNDED_4_3 if new else []):
        _define_bounded(configs, broker, name, what)
    configs.define(AUTO_OFFSET_RESET, "latest", kind=STRING, validator=_check_auto_offset_reset)
    configs.define(ISOLATION_LEVEL, "read_uncommitted", kind=STRING, validator=_check_isolation_level)
    if new:
        configs.define(RENEW_ACKNOWLEDGE_ENABLE, True, kind=BOOLEAN)
        _define_bounded(configs, broker, ASSIGNMENT_INTERVAL, "assignment.interval.ms")
    configs.add_check(_check)


def _define_bounded(configs, broker, name: str, what: str) -> None:
    keys = [f"group.share.{what}", f"group.share.min.{what}", f"group.share.max.{what}"]
    configs.define(name, *(int(broker[k]) for k in keys), keys[1], keys[2], keys[0])


def _check(value) -> None:
    """GroupConfig.validate of a group's share configs taken together."""
    if value(SESSION_TIMEOUT) <= value(HEARTBEAT_INTERVAL):
        raise ValueError(f"{SESSION_TIMEOUT} must be greater than {HEARTBEAT_INTERVAL}")


def _check_isolation_level(name: str, value: str) -> None:
    """ConfigDef's ValidString of ``share.isolation.level``."""
    if value not in ("read_committed", "read_uncommitted"):
        raise ValueError(f"Invalid value {value} for configuration {name}: String must be one of: read_committed, "
                         "read_uncommitted")


def _check_auto_offset_reset(name: str, value: str) -> None:
    """``ShareGroupAutoOffsetResetStrategy.Validator``: earliest, latest or by_duration:<ISO-8601>."""
    if auto_offset_reset(value) is None:
        raise ValueError(f"Invalid value {value} for configuration {name}: Invalid value `{value}` for configuration "
                         f"{name}. The value must be either 'earliest', 'latest' or of the format "
                         "'by_duration:<PnDTnHnMn.nS>'.")


def auto_offset_reset(value: str) -> tuple[str, int | None] | None:
    """``share.auto.offset.reset`` parsed as Kafka's ``ShareGroupAutoOffsetResetStrategy.fromString``:
    ("earliest", None), ("latest", None) or ("by_duration", milliseconds), or None when Kafka refuses it
    (``none`` is a consumer's strategy, not a share group's; a duration is not negative)."""
    if value in ("earliest", "latest"):
        return value, None
    prefix = "by_duration:"
    if value.startswith(prefix):
        nanos = java_duration_ns(value[len(prefix):])
        if nanos is not None and nanos >= 0:
            return "by_duration", nanos // 1_000_000
    return None
