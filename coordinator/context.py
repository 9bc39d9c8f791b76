"""What a handler knows about the request it serves."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from .service import Service

#: A handler answers through this callback, at once or later (parked JoinGroup/SyncGroup).
#: It takes the response body as a dict in the latest version's field names; the
#: encoder leaves out what the request's version does not have.
Respond = Callable[[dict], None]


@dataclass(slots=True)
class RequestContext:
    service: "Service"
    node_id: int              # the emulated broker that received the request
    client_id: str            # from the request header ("" when null)
    client_host: str          # as Kafka shows it: "/127.0.0.1"
    api_key: int
    api_version: int
    correlation_id: int
    connection_id: int = 0
    principal: str = "User:ANONYMOUS"
    connection: Any = None    # the driver's connection object (None in-process); SASL state lives there

    @property
    def now_ms(self) -> int:
        return self.service.clock()


@dataclass
class Verdict:
    """What a ``Service.before_request`` hook decides about a request instead of the handler.

    ``delay_ms``  hold the request (and the connection behind it) this long first;
    ``respond``   then answer with this body instead of running the handler;
    ``close``     then close the connection without answering (``reason`` is logged).
    A verdict with only ``delay_ms`` runs the handler after the delay.
    """
    respond: dict | None = None
    delay_ms: int = 0
    close: bool = False
    reason: str = ""

