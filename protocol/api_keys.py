"""Kafka's API keys (its ``ApiKeys`` enum), the ones groupcoord speaks, named from the message
modules: each module of :mod:`~groupcoord.protocol.messages` declares its API's key and name
(``api(11, "JoinGroup", ...)``, the one place a key's number is written), and ``ApiKey`` has a member
per API, in key order, named after it: JoinGroup -> ``ApiKey.JOIN_GROUP``.
``ApiKey.JOIN_GROUP.title`` is the name its messages carry ("JoinGroup")."""
from __future__ import annotations

import enum

from .messages import APIS
from .schema import snake


class _ApiKeys(enum.IntEnum):
    """What ``ApiKey`` is, its members aside."""

    @property
    def title(self) -> str:
        """The API's name as Kafka's message schemas spell it: JOIN_GROUP -> "JoinGroup"."""
        return APIS[self].name


ApiKey = _ApiKeys("ApiKey", [(snake(api.name).upper(), key) for key, api in APIS.items()], module=__name__)
ApiKey.__doc__ = "The API keys groupcoord speaks, one member per message module (an IntEnum)."

__all__ = ["ApiKey"]
