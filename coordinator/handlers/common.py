"""What several handler modules share: the groups of a request that names one (:func:`one_group`)
and the shape of a request that names several (:class:`GroupBatch`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

def one_group(version: int, body: dict) -> list:
    """The ``groups`` of an API whose requests name one group, in GroupId."""
    return [body.get("group_id")]


@dataclass(frozen=True)
class GroupBatch:
    """A request naming several groups, each answered by an entry of its own (DescribeGroups,
    DeleteGroups, FindCoordinator v4+, OffsetFetch v8+): where the groups are in the request and
    the entries in the response, and the entry of a group that failed with an error code. A fault
    on one group fails that entry while the handler answers the others."""
    request_key: str
    response_key: str
    error_entry: Callable[[str, int], dict]
    min_version: int = 0          # the first version that names several groups
    group_of: Callable[[object], str] = lambda item: item      # a request item's group id
    unique: bool = False          # each group answered once however often it is named

    def without(self, body: dict, group_id: str) -> dict:
        """The request without ``group_id``'s entries (for the handler to answer the others)."""
        return {**body, self.request_key: [g for g in body[self.request_key] if self.group_of(g) != group_id]}

    def merged(self, body: dict, response: dict, group_id: str, code: int) -> dict:
        """The handler's answer to :meth:`without`'s request, with ``group_id``'s error entries put
        back where the original request named it."""
        answered = iter(response[self.response_key])
        names = [self.group_of(g) for g in body[self.request_key]]
        if self.unique:
            names = list(dict.fromkeys(names))
        entries = [self.error_entry(group_id, code) if name == group_id else next(answered) for name in names]
        return {**response, self.response_key: entries}
