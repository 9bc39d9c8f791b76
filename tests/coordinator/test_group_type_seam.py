"""A group type is a package of its own (issue 27): a toy type, written here with nothing edited
outside this file but the one line that registers it (``runtime.GROUP_TYPES``, patched), gets
its records into the log and back at load, its groups into ListGroups, DescribeGroups, DeleteGroups,
the offsets, the admin API, the faults and the metrics."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from groupcoord.coordinator import records, storage as st
from groupcoord.coordinator.admin.groups_api import group_detail_json, group_summary_json
from groupcoord.coordinator.group import runtime
from groupcoord.coordinator.group.context import entry
from groupcoord.coordinator.group.offsets import OffsetCommitRequest, OffsetFetchRequest
from groupcoord.coordinator.metrics import Metrics
from groupcoord.coordinator.service import Service
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.schema import F

TOY_MEMBER = 250        # a record kind no Kafka record has


class ToyMember:
    def __init__(self, member_id: str, instance_id: str | None, client_id: str):
        self.member_id, self.instance_id, self.client_id = member_id, instance_id, client_id


class ToyGroup:
    """A group whose members are its records: Stable with members, Empty without."""
    type = "toy"
    protocol_type = "toy"

    def __init__(self, group_id: str):
        self.group_id = group_id
        self.members: dict[str, ToyMember] = {}
        self.static_members: dict[str, str] = {}

    @property
    def state(self) -> str:
        return "Stable" if self.members else "Empty"

    @property
    def generation_id(self) -> int:
        return len(self.members)

    def is_empty(self) -> bool:
        return not self.members

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def is_pending_member(self, member_id: str) -> bool:
        return False

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return False

    def offset_expiration_condition(self):
        return lambda offset: offset.commit_timestamp

    def validate_offset_commit(self, member_id, instance_id, generation_id, v9, topics=None, topic_id=None):
        if generation_id < 0 or member_id in self.members:
            return None
        return ErrorCode.UNKNOWN_MEMBER_ID

    def validate_offset_fetch(self, member_id, member_epoch):
        return None

    def validate_offset_delete(self):
        return None


class ToyManager:
    type = "toy"
    states = ("Empty", "Stable", "Dead")

    def __init__(self, ctx):
        self.ctx = ctx
        self.image = None
        ctx.replayers[TOY_MEMBER] = self.replay
        ctx.group_configs.define("toy.max.size", 3, 1, 10, "group.toy.min.max.size", "group.toy.max.max.size")

    # records first: an operation makes records, the replay alone changes the state
    def replay(self, key, value) -> None:
        group = self.ctx.groups.get(key.group)
        if group is None:
            group = self.ctx.groups[key.group] = ToyGroup(key.group)
        if value is None:
            member = group.members.pop(key.name, None)
            if member is not None and member.instance_id is not None:
                del group.static_members[member.instance_id]
        else:
            group.members[key.name] = ToyMember(key.name, value["instance_id"], value["client_id"])
            if value["instance_id"] is not None:
                group.static_members[value["instance_id"]] = key.name

    def _write(self, group_id: str, record: tuple, event: str, fields: dict) -> None:
        self.ctx.replay(*record)
        self.ctx.append(group_id, [record])
        self.ctx.event(self.ctx.groups[group_id], event, self.ctx.clock(), fields)

    @entry
    def join(self, group_id: str, member_id: str, instance_id: str | None, client_id: str) -> int:
        group = self.ctx.groups.get(group_id)
        if group is not None and group.type != self.type:
            return int(ErrorCode.GROUP_ID_NOT_FOUND)
        size = self.ctx.group_configs.get(group_id, "toy.max.size")
        if group is not None and len(group.members) >= size:
            return int(ErrorCode.GROUP_MAX_SIZE_REACHED)
        value = {"instance_id": instance_id, "client_id": client_id}
        self._write(group_id, (st.GroupRecordKey(TOY_MEMBER, group_id, member_id), value), "toy.member_joined",
                    {"member": member_id})
        return 0

    def expire_member(self, group_id: str, member_id: str) -> None:
        self._write(group_id, (st.GroupRecordKey(TOY_MEMBER, group_id, member_id), None), "toy.member_fenced",
                    {"member": member_id, "reason": "session_timeout"})

    def topics_changed(self, names) -> None:
        pass

    def loaded(self, group, now: int) -> bool:
        return True

    def create_group(self, group_id: str, now: int, cause: str):
        group = self.ctx.groups[group_id] = ToyGroup(group_id)
        return group

    def delete(self, group, now: int, reason: str) -> list:
        return []               # an empty toy group has no records left

    def retire(self, group) -> list:
        return []

    def on_unloaded(self, group) -> None:
        pass

    def join_group(self, respond, req, group) -> None:
        self.ctx.reply(respond, runtime.join_error(req.member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL))

    def sync_group(self, respond, req, group) -> None:
        self.ctx.reply(respond, runtime.sync_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))

    def heartbeat_error(self, req, group) -> int:
        return int(ErrorCode.UNKNOWN_MEMBER_ID)

    def leave(self, group, group_id: str, idents: list, initiator: str) -> dict:
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.UNKNOWN_MEMBER_ID), "members": []}

    view = SimpleNamespace(      # the admin API's view (a type's package has a view module)
        summary_json=lambda group, manager: {"protocol_type": "toy", "protocol": None,
                                             "generation": group.generation_id, "leader": None},
        members_json=lambda group, cluster: [{"member_id": m.member_id, "client_id": m.client_id}
                                             for m in group.members.values()],
        SUMMARY_FIELDS={}, MEMBER_SCHEMA="ToyMember", SCHEMAS={})


@pytest.fixture
def toy(monkeypatch):
    """The toy type registered: its record in the offsets log, its manager in the runtime's types."""
    records.OFFSETS_LOG.register(TOY_MEMBER, records.group_record_key("ToyMemberKey", "MemberId"),
                                 records.group_record_value("ToyMemberValue", [
                                     F("InstanceId", "string", nullable="0+"), F("ClientId", "string")]))
    monkeypatch.setattr(runtime, "GROUP_TYPES", runtime.GROUP_TYPES + (ToyManager,))
    yield
    del records.OFFSETS_LOG[TOY_MEMBER]


def _commit(gc, group_id: str, member_id: str = "", generation: int = -1) -> int:
    out = []
    gc.offset_commit(out.append, OffsetCommitRequest(group_id, [{"name": "t", "partitions": [
        {"partition_index": 0, "committed_offset": 7, "committed_leader_epoch": -1, "committed_metadata": ""}]}],
        generation_id=generation, member_id=member_id))
    return out[0]["topics"][0]["partitions"][0]["error_code"]


def test_a_toy_group_type_lives_in_every_part_of_the_coordinator(toy, tmp_path):
    now = [1000]
    events = []
    service = Service(store=st.LogStore(str(tmp_path)), clock=lambda: now[0], emit=events.append)
    metrics = Metrics(service, process=False).attach()
    gc = service.group_coordinator
    manager = gc.manager("toy")
    assert [manager.join("q", m, i, c) for m, i, c in (("m1", None, "c1"), ("m2", "i2", "c2"), ("m3", None, "c3"))] \
        == [0, 0, 0]
    assert manager.join("q", "m4", None, "c4") == ErrorCode.GROUP_MAX_SIZE_REACHED      # its own group config
    gc.group_configs.set("q", {"toy.max.size": 4})
    assert manager.join("q", "m4", None, "c4") == 0
    assert manager.join("other", "x", None, "c") == 0
    assert (_commit(gc, "q", "m1", 4), _commit(gc, "q", "nobody", 4)) == (0, ErrorCode.UNKNOWN_MEMBER_ID)

    listed = []
    gc.list_groups(listed.append, types_filter=["toy"])
    assert listed[0]["groups"] == [
        {"group_id": "q", "protocol_type": "toy", "group_state": "Stable", "group_type": "toy"},
        {"group_id": "other", "protocol_type": "toy", "group_state": "Stable", "group_type": "toy"}]
    described = gc.describe_group("q", group_id_not_found=True)
    assert (described["error_code"], described["error_message"]) == (ErrorCode.GROUP_ID_NOT_FOUND,
                                                                     "Group q is not a classic group.")
    deleted = []
    gc.delete_groups(deleted.append, group_ids=["q"])
    assert deleted[0]["results"] == [{"group_id": "q", "error_code": ErrorCode.NON_EMPTY_GROUP}]

    # the admin API, the faults (by instance id) and the metrics know it through its manager
    group = gc.get("q")
    assert group_summary_json(service, group)["type"] == "toy"
    detail = group_detail_json(service, group)
    assert [m["member_id"] for m in detail["members"]] == ["m1", "m2", "m3", "m4"]
    assert [(o["topic"], o["offset"]) for o in detail["offsets"]] == [("t", 7)]
    assert service.faults.expire_member("q", instance_id="i2") == "m2"
    assert list(gc.get("q").members) == ["m1", "m3", "m4"]
    text = metrics.exposition().decode()
    assert 'groupcoord_toy_group_count{state="Stable"} 2.0' in text
    assert 'groupcoord_group_count{protocol="toy"} 2.0' in text
    assert "groupcoord_members_joined_total 5.0" in text
    assert 'groupcoord_members_removed_total{reason="session_timeout"} 1.0' in text
    service.store.close()

    # a restart replays its records: the same members, the offsets
    again = Service(store=st.LogStore(str(tmp_path)), clock=lambda: now[0])
    again.load()
    gc2 = again.group_coordinator
    assert list(gc2.get("q").members) == ["m1", "m3", "m4"] and gc2.get("q").type == "toy"
    assert gc2.offsets.of("q")["t"][0].committed_offset == 7
    for member in ("m1", "m3", "m4"):
        gc2.manager("toy").expire_member("q", member)
    gc2.delete_groups(deleted.append, group_ids=["q"])
    assert deleted[-1]["results"] == [{"group_id": "q", "error_code": 0}]
    fetched = []
    gc2.offset_fetch(fetched.append, OffsetFetchRequest("q", None))
    assert fetched[0]["topics"] == []
    again.store.close()
