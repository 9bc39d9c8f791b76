"""Kafka's server-side assignors of the consumer group protocol (KIP-848): ``uniform`` and ``range``.

Pure functions of the group (members, subscriptions, current targets) and the subscribed topics'
partition counts, as in Kafka's ``group-coordinator/.../group/assignor/``; no I/O, standard library
only. The consumer group computes its target assignment with one of them::

    target = ASSIGNORS["uniform"].assign(GroupSpec(members, homogeneous=True), {topic_id: 8})

:mod:`.spec` has the input types, the error and the orders; :mod:`.uniform` and :mod:`.range` say
which Kafka version and files each follows and where the emulator's order differs from a broker's.
Both are deterministic: the same input gives the same output, whatever the order of
``group.members`` (the result lists the members in that order).
"""
from __future__ import annotations

from .range import RangeAssignor, range_member_order
from .spec import (GroupSpec, MemberSpec, PartitionAssignorError, ServerAssignor, java_string_key,
                   kafka_uuid_str, sorted_member_ids, topic_order, uuid_key)
from .uniform import MAX_ITERATION_COUNT, UniformAssignor

__all__ = ["ASSIGNORS", "DEFAULT_ASSIGNOR", "GroupSpec", "MAX_ITERATION_COUNT", "MemberSpec",
           "PartitionAssignorError", "RangeAssignor", "ServerAssignor", "UniformAssignor", "java_string_key",
           "kafka_uuid_str", "range_member_order", "sorted_member_ids", "topic_order", "uuid_key"]

#: name -> assignor, in Kafka's default ``group.consumer.assignors`` order (uniform, range)
ASSIGNORS: dict[str, ServerAssignor] = {"uniform": UniformAssignor(), "range": RangeAssignor()}

#: the first of ``group.consumer.assignors``: used when no member names one
DEFAULT_ASSIGNOR = "uniform"
