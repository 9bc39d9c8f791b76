"""Kafka's API keys (its ``ApiKeys`` enum), the ones groupcoord speaks: the one place a key's
number is written. ``ApiKey.JOIN_GROUP.title`` is the name its messages carry ("JoinGroup")."""
from __future__ import annotations

import enum


class ApiKey(enum.IntEnum):
    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    INIT_PRODUCER_ID = 22
    SASL_AUTHENTICATE = 36
    DELETE_GROUPS = 42
    OFFSET_DELETE = 47
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69

    @property
    def title(self) -> str:
        """The API's name as Kafka's message schemas spell it: JOIN_GROUP -> "JoinGroup"."""
        return "".join(word.capitalize() for word in self.name.split("_"))
