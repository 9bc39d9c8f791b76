"""The share group offsets APIs' coordinator side (KIP-932): DescribeShareGroupOffsets (90),
AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92), a mixin of
:class:`~.manager.ShareGroupManager`.

After Kafka 4.1 to 4.3's ``GroupCoordinatorService`` (``describeShareGroupOffsets``,
``describeShareGroupAllOffsets``, ``readShareGroupStateSummary``, ``computeShareGroupLagAndBuildResponse``,
``alterShareGroupOffsets``, ``persisterInitialize``, ``deleteShareGroupOffsets``,
``deleteShareGroupOffsetsState``), ``GroupCoordinatorShard`` (``initiateDeleteShareGroupOffsets``,
``completeDeleteShareGroupOffsets``) and ``GroupMetadataManager`` (``initializedShareGroupPartitions``,
``alterShareGroupOffsets``, ``sharePartitionsEligibleForOffsetDeletion``, ``completeDeleteShareGroupOffsets``);
the share coordinator's answers (ReadShareGroupStateSummary, InitializeShareGroupState,
DeleteShareGroupState, and DefaultStatePersister's checks of them) come from the manager's
``persister`` (:class:`~...share.states.ShareStates`). What KafkaApis does (the switch, authorization,
the topics it answers itself, merging the coordinator's answer) is the handlers'; so is NOT_COORDINATOR,
which they answer after INVALID_GROUP_ID, as Kafka's service checks the group id before its runtime
finds the coordinator.

* Describe: the share coordinator's summary of each share-partition asked (all those the group has
  initialized when the request's Topics is null, topics the metadata does not know left out): its start
  offset and leader epoch, -1 and 0 when nothing is kept (or the partition does not exist), and from
  Kafka 4.2 (v1) its lag, the partition's end offset less the start offset and the delivery complete
  count, -1 when either is unknown. Named topics the metadata does not know: TopicId zero, start offset
  -1. No group or coordinator check for named topics (Kafka reads the share coordinator directly); a read
  DefaultStatePersister refuses (an empty group id, a topic without partitions, a negative partition)
  fails the group with UNKNOWN_SERVER_ERROR.
* Alter: the group must be a share group (4.2+: created when it does not exist, as the state metadata
  record's replay brings it; 4.1: GROUP_ID_NOT_FOUND) and empty (NON_EMPTY_GROUP); the partitions are
  written as initializing, their states initialized with the given start offsets at the group epoch (as
  state epoch), then written as initialized; a partition beyond the topic's count is
  UNKNOWN_TOPIC_OR_PARTITION (4.2+ lets a negative index through, which DefaultStatePersister then
  refuses: UNKNOWN_SERVER_ERROR for the request; 4.1 answers it UNKNOWN_TOPIC_OR_PARTITION). A persister
  error on a partition keeps every partition initializing (4.2+ answers it on the partition; 4.1 answers
  success). A share-partition a leader had loaded is dropped (``ShareStates.on_delete``) so that it loads
  the new state.
* Delete: the group must exist, be a share group and be empty; a group that never had share-partition
  state metadata answers no topics at all (``sharePartitionsEligibleForOffsetDeletion`` finds no map);
  an initialized topic's state is deleted, the topic moved to deleting and then out of the metadata (a
  deleting one's every partition is deleted again); a known topic with neither is
  UNKNOWN_TOPIC_OR_PARTITION "There is no offset information to delete.", an unknown one
  UNKNOWN_TOPIC_OR_PARTITION with Kafka's message. Answered: the deleted topics, then the failed ones.

Every error message is Kafka's (:func:`kafka_message`: the default messages of its ``Errors``).
"""
from __future__ import annotations

import base64
import uuid

from groupcoord.protocol.errors import ErrorCode

from ...releases import at_least
from ..context import entry
from . import records
from .group import DEAD, InitMapValue, ShareGroup

_E = ErrorCode
ZERO_UUID = uuid.UUID(int=0)
#: GroupMetadataManager.sharePartitionsEligibleForOffsetDeletion's message for a topic without state
NO_OFFSET_INFORMATION = "There is no offset information to delete."

def kafka_message(code: int) -> str | None:
    """Kafka's default message of an error code (``Errors.message()``), None for NONE."""
    if not code:
        return None
    return ErrorCode(code).message or None


def kafka_uuid(topic_id: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: base64url without padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")


# ---- the entries of the responses ----------------------------------------------------------------
def offsets_partition(index: int, start_offset: int = -1, leader_epoch: int = 0, lag: int = -1,
                      code: int = 0, message: str | None = None) -> dict:
    """A DescribeShareGroupOffsetsResponsePartition (Kafka's defaults: leader epoch 0, lag -1)."""
    return {"partition_index": index, "start_offset": start_offset, "leader_epoch": leader_epoch, "lag": lag,
            "error_code": int(code), "error_message": message}


def offsets_group(group_id: str, topics: list, code: int = 0, message: str | None = None) -> dict:
    """A DescribeShareGroupOffsetsResponseGroup."""
    return {"group_id": group_id, "topics": topics, "error_code": int(code), "error_message": message}


def coordinator_error(code: int, message: str | None = None) -> dict:
    """The coordinator's answer to an AlterShareGroupOffsets or DeleteShareGroupOffsets failed as a whole
    (``getErrorResponseData``: the message, else Kafka's)."""
    return {"error_code": int(code), "error_message": message or kafka_message(code), "responses": []}


def _answer(responses: list) -> dict:
    return {"error_code": 0, "error_message": None, "responses": responses}


def _alter_partition(index: int, code: int = 0, message: str | None = None) -> dict:
    return {"partition_index": index, "error_code": int(code), "error_message": message}


def _deleted_topic(name: str | None, topic_id: uuid.UUID, code: int = 0, message: str | None = None) -> dict:
    return {"topic_name": name, "topic_id": topic_id, "error_code": int(code), "error_message": message}


def _combine(current: dict, added: dict) -> dict:
    """``combineInitMaps``: both maps' partitions per topic, the name and time of ``added`` where it has
    the topic."""
    out = dict(current)
    for topic_id, value in added.items():
        old = out.get(topic_id)
        out[topic_id] = value if old is None else value._replace(partitions=old.partitions | value.partitions)
    return out


class ShareGroupOffsets:
    """The three offsets APIs of :class:`~.manager.ShareGroupManager` (see the module); each answers the
    coordinator's part of the response, the handlers the rest."""

    # ---- DescribeShareGroupOffsets ------------------------------------------------------------
    def initialized_share_group_partitions(self, group_id: str) -> dict:
        """``initializedShareGroupPartitions``: topic id -> the partitions whose state the group has
        initialized (none for a group that is not a share group, or none at all)."""
        group = self.group(group_id)
        return {} if group is None else group.initialized_partitions()

    def describe_offsets(self, group_id: str, topics: list | None) -> dict:
        """The group's DescribeShareGroupOffsetsResponseGroup: ``topics`` the request's (each
        ``{"topic_name", "partitions"}``, those the API layer authorized), None for every initialized
        share-partition of the group (``describeShareGroupAllOffsets``, which the handler calls only at
        the group's coordinator once it is loaded)."""
        new_order = at_least(self.ctx.release, "4.2")
        unknown: list[dict] = []
        reads: dict[uuid.UUID, tuple[str, set]] = {}
        requested: list = []            # each topic entry of the read, as DefaultStatePersister checks them
        if topics is None:
            for topic_id, partitions in self.initialized_share_group_partitions(group_id).items():
                name = self._topic_name(topic_id)
                if name is not None:
                    reads[topic_id] = (name, set(partitions))
                    requested.append(list(partitions))
        else:
            for t in topics:
                name = t["topic_name"]
                topic = self._topic(name)
                if topic is None:       # (as OffsetFetch: no offset, and no error)
                    unknown.append({"topic_name": name, "topic_id": ZERO_UUID,
                                    "partitions": [offsets_partition(p) for p in t["partitions"]]})
                    continue
                reads.setdefault(topic.topic_id, (name, set()))[1].update(t["partitions"])
                requested.append(list(t["partitions"]))
        if not reads:
            return offsets_group(group_id, unknown)
        if not group_id or any(not ps or min(ps) < 0 for ps in requested):
            # DefaultStatePersister.readSummary refuses it (IllegalArgumentException): the group fails
            return offsets_group(group_id, [], _E.UNKNOWN_SERVER_ERROR, kafka_message(_E.UNKNOWN_SERVER_ERROR))
        read = [{"topic_name": name, "topic_id": topic_id,
                 "partitions": [self._summary(group_id, topic_id, p, new_order) for p in sorted(partitions)]}
                for topic_id, (name, partitions) in reads.items()]
        # Kafka 4.2+ lists the share coordinator's topics first, 4.1 the unknown ones
        return offsets_group(group_id, read + unknown if new_order else unknown + read)

    def _summary(self, group_id: str, topic_id: uuid.UUID, partition: int, with_lag: bool) -> dict:
        """ReadShareGroupStateSummary of one share-partition, as the describe answers it."""
        topic = self._image.topics_by_id.get(topic_id) if self._image is not None else None
        if topic is None or partition >= topic.partition_count:
            return offsets_partition(partition)          # the share coordinator's UNKNOWN_TOPIC_OR_PARTITION
        state = self.persister.read((group_id, topic_id, partition))
        if state is None:                                 # not initialized: start offset -1, leader epoch 0
            return offsets_partition(partition)
        lag = -1
        if with_lag and state.start_offset != -1 and state.delivery_complete_count != -1:
            # the partition's end offset (ListOffsets LATEST, read_uncommitted) less what is done
            lag = topic.partitions[partition].log_end_offset - state.start_offset - state.delivery_complete_count
        return offsets_partition(partition, state.start_offset, state.leader_epoch, lag)

    # ---- AlterShareGroupOffsets -----------------------------------------------------------------
    @entry
    def alter_offsets(self, group_id: str, topics: list) -> dict:
        """The coordinator's AlterShareGroupOffsetsResponseData for the topics the API layer let
        through (each ``{"topic_name", "partitions": [{"partition_index", "start_offset"}]}``):
        ``{"error_code", "error_message", "responses"}``."""
        try:
            return self._alter_offsets(group_id, topics)
        finally:
            self._flush()

    def _alter_offsets(self, group_id: str, topics: list) -> dict:
        release = self.ctx.release
        since_4_2 = at_least(release, "4.2")
        if self.ctx.is_loading(group_id):
            return coordinator_error(_E.COORDINATOR_LOAD_IN_PROGRESS)
        if not topics and not since_4_2:
            return _answer([])
        group = self._groups.get(group_id)
        if group is not None and group.state == DEAD:
            group = None
        if group is not None and group.type != "share":
            return coordinator_error(_E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group."
                                     if since_4_2 else None)
        if group is None and not since_4_2:          # 4.1: groupMetadataManager.shareGroup(groupId)
            return coordinator_error(_E.GROUP_ID_NOT_FOUND)
        if group is not None and group.members:
            return coordinator_error(_E.NON_EMPTY_GROUP)
        now = self.ctx.clock()
        responses: list[dict] = []
        initializing: dict[uuid.UUID, InitMapValue] = {}
        offsets: dict[uuid.UUID, dict[int, int]] = {}
        for t in topics:
            name = t["topic_name"]
            topic = self._topic(name)
            if topic is None:
                responses.append({"topic_name": name, "topic_id": ZERO_UUID, "partitions": [
                    _alter_partition(p["partition_index"], _E.UNKNOWN_TOPIC_OR_PARTITION,
                                     kafka_message(_E.UNKNOWN_TOPIC_OR_PARTITION)) for p in t["partitions"]]})
                continue
            count = topic.partition_count
            parts, valid = [], set()
            for p in t["partitions"]:
                index = p["partition_index"]
                # 4.2+: ``index < partitionCount`` (a negative one passes); 4.1: the partition exists
                if index < count and (since_4_2 or index >= 0):
                    parts.append(_alter_partition(index))
                    offsets.setdefault(topic.topic_id, {})[index] = p["start_offset"]
                    valid.add(index)
                else:
                    parts.append(_alter_partition(index, _E.UNKNOWN_TOPIC_OR_PARTITION,
                                                  kafka_message(_E.UNKNOWN_TOPIC_OR_PARTITION)))
            initializing[topic.topic_id] = InitMapValue(name, frozenset(valid), now)
            responses.append({"topic_name": name, "topic_id": topic.topic_id, "partitions": parts})
        response = _answer(responses)
        if initializing:        # addInitializingTopicsRecords; its replay brings a group that was not there
            if group is None:
                group = self._new_group(group_id, now)
            self._emit(*records.state_partitions_record(group_id, _combine(group.initializing, initializing),
                                                        dict(group.initialized),
                                                        self._names(group.deleting - set(initializing))))
            self._flush()
        if not offsets and since_4_2:
            return response
        refused = _initialize_refused(group_id, offsets)
        if refused is not None:      # DefaultStatePersister.initializeState refuses it
            failed = _answer([{**r, "partitions": [_alter_partition(p["partition_index"], _E.UNKNOWN_SERVER_ERROR,
                                                                    kafka_message(_E.UNKNOWN_SERVER_ERROR))
                                                   for p in r["partitions"]]} for r in responses])
            return {**failed, "error_code": int(_E.UNKNOWN_SERVER_ERROR),
                    "error_message": refused if since_4_2 else kafka_message(_E.UNKNOWN_SERVER_ERROR)}
        # InitializeShareGroupState of each share-partition, at the group epoch; Kafka 4.3 counts the
        # records delivered from the new start offset (ShareGroupOffset.fromRequest)
        errors = {}
        counted = at_least(release, "4.3")
        for topic_id, starts in offsets.items():
            for index, start in starts.items():
                code = self.persister.initialize(group_id, group.group_epoch, {topic_id: [index]},
                                                 {topic_id: {index: start}}, complete_count_known=counted)
                if code:
                    errors[topic_id, index] = int(code)
        if not errors:          # handlePersisterInitializeResponse -> initializeShareGroupState
            self._initialized(group, {t: frozenset(starts) for t, starts in offsets.items()})
            return response
        if not since_4_2:       # 4.1: "TODO build new AlterShareGroupOffsetsResponseData for error response"
            return response
        for r in responses:     # buildErrorResponse: the persister's errors on their partitions
            r["partitions"] = [_alter_partition(p["partition_index"], errors[r["topic_id"], p["partition_index"]],
                                                kafka_message(errors[r["topic_id"], p["partition_index"]]))
                               if not p["error_code"] and (r["topic_id"], p["partition_index"]) in errors else p
                               for p in r["partitions"]]
        return response

    def _new_group(self, group_id: str, now: int) -> ShareGroup:
        """The share group an AlterShareGroupOffsets brings (``getOrMaybeCreateShareGroup``, kept by the
        replay of its state metadata record): empty, at epoch 0, 1 from Kafka 4.3, with no group epoch
        record."""
        return self.create_group(group_id, now, "alter_share_group_offsets")

    # ---- DeleteShareGroupOffsets ----------------------------------------------------------------
    @entry
    def delete_offsets(self, group_id: str, names: list) -> dict:
        """The coordinator's DeleteShareGroupOffsetsResponseData for the topic names the API layer let
        through: ``{"error_code", "error_message", "responses"}``."""
        try:
            return self._delete_offsets(group_id, names)
        finally:
            self._flush()

    def _delete_offsets(self, group_id: str, names: list) -> dict:
        if self.ctx.is_loading(group_id):
            return coordinator_error(_E.COORDINATOR_LOAD_IN_PROGRESS)
        group = self._groups.get(group_id)
        if group is None or group.state == DEAD:
            return coordinator_error(_E.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        if group.type != "share":
            return coordinator_error(_E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
        if group.members:
            return coordinator_error(_E.NON_EMPTY_GROUP)
        if not group.state_metadata:        # no ShareGroupStatePartitionMetadata: nothing to answer
            return _answer([])
        # initiateDeleteShareGroupOffsets: the initialized topics asked go to deleting
        initialized = dict(group.initialized)
        deleting = set(group.deleting)
        to_delete: dict[uuid.UUID, frozenset] = {}
        errors: list[dict] = []
        for name in names:
            topic = self._topic(name)
            if topic is None:
                errors.append(_deleted_topic(name, ZERO_UUID, _E.UNKNOWN_TOPIC_OR_PARTITION,
                                             kafka_message(_E.UNKNOWN_TOPIC_OR_PARTITION)))
            elif topic.topic_id in initialized:
                to_delete[topic.topic_id] = initialized.pop(topic.topic_id).partitions
                deleting.add(topic.topic_id)
            elif topic.topic_id in deleting:        # a deletion that did not complete: every partition
                to_delete[topic.topic_id] = frozenset(range(topic.partition_count))
            else:
                errors.append(_deleted_topic(name, ZERO_UUID, _E.UNKNOWN_TOPIC_OR_PARTITION, NO_OFFSET_INFORMATION))
        self._emit(*records.state_partitions_record(group_id, dict(group.initializing), initialized,
                                                    self._names(deleting)))
        self._flush()
        if not to_delete:
            return _answer(errors)
        code = self.persister.delete(group_id, dict(to_delete))
        if code:
            return _answer(errors + [_deleted_topic(self._topic_name(t), t, code, kafka_message(code))
                                     for t in to_delete])
        # completeDeleteShareGroupOffsets: the deleted topics leave deleting
        self._emit(*records.state_partitions_record(group_id, dict(group.initializing), dict(group.initialized),
                                                    self._names(group.deleting - set(to_delete))))
        return _answer([_deleted_topic(self._topic_name(t), t) for t in to_delete] + errors)


def _initialize_refused(group_id: str, offsets: dict) -> str | None:
    """DefaultStatePersister's check of an InitializeShareGroupState request: its message, None when
    it passes."""
    prefix = "Initialize share group parameters"
    if not offsets:
        return f"{prefix} topics data cannot be null or empty."
    for topic_id, starts in offsets.items():
        for index in starts:
            if index < 0:
                return f"{prefix} has invalid partitionId - {group_id} {kafka_uuid(topic_id)} {index}"
    return None
