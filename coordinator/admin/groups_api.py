"""Groups: state, members with their decoded subscriptions and assignments, committed offsets and
lag; deleting groups, removing members and resetting offsets.

Groups of every type are listed together, each with its ``type`` ("classic" or "consumer", as
ListGroups' GroupType); what a group's summary adds and how its members look is its type's view
(``group/<type>/view.py``, reached through the type's manager). A consumer group (KIP-848) shows its
group epoch and assignment epoch, and per member its epochs, its reconciliation state (Kafka's
``MemberState``: stable, unrevoked_partitions, unreleased_partitions, unknown), what it owns, what
it must still revoke and its target assignment, partitions by topic name. Removing a member is a
LeaveGroup by an admin, for a classic group or a consumer group (Kafka's
``classicGroupLeaveToConsumerGroup``).

A share group (KIP-932) also shows its share-partitions (``share_partitions``, and
``GET /api/groups/{id}/share-partitions``), as the share-partition leaders hold them: the start and end
offsets (SPSO, SPEO), the records between them by state (available, acquired, acknowledged, archived),
how often they were delivered (per delivery count, per state), the members holding records and until
when their acquisition locks run, the in-flight batches, and what the share-partition counted since its
leader loaded it; a share-partition no leader has loaded yet (no ShareFetch reached it) is shown from
its persisted state. And its members' share sessions (``share_sessions``).

Every change goes through the group coordinator's own operations, so its effects are those
of the Kafka API that does the same: DeleteGroups (only an Empty group, with its offsets),
LeaveGroup by an admin (``remove_member``: a rebalance of the rest, a ``member.left`` event
with initiator "admin"), and OffsetCommit with generation -1 and no member id for a reset,
as ``kafka-consumer-groups --reset-offsets`` does through the admin client (refused unless
the group is Empty or Dead). Events are emitted and records appended to the store as for
the Kafka requests.
"""
from __future__ import annotations

from aiohttp import web

from groupcoord.protocol.errors import ErrorCode

from ..group.classic.group import DEAD, EMPTY
from ..metrics import records_by_state
from ..group.offsets import OffsetCommitRequest, OffsetFetchRequest
from ..group.runtime import GROUP_TYPES
from ..handlers.describe_configs import BOOLEAN, SOURCE_NAMES, STRING, group_configs
from .app import changed, json_body
from .cluster_api import kafka_uuid
from .errors import ApiError, error_responses

routes = web.RouteTableDef()

#: LeaveGroup reason of a removal without one (Kafka's admin client default)
DEFAULT_REMOVAL_REASON = "member was removed by an admin"
INT64_MAX = 2**63 - 1


def coordinator_json(cluster, group_id: str) -> dict:
    return {"partition": cluster.coordinator_partition(group_id), "node": cluster.coordinator_for(group_id)}


def group_summary_json(service, group) -> dict:
    """A group of any type: what every group has, and what its type's manager adds."""
    manager = service.group_coordinator.manager(group.type)
    out = {"group_id": group.group_id, "type": group.type, "state": group.state}
    summary = manager.view.summary_json(group, manager)
    for key in ("protocol_type", "protocol", "generation", "leader"):       # every type has these
        out[key] = summary.pop(key)
    out["members"] = len(group.members)
    out["coordinator"] = coordinator_json(service.cluster, group.group_id)
    out.update(summary)             # then the type's own
    return out


def committed_offsets(service, group_id: str, topics=None) -> dict[tuple[str, int], dict]:
    """(topic, partition) -> OffsetFetch partition entry, through the coordinator's OffsetFetch."""
    out: list[dict] = []
    service.group_coordinator.offset_fetch(out.append, OffsetFetchRequest(group_id, topics))
    response = out[0]
    if response["error_code"]:
        code = ErrorCode(response["error_code"])
        raise ApiError(409, code.name.lower(), code.message)
    return {(t["name"], p["partition_index"]): p for t in response["topics"] for p in t["partitions"]
            if p["committed_offset"] >= 0}


def offsets_json(service, group_id: str) -> list[dict]:
    cluster = service.cluster
    out = []
    for (topic, partition), p in sorted(committed_offsets(service, group_id).items()):
        log = cluster.log(topic, partition)
        end = None if log is None else log.log_end_offset
        out.append({"topic": topic, "partition": partition, "offset": p["committed_offset"],
                    "metadata": p["metadata"], "log_end_offset": end,
                    "lag": None if end is None else end - p["committed_offset"]})
    return out


def group_detail_json(service, group) -> dict:
    out = group_summary_json(service, group)
    out["members"] = service.group_coordinator.manager(group.type).view.members_json(group, service.cluster)
    out["offsets"] = offsets_json(service, group.group_id)
    if group.type == "share":
        out["delivery_count_limit"] = service.share_partitions.partition_config(group.group_id).delivery_count_limit
        out["share_partitions"] = share_partitions_json(service, group.group_id)
        out["share_sessions"] = share_sessions_json(service, group.group_id)
    return out


# ---------------------------------------------------------------------------------- share-partitions
#: the in-flight batches shown per share-partition at most (ranges of equal state, delivery count,
#: member and lock)
MAX_BATCHES = 200
_STATE_NAMES = {0: "available", 1: "acquired", 2: "acknowledged", 3: "archiving", 4: "archived"}
_COUNTED = ("available", "acquired", "acknowledged", "archived")


def share_partitions_json(service, group_id: str) -> list[dict]:
    """The group's share-partitions (every one with a persisted state, and any a leader loaded), by
    topic name and partition."""
    manager = service.share_partitions
    loaded = {k: sp for k, sp in manager.share_partitions().items() if k[0] == group_id}
    persisted = manager.states.of_group(group_id)
    out = [_share_partition_json(service, key, loaded.get(key), persisted.get(key))
           for key in set(loaded) | set(persisted)]
    out.sort(key=lambda p: (p["topic"] or "", p["topic_id"], p["partition"]))
    return out


def share_sessions_json(service, group_id: str) -> list[dict]:
    """The share sessions of the group's members, on every node."""
    cluster = service.cluster
    out = []
    for session in service.share_partitions.sessions():
        if session.group_id != group_id:
            continue
        parts: dict = {}
        for topic_id, p in session.partitions:
            parts.setdefault(topic_id, []).append(p)
        out.append({"member_id": session.member_id, "node": session.node_id, "epoch": session.epoch,
                    "partitions": _partitions_json(cluster, parts)})
    out.sort(key=lambda s: (s["member_id"], s["node"]))
    return out


def _partitions_json(cluster, parts: dict) -> list[dict]:
    out = []
    for topic_id, ps in parts.items():
        topic = cluster.topics_by_id.get(topic_id)
        out.extend({"topic": topic.name if topic is not None else None, "topic_id": kafka_uuid(topic_id),
                    "partition": p} for p in sorted(ps))
    out.sort(key=lambda tp: (tp["topic"] or "", tp["topic_id"], tp["partition"]))
    return out


def _share_partition_json(service, key, sp, snapshot) -> dict:
    group_id, topic_id, index = key
    cluster = service.cluster
    topic = cluster.topics_by_id.get(topic_id)
    log = cluster.log(topic.name, index) if topic is not None else None
    histogram: dict[int, dict] = {}
    holders: dict[str, dict] = {}
    runs: list[dict] = []
    truncated = False

    def add(first: int, last: int, state: str, delivery_count: int, member: str | None, deadline: int | None) -> None:
        nonlocal truncated
        n = last - first + 1
        counts = histogram.get(delivery_count)
        if counts is None:
            counts = histogram[delivery_count] = {"delivery_count": delivery_count, **dict.fromkeys(_COUNTED, 0)}
        if state in counts:
            counts[state] += n
        if state == "acquired" and member:
            held = holders.setdefault(member, {"member_id": member, "records": 0, "lock_deadline_ms": None})
            held["records"] += n
            if deadline is not None and (held["lock_deadline_ms"] is None or deadline < held["lock_deadline_ms"]):
                held["lock_deadline_ms"] = deadline
        last_run = runs[-1] if runs else None
        if (last_run is not None and last_run["last_offset"] + 1 == first and last_run["state"] == state
                and last_run["delivery_count"] == delivery_count and last_run["member_id"] == member
                and last_run["lock_deadline_ms"] == deadline):
            last_run["last_offset"] = last
        elif len(runs) < MAX_BATCHES:
            runs.append({"first_offset": first, "last_offset": last, "state": state,
                         "delivery_count": delivery_count, "member_id": member, "lock_deadline_ms": deadline})
        else:
            truncated = True

    if sp is not None:
        start, end = sp.start_offset, sp.end_offset
        for batch in sp.cached_state():
            if batch.last_offset < start:
                continue
            for first, last, st in batch.states():
                if last < start:
                    continue
                lock = st.lock
                add(max(first, start), last, _STATE_NAMES.get(int(st.state), str(st.state)), st.delivery_count,
                    st.member_id or None, lock.deadline_ms if lock is not None and not lock.cancelled else None)
        by_state = records_by_state(sp)
        in_flight = sp.in_flight_records()
        state_epoch = sp.state_epoch
        counters = {name: getattr(sp.counters, name) for name in _COUNTER_NAMES}
    else:
        start = snapshot.start_offset
        batches = [b for b in snapshot.state_batches if b.last_offset >= start] if start >= 0 else []
        end = batches[-1].last_offset if batches else start
        for b in batches:
            add(max(b.first_offset, start), b.last_offset, _STATE_NAMES.get(b.delivery_state, str(b.delivery_state)),
                b.delivery_count, None, None)
        by_state = {state: sum(h[state] for h in histogram.values()) for state in _COUNTED}
        in_flight = end - start + 1 if batches else 0
        state_epoch = snapshot.state_epoch
        counters = None
    lag = None
    if log is not None and start >= 0:
        # (KIP-1226's share-partition lag: what the log has from the SPSO on that is not delivered complete)
        lag = max(0, log.log_end_offset - start - by_state["acknowledged"] - by_state["archived"])
    return {"topic": topic.name if topic is not None else None, "topic_id": kafka_uuid(topic_id),
            "partition": index, "loaded": sp is not None, "leader": service.share_partitions.leader_of(key),
            "state_epoch": state_epoch, "start_offset": start, "end_offset": end,
            "log_start_offset": log.log_start_offset if log is not None else None,
            "log_end_offset": log.log_end_offset if log is not None else None, "lag": lag,
            "in_flight": in_flight, "records": by_state,
            "delivery_counts": [histogram[d] for d in sorted(histogram)],
            "holders": sorted(holders.values(), key=lambda h: h["member_id"]),
            "batches": runs, "batches_truncated": truncated, "counters": counters}


def _share_group(request: web.Request):
    """The share group of the path, or a 404."""
    group = _any_group(request)
    if group.type != "share":
        raise ApiError(404, "group_id_not_found", f"Group {group.group_id} is not a share group.")
    return group


def all_groups(gc) -> list:
    """Every live group, of every type, by id."""
    return sorted((g for g in gc.groups() if g.state != DEAD), key=lambda g: g.group_id)


def _any_group(request: web.Request):
    """The group of the path (of any type), or a 404."""
    group_id = request.match_info["group_id"]
    gc = request.app["service"].group_coordinator
    group = gc.get(group_id)
    if group is None or group.state == DEAD:
        raise ApiError(404, "group_id_not_found", f"Group {group_id} not found.")
    return group


def _kafka_error(code: int, context: str) -> ApiError:
    error = ErrorCode(code)
    status = 404 if error in (ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.UNKNOWN_MEMBER_ID,
                              ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) else 409
    return ApiError(status, error.name.lower(), f"{context}: {error.message}")


# ---------------------------------------------------------------------------------- reads
@routes.get("/api/groups")
async def list_groups(request: web.Request) -> web.Response:
    service = request.app["service"]
    return web.json_response([group_summary_json(service, g) for g in all_groups(service.group_coordinator)])


@routes.get("/api/groups/{group_id}")
async def get_group(request: web.Request) -> web.Response:
    return web.json_response(group_detail_json(request.app["service"], _any_group(request)))


@routes.get("/api/groups/{group_id}/share-partitions")
async def get_share_partitions(request: web.Request) -> web.Response:
    service = request.app["service"]
    group = _share_group(request)
    config = service.share_partitions.partition_config(group.group_id)
    return web.json_response({"group_id": group.group_id, "delivery_count_limit": config.delivery_count_limit,
                              "record_lock_duration_ms": config.record_lock_duration_ms,
                              "share_partitions": share_partitions_json(service, group.group_id),
                              "share_sessions": share_sessions_json(service, group.group_id)})


# ---------------------------------------------------------------------------------- changes
@routes.delete("/api/groups/{group_id}")
async def delete_group(request: web.Request) -> web.Response:
    group = _any_group(request)
    offsets = request.app["service"].group_coordinator.offsets.count(group.group_id)
    out: list[dict] = []
    request.app["service"].group_coordinator.delete_groups(out.append, group_ids=[group.group_id])
    changed(request)
    code = out[0]["results"][0]["error_code"]
    if code == ErrorCode.NON_EMPTY_GROUP:
        raise ApiError(409, "non_empty_group",
                       f"group {group.group_id} is {group.state}: only an Empty group can be deleted")
    if code:
        raise _kafka_error(code, f"group {group.group_id}")
    return web.json_response({"group_id": group.group_id, "offsets_deleted": offsets})


def _remove(request: web.Request, group, member_id: str, instance_id: str | None) -> web.Response:
    """LeaveGroup on behalf of a member: by member id, or by instance id (member id "")."""
    reason = request.query.get("reason") or DEFAULT_REMOVAL_REASON
    static_id = group.static_members.get(instance_id) if instance_id is not None else None
    code = request.app["service"].group_coordinator.remove_member(
        group.group_id, member_id=member_id, group_instance_id=instance_id, reason=reason)
    changed(request)
    if code:
        raise _kafka_error(code, f"group {group.group_id}")
    return web.json_response({"group_id": group.group_id, "member_id": member_id or static_id,
                              "instance_id": instance_id, "state": group.state, "members": len(group.members)})


@routes.delete("/api/groups/{group_id}/members/{member_id}")
async def remove_member(request: web.Request) -> web.Response:
    group = _any_group(request)
    member_id = request.match_info["member_id"]
    if not group.has_member(member_id) and not group.is_pending_member(member_id):
        raise ApiError(404, "unknown_member_id", f"group {group.group_id} has no member {member_id!r}")
    return _remove(request, group, member_id, None)


@routes.delete("/api/groups/{group_id}/instances/{instance_id}")
async def remove_static_member(request: web.Request) -> web.Response:
    group = _any_group(request)
    instance_id = request.match_info["instance_id"]
    if instance_id not in group.static_members:
        raise ApiError(404, "unknown_member_id",
                       f"group {group.group_id} has no static member with instance id {instance_id!r}")
    return _remove(request, group, "", instance_id)


def _group_configs_json(service, group_id: str) -> dict:
    """The group's dynamic configs as DescribeConfigs gives them: name -> {value, source}."""
    return {"group_id": group_id, "configs": {
        c["name"]: {"value": _typed(c), "source": SOURCE_NAMES[c["config_source"]]}
        for c in group_configs(service, group_id, synonyms=False)}}


def _typed(config: dict):
    """A DescribeConfigs entry's value as JSON types it: an INT a number, a BOOLEAN true or false, a
    STRING (share.auto.offset.reset) a string."""
    value = config["value"]
    if config["config_type"] == BOOLEAN:
        return value == "true"
    return value if config["config_type"] == STRING else int(value)


@routes.get("/api/groups/{group_id}/configs")
async def get_group_configs(request: web.Request) -> web.Response:
    return web.json_response(_group_configs_json(request.app["service"], request.match_info["group_id"]))


@routes.patch("/api/groups/{group_id}/configs")
async def alter_group_configs(request: web.Request) -> web.Response:
    body = await json_body(request, schema=SCHEMAS["GroupConfigsChange"])
    service = request.app["service"]
    group_id = request.match_info["group_id"]
    try:
        service.alter_group_configs(group_id, body["configs"], validate_only=body.get("validate_only", False))
    except ValueError as e:
        raise ApiError(400, "invalid_config", str(e)) from None
    changed(request)
    return web.json_response(_group_configs_json(service, group_id))


@routes.post("/api/groups/{group_id}/offsets/reset")
async def reset_offsets(request: web.Request) -> web.Response:
    body = await json_body(request, schema=SCHEMAS["OffsetsReset"])
    service = request.app["service"]
    gc = service.group_coordinator
    group_id = request.match_info["group_id"]
    group = gc.get(group_id)                   # (a consumer group of KIP-848: Empty when no members)
    state = DEAD if group is None else group.state
    if state not in (EMPTY, DEAD):
        raise ApiError(409, "non_empty_group", f"Assignments can only be reset if the group '{group_id}' is "
                                               f"inactive, but the current state is {state}.")
    topic = service.cluster.topics.get(body["topic"])
    if topic is None:
        raise ApiError(404, "unknown_topic_or_partition", f"topic {body['topic']!r} does not exist")
    partitions = body.get("partitions")
    if partitions is None:
        partitions = list(range(topic.partition_count))
    missing = [p for p in partitions if p >= topic.partition_count]
    if missing:
        raise ApiError(404, "unknown_topic_or_partition",
                       f"topic {topic.name} has {topic.partition_count} partitions, not {missing}")
    current = committed_offsets(service, group_id, [{"name": topic.name, "partition_indexes": partitions}]) \
        if group is not None else {}
    to = body["to"]
    plan = []
    for p in partitions:
        log = topic.partitions[p]
        previous = current.get((topic.name, p))
        previous = None if previous is None else previous["committed_offset"]
        if to == "earliest":
            offset = log.log_start_offset
        elif to == "latest":
            offset = log.log_end_offset
        elif "offset" in to:
            offset = to["offset"]
        elif "timestamp" in to:
            found = log.offset_for_timestamp(to["timestamp"])
            offset = log.log_end_offset if found is None else found[0]
        else:
            if previous is None:
                raise ApiError(409, "no_committed_offset", f"Cannot shift offset for partition {topic.name}-{p} "
                                                           "since there is no current committed offset")
            offset = previous + to["shift_by"]
        # as kafka-consumer-groups: an offset out of the log's range is set to its nearest end
        offset = min(max(offset, log.log_start_offset), log.log_end_offset)
        plan.append({"topic": topic.name, "partition": p, "previous_offset": previous, "offset": offset})
    dry_run = body.get("dry_run", False)
    if not dry_run and plan:
        out: list[dict] = []
        gc.offset_commit(out.append, OffsetCommitRequest(group_id, [
            {"name": topic.name, "partitions": [
                {"partition_index": e["partition"], "committed_offset": e["offset"], "committed_leader_epoch": -1,
                 "committed_metadata": ""} for e in plan]}], generation_id=-1, member_id=""))
        changed(request)
        for t in out[0]["topics"]:
            for p in t["partitions"]:
                if p["error_code"]:
                    raise _kafka_error(p["error_code"], f"committing {t['name']}-{p['partition_index']}")
    return web.json_response({"group_id": group_id, "dry_run": dry_run, "offsets": plan})


# ---------------------------------------------------------------------------------- OpenAPI
_REF = "#/components/schemas/"


def _json(schema: dict, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


_GROUP_ID = {"name": "group_id", "in": "path", "required": True, "description": "group id",
             "schema": {"type": "string", "minLength": 1}}
_REASON = {"name": "reason", "in": "query", "required": False,
           "description": f"the LeaveGroup reason (default: {DEFAULT_REMOVAL_REASON!r})",
           "schema": {"type": "string"}}
#: each group type's view of its groups (its package's view.py): summary fields, members, schemas
_VIEWS = [t.view for t in GROUP_TYPES]
_STATE = {"type": "string", "enum": list(dict.fromkeys(state for t in GROUP_TYPES for state in t.states)),
          "description": "the group's state, one of its type's (Kafka's names: "
                         + "; ".join(f"{t.type}: {', '.join(t.states)}" for t in GROUP_TYPES) + ")"}
_NULLABLE_STRING = {"type": "string", "nullable": True}
#: a group config's value: most are numbers; share.auto.offset.reset and share.isolation.level are
#: strings, share.renew.acknowledge.enable a boolean
_CONFIG_VALUE = {"oneOf": [{"type": "integer"}, {"type": "string"}, {"type": "boolean"}],
                 "description": "a number, a string or a boolean"}
_COORDINATOR = {"type": "object", "required": ["partition", "node"],
                "description": "the __consumer_offsets partition of the group and the node leading it",
                "properties": {"partition": {"type": "integer"}, "node": {"type": "integer"}}}
_SUMMARY_FIELDS = {
    "group_id": {"type": "string"},
    "type": {"type": "string", "enum": [t.type for t in GROUP_TYPES],
             "description": "the group's type (its protocol), as ListGroups' GroupType"},
    "state": _STATE,
    "protocol_type": {**_NULLABLE_STRING, "description": "null for a group that only commits offsets"},
    "protocol": {**_NULLABLE_STRING, "description": "the selected protocol (assignor); a consumer group's "
                                                    "server assignor"},
    "generation": {"type": "integer", "description": "a classic group's generation id, a consumer group's "
                                                     "group epoch"},
    "leader": {**_NULLABLE_STRING, "description": "member id of the leader (null for a consumer group)"},
    "coordinator": _COORDINATOR,
    **{name: schema for view in _VIEWS for name, schema in view.SUMMARY_FIELDS.items()},
}
_RECORD_STATES = ("available", "acquired", "acknowledged", "archived")
_RECORD_COUNTS = {"type": "object", "additionalProperties": False, "required": list(_RECORD_STATES),
                  "description": "records between the SPSO and the SPEO, by state",
                  "properties": {st: {"type": "integer"} for st in _RECORD_STATES}}
_COUNTER_NAMES = ("acquired", "acknowledged", "released", "rejected", "gaps", "renewed", "lock_expired", "archived")
_DELIVERY_COUNT_LIMIT = {"type": "integer", "description": "the group's share.delivery.count.limit: a record "
                                                           "delivered that often is archived when released"}
_SUMMARY_REQUIRED = ["group_id", "type", "state", "protocol_type", "protocol", "generation", "leader", "members",
                     "coordinator"]
SCHEMAS = {
    "GroupSummary": {
        "type": "object", "required": _SUMMARY_REQUIRED,
        "properties": {**_SUMMARY_FIELDS, "members": {"type": "integer", "description": "number of members"}},
    },
    **{name: schema for view in _VIEWS for name, schema in view.SCHEMAS.items()},
    "CommittedOffset": {
        "type": "object", "required": ["topic", "partition", "offset", "metadata", "log_end_offset", "lag"],
        "properties": {
            "topic": {"type": "string"}, "partition": {"type": "integer"}, "offset": {"type": "integer"},
            "metadata": {"type": "string"},
            "log_end_offset": {"type": "integer", "nullable": True,
                               "description": "null when the partition does not exist (any more)"},
            "lag": {"type": "integer", "nullable": True, "description": "log_end_offset - offset"},
        },
    },
    "GroupDetail": {
        "type": "object", "required": [*_SUMMARY_REQUIRED, "offsets"],
        "properties": {**_SUMMARY_FIELDS,
                       "members": {"type": "array", "items": {"oneOf": [
                           {"$ref": _REF + view.MEMBER_SCHEMA} for view in _VIEWS]}},
                       "offsets": {"type": "array", "items": {"$ref": _REF + "CommittedOffset"}},
                       "delivery_count_limit": {**_DELIVERY_COUNT_LIMIT, "description": "share groups: "
                                                + _DELIVERY_COUNT_LIMIT["description"]},
                       "share_partitions": {"type": "array", "items": {"$ref": _REF + "SharePartition"},
                                            "description": "share groups: their share-partitions"},
                       "share_sessions": {"type": "array", "items": {"$ref": _REF + "ShareSession"},
                                          "description": "share groups: their members' share sessions"}},
    },
    "SharePartition": {
        "type": "object", "additionalProperties": False,
        "description": "a share-partition of a share group (KIP-932) as its leader holds it, or as persisted "
                       "when no leader loaded it yet",
        "required": ["topic", "topic_id", "partition", "loaded", "leader", "state_epoch", "start_offset",
                     "end_offset", "log_start_offset", "log_end_offset", "lag", "in_flight", "records",
                     "delivery_counts", "holders", "batches", "batches_truncated", "counters"],
        "properties": {
            "topic": {**_NULLABLE_STRING, "description": "null once the topic is gone"},
            "topic_id": {"type": "string"}, "partition": {"type": "integer"},
            "loaded": {"type": "boolean", "description": "a leader has it loaded (a ShareFetch reached it); else "
                                                         "what follows is its persisted state"},
            "leader": {"type": "integer", "nullable": True, "description": "the node that loaded it"},
            "state_epoch": {"type": "integer"},
            "start_offset": {"type": "integer", "description": "the share-partition start offset (SPSO); -1: not "
                                                               "chosen yet (share.auto.offset.reset at the first "
                                                               "fetch)"},
            "end_offset": {"type": "integer", "description": "the share-partition end offset (SPEO)"},
            "log_start_offset": {"type": "integer", "nullable": True},
            "log_end_offset": {"type": "integer", "nullable": True},
            "lag": {"type": "integer", "nullable": True,
                    "description": "records of the log from the SPSO on not delivered complete (acknowledged or "
                                   "archived): KIP-1226's share-partition lag; null before the SPSO is chosen"},
            "in_flight": {"type": "integer", "description": "SPEO - SPSO + 1 while records are in flight "
                                                            "(Kafka's InFlightMessageCount)"},
            "records": _RECORD_COUNTS,
            "delivery_counts": {"type": "array", "description": "records by delivery count, per state",
                                "items": {"type": "object", "additionalProperties": False,
                                          "required": ["delivery_count", *_RECORD_STATES],
                                          "properties": {"delivery_count": {"type": "integer"},
                                                         **{st: {"type": "integer"} for st in _RECORD_STATES}}}},
            "holders": {"type": "array", "description": "members holding acquired records",
                        "items": {"type": "object", "additionalProperties": False,
                                  "required": ["member_id", "records", "lock_deadline_ms"],
                                  "properties": {"member_id": {"type": "string"}, "records": {"type": "integer"},
                                                 "lock_deadline_ms": {
                                                     "type": "integer", "nullable": True,
                                                     "description": "when its first acquisition lock expires "
                                                                    "(coordinator clock, ms)"}}}},
            "batches": {"type": "array", "description": f"the in-flight records as ranges of equal state, delivery "
                                                        f"count, member and lock (at most {MAX_BATCHES})",
                        "items": {"type": "object", "additionalProperties": False,
                                  "required": ["first_offset", "last_offset", "state", "delivery_count", "member_id",
                                               "lock_deadline_ms"],
                                  "properties": {"first_offset": {"type": "integer"},
                                                 "last_offset": {"type": "integer"},
                                                 "state": {"type": "string", "enum": list(_STATE_NAMES.values())},
                                                 "delivery_count": {"type": "integer"},
                                                 "member_id": _NULLABLE_STRING,
                                                 "lock_deadline_ms": {"type": "integer", "nullable": True}}}},
            "batches_truncated": {"type": "boolean", "description": f"more than {MAX_BATCHES} ranges"},
            "counters": {"type": "object", "nullable": True, "additionalProperties": False,
                         "description": "records counted since its leader loaded it (null: not loaded)",
                         "required": list(_COUNTER_NAMES),
                         "properties": {name: {"type": "integer"} for name in _COUNTER_NAMES}},
        },
    },
    "ShareSession": {
        "type": "object", "additionalProperties": False,
        "required": ["member_id", "node", "epoch", "partitions"],
        "properties": {"member_id": {"type": "string"}, "node": {"type": "integer"},
                       "epoch": {"type": "integer", "description": "the epoch its next request must carry"},
                       "partitions": {"type": "array", "items": {
                           "type": "object", "required": ["topic", "topic_id", "partition"],
                           "properties": {"topic": _NULLABLE_STRING, "topic_id": {"type": "string"},
                                          "partition": {"type": "integer"}}}}},
    },
    "SharePartitions": {
        "type": "object", "additionalProperties": False,
        "required": ["group_id", "delivery_count_limit", "record_lock_duration_ms", "share_partitions",
                     "share_sessions"],
        "properties": {
            "group_id": {"type": "string"},
            "delivery_count_limit": _DELIVERY_COUNT_LIMIT,
            "record_lock_duration_ms": {"type": "integer",
                                        "description": "the group's share.record.lock.duration.ms"},
            "share_partitions": {"type": "array", "items": {"$ref": _REF + "SharePartition"}},
            "share_sessions": {"type": "array", "items": {"$ref": _REF + "ShareSession"}},
        },
    },
    "GroupConfigs": {
        "type": "object", "required": ["group_id", "configs"],
        "properties": {"group_id": {"type": "string"}, "configs": {
            "type": "object", "description": "config name -> its value and source (DYNAMIC_GROUP_CONFIG: set "
                                             "for the group; DEFAULT_CONFIG, STATIC_BROKER_CONFIG: the broker's)",
            "additionalProperties": {"type": "object", "required": ["value", "source"], "properties": {
                "value": _CONFIG_VALUE, "source": {"type": "string"}}}}},
    },
    "GroupConfigsChange": {
        "type": "object", "required": ["configs"], "additionalProperties": False,
        "properties": {
            "configs": {"type": "object", "description": "config name -> new value, or null to delete it",
                        "additionalProperties": {**_CONFIG_VALUE, "nullable": True}},
            "validate_only": {"type": "boolean", "description": "check, change nothing"}},
    },
    "GroupDeleted": {
        "type": "object", "required": ["group_id", "offsets_deleted"],
        "properties": {"group_id": {"type": "string"}, "offsets_deleted": {"type": "integer"}},
    },
    "MemberRemoved": {
        "type": "object", "required": ["group_id", "member_id", "instance_id", "state", "members"],
        "properties": {"group_id": {"type": "string"}, "member_id": {"type": "string"},
                       "instance_id": _NULLABLE_STRING,
                       "state": {**_STATE, "description": "the group's state after the removal"},
                       "members": {"type": "integer", "description": "members left"}},
    },
    "OffsetsReset": {
        "type": "object", "required": ["topic", "to"], "additionalProperties": False,
        "properties": {
            "topic": {"type": "string", "minLength": 1},
            "partitions": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 2**31 - 1},
                           "minItems": 1, "uniqueItems": True, "description": "default: every partition"},
            "to": {
                "description": "'earliest', 'latest', {\"offset\": n}, {\"timestamp\": ms} or {\"shift_by\": n}",
                "oneOf": [
                    {"type": "string", "enum": ["earliest", "latest"]},
                    {"type": "object", "required": ["offset"], "additionalProperties": False,
                     "properties": {"offset": {"type": "integer", "minimum": 0, "maximum": INT64_MAX}}},
                    {"type": "object", "required": ["timestamp"], "additionalProperties": False,
                     "properties": {"timestamp": {"type": "integer", "minimum": 0, "maximum": INT64_MAX,
                                                  "description": "the first offset with a timestamp at or "
                                                                 "after it (ms); the log end if none"}}},
                    {"type": "object", "required": ["shift_by"], "additionalProperties": False,
                     "properties": {"shift_by": {"type": "integer", "minimum": -INT64_MAX,
                                                 "maximum": INT64_MAX}}},
                ]},
            "dry_run": {"type": "boolean", "description": "only compute the new offsets (default false)"},
        },
    },
    "OffsetsResetResult": {
        "type": "object", "required": ["group_id", "dry_run", "offsets"],
        "properties": {
            "group_id": {"type": "string"},
            "dry_run": {"type": "boolean"},
            "offsets": {"type": "array", "items": {
                "type": "object", "required": ["topic", "partition", "previous_offset", "offset"],
                "properties": {"topic": {"type": "string"}, "partition": {"type": "integer"},
                               "previous_offset": {"type": "integer", "nullable": True},
                               "offset": {"type": "integer", "description": "the new committed offset, "
                                                                            "within the log's range"}}}},
        },
    },
}

PATHS = {
    "/api/groups": {"get": {
        "summary": "The groups, classic and consumer",
        "operationId": "listGroups",
        "responses": {"200": _json({"type": "array", "items": {"$ref": _REF + "GroupSummary"}},
                                   "Every group, by id")},
    }},
    "/api/groups/{group_id}": {
        "get": {
            "summary": "A group: members with decoded subscriptions and assignments (a consumer group's: "
                       "epochs, reconciliation state, current, pending and target assignments), offsets and lag",
            "operationId": "getGroup",
            "parameters": [_GROUP_ID],
            "responses": {"200": _json({"$ref": _REF + "GroupDetail"}, "The group"), **error_responses(404)},
        },
        "delete": {
            "summary": "Delete an Empty group and its offsets (as DeleteGroups)",
            "operationId": "deleteGroup",
            "parameters": [_GROUP_ID],
            "responses": {"200": _json({"$ref": _REF + "GroupDeleted"}, "The group was deleted"),
                          **error_responses(404, 409)},
        },
    },
    "/api/groups/{group_id}/share-partitions": {"get": {
        "summary": "A share group's share-partitions: SPSO and SPEO, in-flight records by state, delivery "
                   "counts, members holding records, in-flight batches; and its members' share sessions",
        "operationId": "getSharePartitions",
        "parameters": [_GROUP_ID],
        "responses": {"200": _json({"$ref": _REF + "SharePartitions"}, "The share-partitions"),
                      **error_responses(404)},
    }},
    "/api/groups/{group_id}/members/{member_id}": {"delete": {
        "summary": "Remove a member of a classic group (a LeaveGroup on its behalf): the others rebalance",
        "operationId": "removeMember",
        "parameters": [_GROUP_ID, {"name": "member_id", "in": "path", "required": True,
                                   "schema": {"type": "string", "minLength": 1}}, _REASON],
        "responses": {"200": _json({"$ref": _REF + "MemberRemoved"}, "The member was removed"),
                      **error_responses(404, 409)},
    }},
    "/api/groups/{group_id}/instances/{instance_id}": {"delete": {
        "summary": "Remove a static member by its group.instance.id (as the admin client does)",
        "operationId": "removeStaticMember",
        "parameters": [_GROUP_ID, {"name": "instance_id", "in": "path", "required": True,
                                   "schema": {"type": "string", "minLength": 1}}, _REASON],
        "responses": {"200": _json({"$ref": _REF + "MemberRemoved"}, "The member was removed"),
                      **error_responses(404, 409)},
    }},
    "/api/groups/{group_id}/configs": {
        "get": {
            "summary": "A group's dynamic configs (as kafka-configs --entity-type groups --describe): the "
                       "group's value where it set one, else the broker's",
            "operationId": "getGroupConfigs",
            "parameters": [_GROUP_ID],
            "responses": {"200": _json({"$ref": _REF + "GroupConfigs"}, "The group's configs")},
        },
        "patch": {
            "summary": "Set (null: delete) a group's dynamic configs, as IncrementalAlterConfigs does; the group "
                       "need not exist",
            "operationId": "alterGroupConfigs",
            "parameters": [_GROUP_ID],
            "requestBody": {"required": True, "content": {"application/json": {
                "schema": {"$ref": _REF + "GroupConfigsChange"}}}},
            "responses": {"200": _json({"$ref": _REF + "GroupConfigs"}, "The group's configs after the change"),
                          **error_responses(400)},
        },
    },
    "/api/groups/{group_id}/offsets/reset": {"post": {
        "summary": "Reset committed offsets of an Empty or Dead group (as kafka-consumer-groups "
                   "--reset-offsets)",
        "operationId": "resetOffsets",
        "parameters": [_GROUP_ID],
        "requestBody": {"required": True, "content": {"application/json": {
            "schema": {"$ref": _REF + "OffsetsReset"}}}},
        "responses": {"200": _json({"$ref": _REF + "OffsetsResetResult"}, "The new offsets (committed "
                                                                          "unless dry_run)"),
                      **error_responses(400, 404, 409)},
    }},
}
