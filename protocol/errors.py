"""Kafka protocol error codes and the exceptions raised by our codecs.

Two unrelated families live here:

* :class:`ErrorCode` / :class:`KafkaError` -- the *wire* errors, i.e. the
  ``ErrorCode`` int16 fields that Kafka puts into responses.  The table mirrors
  ``org.apache.kafka.common.protocol.Errors`` of Apache Kafka trunk: same
  names, same codes, ``retriable`` true exactly where Kafka's exception class
  extends ``RetriableException`` (directly or through ``InvalidMetadataException``
  / ``RefreshRetriableException``), and ``exception_name`` is the simple name of
  the Java exception class.  Messages are our own short paraphrases of Kafka's
  default messages.  Codes 134 and 135 arrived with KIP-1331 (Kafka 4.4).

* :class:`ProtocolError` and its subclasses -- failures of *our* encoders and
  decoders (malformed bytes, unsupported versions, values that cannot be
  encoded).  They say where the problem is: API, version, byte offset / field.
"""

from __future__ import annotations

import enum

__all__ = [
    "ErrorCode",
    "KafkaError",
    "ProtocolError",
    "DecodeError",
    "EncodeError",
    "UnsupportedVersionError",
]


class ErrorCode(enum.IntEnum):
    """Every error code of Kafka's ``Errors`` enum.

    ``ErrorCode(25) is ErrorCode.UNKNOWN_MEMBER_ID`` and ``int(ErrorCode.X)``
    is the wire code.  Each member also carries:

    * ``retriable`` -- Kafka's own classification (``RetriableException``);
    * ``message`` -- one short sentence describing the error (``""`` for NONE);
    * ``exception_name`` -- the Java exception class name (``None`` for NONE).

    ``ErrorCode(code)`` raises ``ValueError`` for codes Kafka does not define;
    use :meth:`lookup` to get the plain int back instead.
    """

    retriable: bool
    message: str
    exception_name: str | None

    def __new__(cls, code: int, retriable: bool, exception_name: str | None, message: str) -> "ErrorCode":
        obj = int.__new__(cls, code)
        obj._value_ = code
        obj.retriable = retriable
        obj.exception_name = exception_name
        obj.message = message
        return obj

    # name = (code, retriable, Java exception class, message)
    UNKNOWN_SERVER_ERROR = (-1, False, "UnknownServerException", "The server hit an unexpected error while handling the request.")
    NONE = (0, False, None, "")
    OFFSET_OUT_OF_RANGE = (1, False, "OffsetOutOfRangeException", "The requested offset is outside the range the server holds.")
    CORRUPT_MESSAGE = (2, True, "CorruptRecordException", "The message failed its CRC check, is oversized, lacks a key on a compacted topic, or is otherwise corrupt.")
    UNKNOWN_TOPIC_OR_PARTITION = (3, True, "UnknownTopicOrPartitionException", "This server does not host this topic-partition.")
    INVALID_FETCH_SIZE = (4, False, "InvalidFetchSizeException", "The requested fetch size is not valid.")
    LEADER_NOT_AVAILABLE = (5, True, "LeaderNotAvailableException", "The topic-partition has no leader because a leader election is under way.")
    NOT_LEADER_OR_FOLLOWER = (6, True, "NotLeaderOrFollowerException", "This broker is not the leader (or, for replica requests, not a replica) of the topic-partition.")
    REQUEST_TIMED_OUT = (7, True, "TimeoutException", "The request timed out.")
    BROKER_NOT_AVAILABLE = (8, False, "BrokerNotAvailableException", "The broker is unavailable.")
    REPLICA_NOT_AVAILABLE = (9, True, "ReplicaNotAvailableException", "The replica for the requested topic-partition is unavailable.")
    MESSAGE_TOO_LARGE = (10, False, "RecordTooLargeException", "The request holds a message bigger than the largest the server accepts.")
    STALE_CONTROLLER_EPOCH = (11, False, "ControllerMovedException", "The controller has moved to another broker.")
    OFFSET_METADATA_TOO_LARGE = (12, False, "OffsetMetadataTooLarge", "The metadata attached to the committed offset is too large.")
    NETWORK_EXCEPTION = (13, True, "NetworkException", "The server closed the connection before a response was received.")
    COORDINATOR_LOAD_IN_PROGRESS = (14, True, "CoordinatorLoadInProgressException", "The coordinator is still loading and cannot serve requests yet.")
    COORDINATOR_NOT_AVAILABLE = (15, True, "CoordinatorNotAvailableException", "The coordinator is unavailable.")
    NOT_COORDINATOR = (16, True, "NotCoordinatorException", "This broker is not the right coordinator.")
    INVALID_TOPIC_EXCEPTION = (17, False, "InvalidTopicException", "The request tried to operate on an invalid topic.")
    RECORD_LIST_TOO_LARGE = (18, False, "RecordBatchTooLargeException", "The request holds a record batch bigger than the server's configured segment size.")
    NOT_ENOUGH_REPLICAS = (19, True, "NotEnoughReplicasException", "The messages were rejected because fewer in-sync replicas exist than required.")
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = (20, True, "NotEnoughReplicasAfterAppendException", "The messages were appended, but to fewer in-sync replicas than required.")
    INVALID_REQUIRED_ACKS = (21, False, "InvalidRequiredAcksException", "The produce request has an invalid required-acks value.")
    ILLEGAL_GENERATION = (22, False, "IllegalGenerationException", "The given group generation id is not valid.")
    INCONSISTENT_GROUP_PROTOCOL = (23, False, "InconsistentGroupProtocolException", "The member's protocols do not match the group's, or the first member joined with an empty protocol type or list.")
    INVALID_GROUP_ID = (24, False, "InvalidGroupIdException", "The group id is not valid.")
    UNKNOWN_MEMBER_ID = (25, False, "UnknownMemberIdException", "The coordinator does not know this member.")
    INVALID_SESSION_TIMEOUT = (26, False, "InvalidSessionTimeoutException", "The session timeout is outside the broker's group.min/max.session.timeout.ms range.")
    REBALANCE_IN_PROGRESS = (27, False, "RebalanceInProgressException", "The group is rebalancing, so the member must rejoin.")
    INVALID_COMMIT_OFFSET_SIZE = (28, False, "InvalidCommitOffsetSizeException", "The size of the committed offset data is not valid.")
    TOPIC_AUTHORIZATION_FAILED = (29, False, "TopicAuthorizationException", "Not authorized to access the topic.")
    GROUP_AUTHORIZATION_FAILED = (30, False, "GroupAuthorizationException", "Not authorized to access the group.")
    CLUSTER_AUTHORIZATION_FAILED = (31, False, "ClusterAuthorizationException", "Not authorized to perform the cluster operation.")
    INVALID_TIMESTAMP = (32, False, "InvalidTimestampException", "The message timestamp is outside the acceptable range.")
    UNSUPPORTED_SASL_MECHANISM = (33, False, "UnsupportedSaslMechanismException", "The broker does not support the requested SASL mechanism.")
    ILLEGAL_SASL_STATE = (34, False, "IllegalSaslStateException", "The request is not valid in the current SASL state.")
    UNSUPPORTED_VERSION = (35, False, "UnsupportedVersionException", "This version of the API is not supported.")
    TOPIC_ALREADY_EXISTS = (36, False, "TopicExistsException", "A topic with this name already exists.")
    INVALID_PARTITIONS = (37, False, "InvalidPartitionsException", "The number of partitions is less than 1.")
    INVALID_REPLICATION_FACTOR = (38, False, "InvalidReplicationFactorException", "The replication factor is less than 1 or exceeds the number of available brokers.")
    INVALID_REPLICA_ASSIGNMENT = (39, False, "InvalidReplicaAssignmentException", "The replica assignment is not valid.")
    INVALID_CONFIG = (40, False, "InvalidConfigurationException", "The configuration is not valid.")
    NOT_CONTROLLER = (41, True, "NotControllerException", "This broker is not the cluster's controller.")
    INVALID_REQUEST = (42, False, "InvalidRequestException", "The request is malformed or was sent to an incompatible broker; the broker log has details.")
    UNSUPPORTED_FOR_MESSAGE_FORMAT = (43, False, "UnsupportedForMessageFormatException", "The broker's message format version does not support the request.")
    POLICY_VIOLATION = (44, False, "PolicyViolationException", "The request parameters violate the configured policy.")
    OUT_OF_ORDER_SEQUENCE_NUMBER = (45, False, "OutOfOrderSequenceException", "The broker got a sequence number out of order.")
    DUPLICATE_SEQUENCE_NUMBER = (46, False, "DuplicateSequenceException", "The broker got a duplicate sequence number.")
    INVALID_PRODUCER_EPOCH = (47, False, "InvalidProducerEpochException", "The producer tried to produce with an outdated epoch.")
    INVALID_TXN_STATE = (48, False, "InvalidTxnStateException", "The producer attempted a transactional operation in an invalid state.")
    INVALID_PRODUCER_ID_MAPPING = (49, False, "InvalidPidMappingException", "The producer used a producer id not currently assigned to its transactional id.")
    INVALID_TRANSACTION_TIMEOUT = (50, False, "InvalidTxnTimeoutException", "The transaction timeout exceeds the broker's transaction.max.timeout.ms.")
    CONCURRENT_TRANSACTIONS = (51, True, "ConcurrentTransactionsException", "Another operation on the same transaction is still in progress.")
    TRANSACTION_COORDINATOR_FENCED = (52, False, "TransactionCoordinatorFencedException", "The transaction coordinator sending WriteTxnMarkers is no longer the producer's current coordinator.")
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = (53, False, "TransactionalIdAuthorizationException", "Not authorized to use the transactional id.")
    SECURITY_DISABLED = (54, False, "SecurityDisabledException", "Security features are turned off.")
    OPERATION_NOT_ATTEMPTED = (55, False, "OperationNotAttemptedException", "The broker skipped this operation, e.g. because another operation in the same batch failed.")
    KAFKA_STORAGE_ERROR = (56, True, "KafkaStorageException", "A disk error occurred while accessing the log file.")
    LOG_DIR_NOT_FOUND = (57, False, "LogDirNotFoundException", "The requested log directory is not in the broker configuration.")
    SASL_AUTHENTICATION_FAILED = (58, False, "SaslAuthenticationException", "SASL authentication failed.")
    UNKNOWN_PRODUCER_ID = (59, False, "UnknownProducerIdException", "The broker has no metadata for this producer id, e.g. because its records expired.")
    REASSIGNMENT_IN_PROGRESS = (60, False, "ReassignmentInProgressException", "A partition reassignment is under way.")
    DELEGATION_TOKEN_AUTH_DISABLED = (61, False, "DelegationTokenDisabledException", "The delegation token feature is disabled.")
    DELEGATION_TOKEN_NOT_FOUND = (62, False, "DelegationTokenNotFoundException", "The delegation token does not exist on the server.")
    DELEGATION_TOKEN_OWNER_MISMATCH = (63, False, "DelegationTokenOwnerMismatchException", "The principal is not a valid owner or renewer of the token.")
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = (64, False, "UnsupportedByAuthenticationException", "Delegation token requests are refused on PLAINTEXT, 1-way SSL and token-authenticated channels.")
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = (65, False, "DelegationTokenAuthorizationException", "Not authorized for the delegation token operation.")
    DELEGATION_TOKEN_EXPIRED = (66, False, "DelegationTokenExpiredException", "The delegation token has expired.")
    INVALID_PRINCIPAL_TYPE = (67, False, "InvalidPrincipalTypeException", "The given principal type is not supported.")
    NON_EMPTY_GROUP = (68, False, "GroupNotEmptyException", "The group still has members.")
    GROUP_ID_NOT_FOUND = (69, False, "GroupIdNotFoundException", "No group with this id exists.")
    FETCH_SESSION_ID_NOT_FOUND = (70, True, "FetchSessionIdNotFoundException", "The fetch session id is unknown.")
    INVALID_FETCH_SESSION_EPOCH = (71, True, "InvalidFetchSessionEpochException", "The fetch session epoch is not valid.")
    LISTENER_NOT_FOUND = (72, True, "ListenerNotFoundException", "The leader has no listener matching the one the metadata request came in on.")
    TOPIC_DELETION_DISABLED = (73, False, "TopicDeletionDisabledException", "Deleting topics is disabled.")
    FENCED_LEADER_EPOCH = (74, True, "FencedLeaderEpochException", "The request's leader epoch is older than the broker's.")
    UNKNOWN_LEADER_EPOCH = (75, True, "UnknownLeaderEpochException", "The request's leader epoch is newer than the broker's.")
    UNSUPPORTED_COMPRESSION_TYPE = (76, False, "UnsupportedCompressionTypeException", "The client does not support the partition's compression type.")
    STALE_BROKER_EPOCH = (77, False, "StaleBrokerEpochException", "The broker epoch has changed.")
    OFFSET_NOT_AVAILABLE = (78, True, "OffsetNotAvailableException", "The high watermark has not caught up after a leader election, so offsets may not be monotonic yet.")
    MEMBER_ID_REQUIRED = (79, False, "MemberIdRequiredException", "The member must obtain a valid member id before it can join the group.")
    PREFERRED_LEADER_NOT_AVAILABLE = (80, True, "PreferredLeaderNotAvailableException", "The preferred leader is unavailable.")
    GROUP_MAX_SIZE_REACHED = (81, False, "GroupMaxSizeReachedException", "The group is already at its maximum size.")
    FENCED_INSTANCE_ID = (82, False, "FencedInstanceIdException", "Another member with the same group.instance.id but a different member.id fenced this static member.")
    ELIGIBLE_LEADERS_NOT_AVAILABLE = (83, True, "EligibleLeadersNotAvailableException", "No eligible leader is available for the partition.")
    ELECTION_NOT_NEEDED = (84, True, "ElectionNotNeededException", "The partition does not need a leader election.")
    NO_REASSIGNMENT_IN_PROGRESS = (85, False, "NoReassignmentInProgressException", "There is no partition reassignment under way.")
    GROUP_SUBSCRIBED_TO_TOPIC = (86, False, "GroupSubscribedToTopicException", "Offsets of a topic cannot be deleted while the group is subscribed to it.")
    INVALID_RECORD = (87, False, "InvalidRecordException", "The broker rejected the record because it failed validation.")
    UNSTABLE_OFFSET_COMMIT = (88, True, "UnstableOffsetCommitException", "Pending transactional offsets must be resolved first.")
    THROTTLING_QUOTA_EXCEEDED = (89, True, "ThrottlingQuotaExceededException", "The throttling quota was exceeded.")
    PRODUCER_FENCED = (90, False, "ProducerFencedException", "A newer producer with the same transactional id has fenced this one.")
    RESOURCE_NOT_FOUND = (91, False, "ResourceNotFoundException", "The request refers to a resource that does not exist.")
    DUPLICATE_RESOURCE = (92, False, "DuplicateResourceException", "The request refers to the same resource twice.")
    UNACCEPTABLE_CREDENTIAL = (93, False, "UnacceptableCredentialException", "The requested credential does not meet the acceptability criteria.")
    INCONSISTENT_VOTER_SET = (94, False, "InconsistentVoterSetException", "The sender or receiver of a voter-only request is not an expected voter.")
    INVALID_UPDATE_VERSION = (95, False, "InvalidUpdateVersionException", "The update version is not valid.")
    FEATURE_UPDATE_FAILED = (96, False, "FeatureUpdateFailedException", "Updating the finalized features failed on an unexpected server error.")
    PRINCIPAL_DESERIALIZATION_FAILURE = (97, False, "PrincipalDeserializationException", "The request principal could not be deserialized while forwarding.")
    SNAPSHOT_NOT_FOUND = (98, False, "SnapshotNotFoundException", "The requested snapshot does not exist.")
    POSITION_OUT_OF_RANGE = (99, False, "PositionOutOfRangeException", "The requested position is negative or beyond the end of the snapshot.")
    UNKNOWN_TOPIC_ID = (100, True, "UnknownTopicIdException", "This server does not host a topic with this id.")
    DUPLICATE_BROKER_REGISTRATION = (101, False, "DuplicateBrokerRegistrationException", "This broker id is already registered.")
    BROKER_ID_NOT_REGISTERED = (102, False, "BrokerIdNotRegisteredException", "The broker id is not registered.")
    INCONSISTENT_TOPIC_ID = (103, True, "InconsistentTopicIdException", "The topic id in the request differs from the log's topic id.")
    INCONSISTENT_CLUSTER_ID = (104, False, "InconsistentClusterIdException", "The cluster id in the request differs from the server's.")
    TRANSACTIONAL_ID_NOT_FOUND = (105, False, "TransactionalIdNotFoundException", "The transactional id does not exist.")
    FETCH_SESSION_TOPIC_ID_ERROR = (106, True, "FetchSessionTopicIdException", "The fetch session used topic ids inconsistently.")
    INELIGIBLE_REPLICA = (107, False, "IneligibleReplicaException", "The proposed ISR contains an ineligible replica.")
    NEW_LEADER_ELECTED = (108, False, "NewLeaderElectedException", "The AlterPartition update succeeded, but the leader has changed.")
    OFFSET_MOVED_TO_TIERED_STORAGE = (109, False, "OffsetMovedToTieredStorageException", "The requested offset now lives in tiered storage.")
    FENCED_MEMBER_EPOCH = (110, False, "FencedMemberEpochException", "The coordinator fenced the member epoch; the member must drop its partitions and rejoin.")
    UNRELEASED_INSTANCE_ID = (111, False, "UnreleasedInstanceIdException", "Another group member still holds this instance id and has to leave first.")
    UNSUPPORTED_ASSIGNOR = (112, False, "UnsupportedAssignorException", "The group does not support this assignor or its version range.")
    STALE_MEMBER_EPOCH = (113, False, "StaleMemberEpochException", "The member epoch is stale; retry once the heartbeat has delivered the current epoch.")
    MISMATCHED_ENDPOINT_TYPE = (114, False, "MismatchedEndpointTypeException", "The request reached an endpoint of the wrong type.")
    UNSUPPORTED_ENDPOINT_TYPE = (115, False, "UnsupportedEndpointTypeException", "This endpoint type is not supported yet.")
    UNKNOWN_CONTROLLER_ID = (116, False, "UnknownControllerIdException", "The controller id is unknown.")
    UNKNOWN_SUBSCRIPTION_ID = (117, False, "UnknownSubscriptionIdException", "The telemetry push used an invalid or outdated subscription id.")
    TELEMETRY_TOO_LARGE = (118, False, "TelemetryTooLargeException", "The telemetry push is bigger than the broker accepts.")
    INVALID_REGISTRATION = (119, False, "InvalidRegistrationException", "The controller judged the broker registration invalid.")
    TRANSACTION_ABORTABLE = (120, False, "TransactionAbortableException", "The transaction hit a server-side error; abort it to keep using the transactional id.")
    INVALID_RECORD_STATE = (121, False, "InvalidRecordStateException", "The record is in an invalid state, so its delivery could not be acknowledged.")
    SHARE_SESSION_NOT_FOUND = (122, True, "ShareSessionNotFoundException", "The share session does not exist.")
    INVALID_SHARE_SESSION_EPOCH = (123, True, "InvalidShareSessionEpochException", "The share session epoch is not valid.")
    FENCED_STATE_EPOCH = (124, False, "FencedStateEpochException", "The share coordinator rejected the request because the share-group state epoch did not match.")
    INVALID_VOTER_KEY = (125, False, "InvalidVoterKeyException", "The voter key does not match the receiving replica's key.")
    DUPLICATE_VOTER = (126, False, "DuplicateVoterException", "The voter is already in the voter set.")
    VOTER_NOT_FOUND = (127, False, "VoterNotFoundException", "The voter is not in the voter set.")
    INVALID_REGULAR_EXPRESSION = (128, False, "InvalidRegularExpression", "The regular expression is not valid.")
    REBOOTSTRAP_REQUIRED = (129, False, "RebootstrapRequiredException", "The client's metadata is stale and it should rebootstrap.")
    STREAMS_INVALID_TOPOLOGY = (130, False, "StreamsInvalidTopologyException", "The supplied Streams topology is not valid.")
    STREAMS_INVALID_TOPOLOGY_EPOCH = (131, False, "StreamsInvalidTopologyEpochException", "The supplied Streams topology epoch is not valid.")
    STREAMS_TOPOLOGY_FENCED = (132, False, "StreamsTopologyFencedException", "The supplied Streams topology epoch is out of date.")
    SHARE_SESSION_LIMIT_REACHED = (133, True, "ShareSessionLimitReachedException", "No new share session can be opened because the limit has been reached.")
    GROUP_DELETION_FAILED = (134, False, "GroupDeletionFailedException", "DeleteGroups could not finish for this group; the per-group error message says why.")
    STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED = (135, False, "StreamsTopologyDescriptionUpdateFailedException", "The broker could not process the topology description update; the error message says why.")

    @classmethod
    def lookup(cls, code: int) -> "ErrorCode | int":
        """Return the member for ``code``, or ``code`` itself when Kafka defines no such error.

        Never raises: also unhashable or non-int input is handed back unchanged.
        """
        try:
            return cls._value2member_map_[code]  # type: ignore[return-value]
        except (KeyError, TypeError):
            return code

    @property
    def is_error(self) -> bool:
        """False only for ``NONE``."""
        return self is not ErrorCode.NONE


def error_message(code: int) -> str | None:
    """Kafka's default message of an error code (None for a code it does not know)."""
    known = ErrorCode.lookup(code)
    return known.message if isinstance(known, ErrorCode) else None


class KafkaError(Exception):
    """An error carrying a Kafka :class:`ErrorCode` (attribute ``code``).

    ``KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)`` uses the code's default
    message; a second argument overrides it.  A plain int is resolved with
    :meth:`ErrorCode.lookup`, so an undefined code stays available as an int.
    ``str()`` gives ``"NAME (code): message"``.
    """

    def __init__(self, code: "ErrorCode | int", message: str | None = None) -> None:
        super().__init__(code, message)
        resolved = ErrorCode.lookup(code)
        self.code: ErrorCode | int = resolved
        if message is None:
            message = resolved.message if isinstance(resolved, ErrorCode) else "Unknown error code."
        self.message: str = message

    @property
    def name(self) -> str:
        return self.code.name if isinstance(self.code, ErrorCode) else "UNKNOWN_ERROR_CODE"

    @property
    def retriable(self) -> bool:
        return isinstance(self.code, ErrorCode) and self.code.retriable

    def __str__(self) -> str:
        return f"{self.name} ({int(self.code)}): {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name}, {self.message!r})"


# --------------------------------------------------------------------------
# codec errors
# --------------------------------------------------------------------------

class ProtocolError(Exception):
    """Base class of the errors raised by our protocol encoders and decoders."""


def _where(api: str, version: int | None) -> str:
    return api if version is None else f"{api} v{version}"


class DecodeError(ProtocolError):
    """Bytes that cannot be decoded as ``api`` (e.g. "JoinGroupRequest", "RequestHeader").

    ``version`` is the API / schema version when known, ``offset`` the byte
    offset inside the decoded buffer where decoding failed, ``reason`` says
    what was wrong.  The constructor arguments are kept in ``args`` so the
    exception pickles.
    """

    def __init__(self, api: str, version: int | None = None, offset: int | None = None, reason: str = "") -> None:
        super().__init__(api, version, offset, reason)
        self.api = api
        self.version = version
        self.offset = offset
        self.reason = reason

    def _location(self) -> str:
        loc = _where(self.api, self.version)
        return loc if self.offset is None else f"{loc} at offset {self.offset}"

    def __str__(self) -> str:
        return f"cannot decode {self._location()}: {self.reason}"


class UnsupportedVersionError(DecodeError):
    """The (api, version) pair -- or the API key itself -- is one we do not implement."""

    def __str__(self) -> str:
        text = f"cannot decode {self._location()}: unsupported version"
        return f"{text}: {self.reason}" if self.reason else text


class EncodeError(ProtocolError):
    """A value that cannot be encoded as ``api`` at ``version``.

    ``field`` is the dotted path of the offending field (e.g. "Protocols.Name")
    or None when unknown.
    """

    def __init__(self, api: str, version: int | None = None, field: str | None = None, reason: str = "") -> None:
        super().__init__(api, version, field, reason)
        self.api = api
        self.version = version
        self.field = field
        self.reason = reason

    def __str__(self) -> str:
        loc = _where(self.api, self.version)
        if self.field is not None:
            loc = f"{loc} field {self.field}"
        return f"cannot encode {loc}: {self.reason}"
