"""The Kafka releases groupcoord emulates (``groupcoord.kafka.version``), newest first: the first is
the default. What differs between them is declared where it lives, as a map from the release that
changed it to its value from then on (:func:`since`), or checked with :func:`at_least`."""
from __future__ import annotations

RELEASES = ("4.3", "4.2", "4.1", "3.9")


def release_key(release: str) -> tuple[int, ...]:
    """A Kafka release as a comparable tuple ("4.3" -> (4, 3))."""
    return tuple(int(part) for part in release.split("."))


def at_least(release: str, since_release: str) -> bool:
    """Whether ``release`` is ``since_release`` or newer."""
    return release_key(release) >= release_key(since_release)


def since(values: dict, release: str):
    """What ``values`` (release -> value, each from that release on, up to the next one listed)
    gives for ``release``; None before the first one listed."""
    at = [r for r in values if release_key(r) <= release_key(release)]
    return values[max(at, key=release_key)] if at else None
