"""One handler module per API, as franz-go's kfake does, found here rather than listed.

Everything one API needs is in its module: ``API_KEY`` (an :class:`~groupcoord.protocol.api_keys.ApiKey`;
its messages are ``APIS[API_KEY]``, the module of :mod:`groupcoord.protocol.messages` that declares
that key), ``handle(ctx, version, body, respond)``, ``error_response(version, body, code)`` (the
response of a request failed as a whole, as Kafka's ``AbstractRequest.getErrorResponse`` builds it:
faults and security answer with it), and for the group APIs ``groups(version, body)`` (the group
ids the request names) and, where one request names several groups, ``GROUP_BATCH``
(:class:`.common.GroupBatch`). ``HANDLERS`` maps API keys to the modules of this package that
declare ``API_KEY``, in key order (``common.py``, what several of them share, declares none);
ApiVersions advertises exactly these APIs. A new API is a message module and a handler module,
no list to edit.

The versions served depend on the Kafka release emulated (``groupcoord.kafka.version``): a
module whose range differs from what its message declares has ``VERSIONS = {release: (lo, hi)}``,
each range served from that release on, up to the next one listed (releases before the first one
listed serve the message's declared range), and ``ADVERTISED`` likewise where Kafka advertises
other versions than it serves (Produce). A module that came with a later release than the oldest
one emulated has ``SINCE`` (the first release that serves it): the releases before it neither
serve nor advertise it (ShareGroupHeartbeat: Kafka 4.1).
"""
from __future__ import annotations

import importlib
import pkgutil

from groupcoord.protocol.messages import APIS

from ..config import SETTINGS
from ..releases import at_least, since


def _found() -> dict:
    handlers = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if not hasattr(module, "API_KEY"):
            continue            # common.py: what several of them share
        key = int(module.API_KEY)       # plain int keys: what requests carry
        if key not in APIS:
            raise ImportError(f"{module.__name__}: no message declares API key {key}")
        if key in handlers:
            raise ImportError(f"API key {key} handled twice: {handlers[key].__name__} and {module.__name__}")
        handlers[key] = module
    return dict(sorted(handlers.items()))


HANDLERS = _found()

# the Kafka releases a broker can be emulated as (the first is the default)
KAFKA_RELEASES = SETTINGS["groupcoord.kafka.version"].choices


def served_versions(release: str) -> dict[int, tuple[int, int]]:
    """Per API key, the versions a broker of that Kafka release answers; any other version of
    a request, or an API the release does not have, closes the connection (ApiVersions excepted),
    as Kafka's SocketServer does."""
    return {key: _served(module, release) for key, module in HANDLERS.items() if _has(module, release)}


def advertised_versions(release: str) -> dict[int, tuple[int, int]]:
    """Per API key, the versions ApiVersions lists for that release."""
    return {key: since(getattr(module, "ADVERTISED", {}), release) or _served(module, release)
            for key, module in HANDLERS.items() if _has(module, release)}


def _has(module, release: str) -> bool:
    """Whether the release has the API at all (``SINCE``)."""
    return at_least(release, getattr(module, "SINCE", release))


def _served(module, release: str) -> tuple[int, int]:
    declared = APIS[module.API_KEY].request.valid
    return since(getattr(module, "VERSIONS", {}), release) or (declared[0], declared[1])


def api_table() -> str:
    """The README's table of the APIs served, per Kafka release, made from this registry (Markdown)."""
    def span(lo_hi) -> str:
        if lo_hi is None:
            return "—"          # the release does not have it
        lo, hi = lo_hi
        return str(lo) if lo == hi else f"{lo}–{hi}"
    served = {release: served_versions(release) for release in KAFKA_RELEASES}
    head = "| API | key | " + " | ".join(KAFKA_RELEASES) + " |"
    lines = [head, "|---|---|" + "---|" * len(KAFKA_RELEASES)]
    for key in HANDLERS:
        lines.append(f"| {APIS[key].name} | {key} | " + " | ".join(span(served[r].get(key)) for r in KAFKA_RELEASES) + " |")
    return "\n".join(lines)


__all__ = ["HANDLERS", "KAFKA_RELEASES", "advertised_versions", "api_table", "served_versions"]
