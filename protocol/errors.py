"""Kafka protocol error codes and the exceptions raised by our codecs.

Two unrelated families live here:

* :class:`ErrorCode` / :class:`KafkaError` -- the *wire* errors, i.e. the
  ``ErrorCode`` int16 fields that Kafka puts into responses.  The table mirrors
  ``org.apache.kafka.common.protocol.Errors`` of Apache Kafka trunk: same
  names, same codes, ``retriable`` true exactly where Kafka's exception class
  extends ``RetriableException`` (directly or through ``InvalidMetadataException``
  / ``RefreshRetriableException``), and ``exception_name`` is the simple name of
  the Java exception class.  ``message`` is Kafka's default message of the error
  (``Errors.message()``, 4.3), which responses carry in their ErrorMessage fields
  where Kafka sends it.  Codes 134 and 135 arrived with KIP-1331 (Kafka 4.4).

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
    * ``message`` -- Kafka's default message of the error (``""`` for NONE);
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
    UNKNOWN_SERVER_ERROR = (-1, False, "UnknownServerException", "The server experienced an unexpected error when processing the request.")
    NONE = (0, False, None, "")
    OFFSET_OUT_OF_RANGE = (1, False, "OffsetOutOfRangeException", "The requested offset is not within the range of offsets maintained by the server.")
    CORRUPT_MESSAGE = (2, True, "CorruptRecordException", "This message has failed its CRC checksum, exceeds the valid size, has a null key for a compacted topic, or is otherwise corrupt.")
    UNKNOWN_TOPIC_OR_PARTITION = (3, True, "UnknownTopicOrPartitionException", "This server does not host this topic-partition.")
    INVALID_FETCH_SIZE = (4, False, "InvalidFetchSizeException", "The requested fetch size is invalid.")
    LEADER_NOT_AVAILABLE = (5, True, "LeaderNotAvailableException", "There is no leader for this topic-partition as we are in the middle of a leadership election.")
    NOT_LEADER_OR_FOLLOWER = (6, True, "NotLeaderOrFollowerException", "For requests intended only for the leader, this error indicates that the broker is not the current leader. For requests intended for any replica, this error indicates that the broker is not a replica of the topic partition.")
    REQUEST_TIMED_OUT = (7, True, "TimeoutException", "The request timed out.")
    BROKER_NOT_AVAILABLE = (8, False, "BrokerNotAvailableException", "The broker is not available.")
    REPLICA_NOT_AVAILABLE = (9, True, "ReplicaNotAvailableException", "The replica is not available for the requested topic-partition. Produce/Fetch requests and other requests intended only for the leader or follower return NOT_LEADER_OR_FOLLOWER if the broker is not a replica of the topic-partition.")
    MESSAGE_TOO_LARGE = (10, False, "RecordTooLargeException", "The request included a message larger than the max message size the server will accept.")
    STALE_CONTROLLER_EPOCH = (11, False, "ControllerMovedException", "The controller moved to another broker.")
    OFFSET_METADATA_TOO_LARGE = (12, False, "OffsetMetadataTooLarge", "The metadata field of the offset request was too large.")
    NETWORK_EXCEPTION = (13, True, "NetworkException", "The server disconnected before a response was received.")
    COORDINATOR_LOAD_IN_PROGRESS = (14, True, "CoordinatorLoadInProgressException", "The coordinator is loading and hence can't process requests.")
    COORDINATOR_NOT_AVAILABLE = (15, True, "CoordinatorNotAvailableException", "The coordinator is not available.")
    NOT_COORDINATOR = (16, True, "NotCoordinatorException", "This is not the correct coordinator.")
    INVALID_TOPIC_EXCEPTION = (17, False, "InvalidTopicException", "The request attempted to perform an operation on an invalid topic.")
    RECORD_LIST_TOO_LARGE = (18, False, "RecordBatchTooLargeException", "The request included message batch larger than the configured segment size on the server.")
    NOT_ENOUGH_REPLICAS = (19, True, "NotEnoughReplicasException", "Messages are rejected since there are fewer in-sync replicas than required.")
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = (20, True, "NotEnoughReplicasAfterAppendException", "Messages are written to the log, but to fewer in-sync replicas than required.")
    INVALID_REQUIRED_ACKS = (21, False, "InvalidRequiredAcksException", "Produce request specified an invalid value for required acks.")
    ILLEGAL_GENERATION = (22, False, "IllegalGenerationException", "Specified group generation id is not valid.")
    INCONSISTENT_GROUP_PROTOCOL = (23, False, "InconsistentGroupProtocolException", "The group member's supported protocols are incompatible with those of existing members or first group member tried to join with empty protocol type or empty protocol list.")
    INVALID_GROUP_ID = (24, False, "InvalidGroupIdException", "The group id is invalid.")
    UNKNOWN_MEMBER_ID = (25, False, "UnknownMemberIdException", "The coordinator is not aware of this member.")
    INVALID_SESSION_TIMEOUT = (26, False, "InvalidSessionTimeoutException", "The session timeout is not within the range allowed by the broker (as configured by group.min.session.timeout.ms and group.max.session.timeout.ms).")
    REBALANCE_IN_PROGRESS = (27, False, "RebalanceInProgressException", "The group is rebalancing, so a rejoin is needed.")
    INVALID_COMMIT_OFFSET_SIZE = (28, False, "InvalidCommitOffsetSizeException", "The committing offset data size is not valid.")
    TOPIC_AUTHORIZATION_FAILED = (29, False, "TopicAuthorizationException", "Topic authorization failed.")
    GROUP_AUTHORIZATION_FAILED = (30, False, "GroupAuthorizationException", "Group authorization failed.")
    CLUSTER_AUTHORIZATION_FAILED = (31, False, "ClusterAuthorizationException", "Cluster authorization failed.")
    INVALID_TIMESTAMP = (32, False, "InvalidTimestampException", "The timestamp of the message is out of acceptable range.")
    UNSUPPORTED_SASL_MECHANISM = (33, False, "UnsupportedSaslMechanismException", "The broker does not support the requested SASL mechanism.")
    ILLEGAL_SASL_STATE = (34, False, "IllegalSaslStateException", "Request is not valid given the current SASL state.")
    UNSUPPORTED_VERSION = (35, False, "UnsupportedVersionException", "The version of API is not supported.")
    TOPIC_ALREADY_EXISTS = (36, False, "TopicExistsException", "Topic with this name already exists.")
    INVALID_PARTITIONS = (37, False, "InvalidPartitionsException", "Number of partitions is below 1.")
    INVALID_REPLICATION_FACTOR = (38, False, "InvalidReplicationFactorException", "Replication factor is below 1 or larger than the number of available brokers.")
    INVALID_REPLICA_ASSIGNMENT = (39, False, "InvalidReplicaAssignmentException", "Replica assignment is invalid.")
    INVALID_CONFIG = (40, False, "InvalidConfigurationException", "Configuration is invalid.")
    NOT_CONTROLLER = (41, True, "NotControllerException", "This is not the correct controller for this cluster.")
    INVALID_REQUEST = (42, False, "InvalidRequestException", "This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details.")
    UNSUPPORTED_FOR_MESSAGE_FORMAT = (43, False, "UnsupportedForMessageFormatException", "The message format version on the broker does not support the request.")
    POLICY_VIOLATION = (44, False, "PolicyViolationException", "Request parameters do not satisfy the configured policy.")
    OUT_OF_ORDER_SEQUENCE_NUMBER = (45, False, "OutOfOrderSequenceException", "The broker received an out of order sequence number.")
    DUPLICATE_SEQUENCE_NUMBER = (46, False, "DuplicateSequenceException", "The broker received a duplicate sequence number.")
    INVALID_PRODUCER_EPOCH = (47, False, "InvalidProducerEpochException", "Producer attempted to produce with an old epoch.")
    INVALID_TXN_STATE = (48, False, "InvalidTxnStateException", "The producer attempted a transactional operation in an invalid state.")
    INVALID_PRODUCER_ID_MAPPING = (49, False, "InvalidPidMappingException", "The producer attempted to use a producer id which is not currently assigned to its transactional id.")
    INVALID_TRANSACTION_TIMEOUT = (50, False, "InvalidTxnTimeoutException", "The transaction timeout is larger than the maximum value allowed by the broker (as configured by transaction.max.timeout.ms).")
    CONCURRENT_TRANSACTIONS = (51, True, "ConcurrentTransactionsException", "The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing.")
    TRANSACTION_COORDINATOR_FENCED = (52, False, "TransactionCoordinatorFencedException", "Indicates that the transaction coordinator sending a WriteTxnMarker is no longer the current coordinator for a given producer.")
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = (53, False, "TransactionalIdAuthorizationException", "Transactional Id authorization failed.")
    SECURITY_DISABLED = (54, False, "SecurityDisabledException", "Security features are disabled.")
    OPERATION_NOT_ATTEMPTED = (55, False, "OperationNotAttemptedException", "The broker did not attempt to execute this operation. This may happen for batched RPCs where some operations in the batch failed, causing the broker to respond without trying the rest.")
    KAFKA_STORAGE_ERROR = (56, True, "KafkaStorageException", "Disk error when trying to access log file on the disk.")
    LOG_DIR_NOT_FOUND = (57, False, "LogDirNotFoundException", "The user-specified log directory is not found in the broker config.")
    SASL_AUTHENTICATION_FAILED = (58, False, "SaslAuthenticationException", "SASL Authentication failed.")
    UNKNOWN_PRODUCER_ID = (59, False, "UnknownProducerIdException", "This exception is raised by the broker if it could not locate the producer metadata associated with the producerId in question. This could happen if, for instance, the producer's records were deleted because their retention time had elapsed. Once the last records of the producerId are removed, the producer's metadata is removed from the broker, and future appends by the producer will return this exception.")
    REASSIGNMENT_IN_PROGRESS = (60, False, "ReassignmentInProgressException", "A partition reassignment is in progress.")
    DELEGATION_TOKEN_AUTH_DISABLED = (61, False, "DelegationTokenDisabledException", "Delegation Token feature is not enabled.")
    DELEGATION_TOKEN_NOT_FOUND = (62, False, "DelegationTokenNotFoundException", "Delegation Token is not found on server.")
    DELEGATION_TOKEN_OWNER_MISMATCH = (63, False, "DelegationTokenOwnerMismatchException", "Specified Principal is not valid Owner/Renewer.")
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = (64, False, "UnsupportedByAuthenticationException", "Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and on delegation token authenticated channels.")
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = (65, False, "DelegationTokenAuthorizationException", "Delegation Token authorization failed.")
    DELEGATION_TOKEN_EXPIRED = (66, False, "DelegationTokenExpiredException", "Delegation Token is expired.")
    INVALID_PRINCIPAL_TYPE = (67, False, "InvalidPrincipalTypeException", "Supplied principalType is not supported.")
    NON_EMPTY_GROUP = (68, False, "GroupNotEmptyException", "The group is not empty.")
    GROUP_ID_NOT_FOUND = (69, False, "GroupIdNotFoundException", "The group id does not exist.")
    FETCH_SESSION_ID_NOT_FOUND = (70, True, "FetchSessionIdNotFoundException", "The fetch session ID was not found.")
    INVALID_FETCH_SESSION_EPOCH = (71, True, "InvalidFetchSessionEpochException", "The fetch session epoch is invalid.")
    LISTENER_NOT_FOUND = (72, True, "ListenerNotFoundException", "There is no listener on the leader broker that matches the listener on which metadata request was processed.")
    TOPIC_DELETION_DISABLED = (73, False, "TopicDeletionDisabledException", "Topic deletion is disabled.")
    FENCED_LEADER_EPOCH = (74, True, "FencedLeaderEpochException", "The leader epoch in the request is older than the epoch on the broker.")
    UNKNOWN_LEADER_EPOCH = (75, True, "UnknownLeaderEpochException", "The leader epoch in the request is newer than the epoch on the broker.")
    UNSUPPORTED_COMPRESSION_TYPE = (76, False, "UnsupportedCompressionTypeException", "The requesting client does not support the compression type of given partition.")
    STALE_BROKER_EPOCH = (77, False, "StaleBrokerEpochException", "Broker epoch has changed.")
    OFFSET_NOT_AVAILABLE = (78, True, "OffsetNotAvailableException", "The leader high watermark has not caught up from a recent leader election so the offsets cannot be guaranteed to be monotonically increasing.")
    MEMBER_ID_REQUIRED = (79, False, "MemberIdRequiredException", "The group member needs to have a valid member id before actually entering a consumer group.")
    PREFERRED_LEADER_NOT_AVAILABLE = (80, True, "PreferredLeaderNotAvailableException", "The preferred leader was not available.")
    GROUP_MAX_SIZE_REACHED = (81, False, "GroupMaxSizeReachedException", "The group has reached its maximum size.")
    FENCED_INSTANCE_ID = (82, False, "FencedInstanceIdException", "The broker rejected this static consumer since another consumer with the same group.instance.id has registered with a different member.id.")
    ELIGIBLE_LEADERS_NOT_AVAILABLE = (83, True, "EligibleLeadersNotAvailableException", "Eligible topic partition leaders are not available.")
    ELECTION_NOT_NEEDED = (84, True, "ElectionNotNeededException", "Leader election not needed for topic partition.")
    NO_REASSIGNMENT_IN_PROGRESS = (85, False, "NoReassignmentInProgressException", "No partition reassignment is in progress.")
    GROUP_SUBSCRIBED_TO_TOPIC = (86, False, "GroupSubscribedToTopicException", "Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it.")
    INVALID_RECORD = (87, False, "InvalidRecordException", "This record has failed the validation on broker and hence will be rejected.")
    UNSTABLE_OFFSET_COMMIT = (88, True, "UnstableOffsetCommitException", "There are unstable offsets that need to be cleared.")
    THROTTLING_QUOTA_EXCEEDED = (89, True, "ThrottlingQuotaExceededException", "The throttling quota has been exceeded.")
    PRODUCER_FENCED = (90, False, "ProducerFencedException", "There is a newer producer with the same transactionalId which fences the current one.")
    RESOURCE_NOT_FOUND = (91, False, "ResourceNotFoundException", "A request illegally referred to a resource that does not exist.")
    DUPLICATE_RESOURCE = (92, False, "DuplicateResourceException", "A request illegally referred to the same resource twice.")
    UNACCEPTABLE_CREDENTIAL = (93, False, "UnacceptableCredentialException", "Requested credential would not meet criteria for acceptability.")
    INCONSISTENT_VOTER_SET = (94, False, "InconsistentVoterSetException", "Indicates that the either the sender or recipient of a voter-only request is not one of the expected voters.")
    INVALID_UPDATE_VERSION = (95, False, "InvalidUpdateVersionException", "The given update version was invalid.")
    FEATURE_UPDATE_FAILED = (96, False, "FeatureUpdateFailedException", "Unable to update finalized features due to an unexpected server error.")
    PRINCIPAL_DESERIALIZATION_FAILURE = (97, False, "PrincipalDeserializationException", "Request principal deserialization failed during forwarding. This indicates an internal error on the broker cluster security setup.")
    SNAPSHOT_NOT_FOUND = (98, False, "SnapshotNotFoundException", "Requested snapshot was not found.")
    POSITION_OUT_OF_RANGE = (99, False, "PositionOutOfRangeException", "Requested position is not greater than or equal to zero, and less than the size of the snapshot.")
    UNKNOWN_TOPIC_ID = (100, True, "UnknownTopicIdException", "This server does not host this topic ID.")
    DUPLICATE_BROKER_REGISTRATION = (101, False, "DuplicateBrokerRegistrationException", "This broker ID is already in use.")
    BROKER_ID_NOT_REGISTERED = (102, False, "BrokerIdNotRegisteredException", "The given broker ID was not registered.")
    INCONSISTENT_TOPIC_ID = (103, True, "InconsistentTopicIdException", "The log's topic ID did not match the topic ID in the request.")
    INCONSISTENT_CLUSTER_ID = (104, False, "InconsistentClusterIdException", "The clusterId in the request does not match that found on the server.")
    TRANSACTIONAL_ID_NOT_FOUND = (105, False, "TransactionalIdNotFoundException", "The transactionalId could not be found.")
    FETCH_SESSION_TOPIC_ID_ERROR = (106, True, "FetchSessionTopicIdException", "The fetch session encountered inconsistent topic ID usage.")
    INELIGIBLE_REPLICA = (107, False, "IneligibleReplicaException", "The new ISR contains at least one ineligible replica.")
    NEW_LEADER_ELECTED = (108, False, "NewLeaderElectedException", "The AlterPartition request successfully updated the partition state but the leader has changed.")
    OFFSET_MOVED_TO_TIERED_STORAGE = (109, False, "OffsetMovedToTieredStorageException", "The requested offset is moved to tiered storage.")
    FENCED_MEMBER_EPOCH = (110, False, "FencedMemberEpochException", "The member epoch is fenced by the group coordinator. The member must abandon all its partitions and rejoin.")
    UNRELEASED_INSTANCE_ID = (111, False, "UnreleasedInstanceIdException", "The instance ID is still used by another member in the consumer group. That member must leave first.")
    UNSUPPORTED_ASSIGNOR = (112, False, "UnsupportedAssignorException", "The assignor or its version range is not supported by the consumer group.")
    STALE_MEMBER_EPOCH = (113, False, "StaleMemberEpochException", "The member epoch is stale. The member must retry after receiving its updated member epoch via the ConsumerGroupHeartbeat API.")
    MISMATCHED_ENDPOINT_TYPE = (114, False, "MismatchedEndpointTypeException", "The request was sent to an endpoint of the wrong type.")
    UNSUPPORTED_ENDPOINT_TYPE = (115, False, "UnsupportedEndpointTypeException", "This endpoint type is not supported yet.")
    UNKNOWN_CONTROLLER_ID = (116, False, "UnknownControllerIdException", "This controller ID is not known.")
    UNKNOWN_SUBSCRIPTION_ID = (117, False, "UnknownSubscriptionIdException", "Client sent a push telemetry request with an invalid or outdated subscription ID.")
    TELEMETRY_TOO_LARGE = (118, False, "TelemetryTooLargeException", "Client sent a push telemetry request larger than the maximum size the broker will accept.")
    INVALID_REGISTRATION = (119, False, "InvalidRegistrationException", "The controller has considered the broker registration to be invalid.")
    TRANSACTION_ABORTABLE = (120, False, "TransactionAbortableException", "The server encountered an error with the transaction. The client can abort the transaction to continue using this transactional ID.")
    INVALID_RECORD_STATE = (121, False, "InvalidRecordStateException", "The record state is invalid. The acknowledgement of delivery could not be completed.")
    SHARE_SESSION_NOT_FOUND = (122, True, "ShareSessionNotFoundException", "The share session was not found.")
    INVALID_SHARE_SESSION_EPOCH = (123, True, "InvalidShareSessionEpochException", "The share session epoch is invalid.")
    FENCED_STATE_EPOCH = (124, False, "FencedStateEpochException", "The share coordinator rejected the request because the share-group state epoch did not match.")
    INVALID_VOTER_KEY = (125, False, "InvalidVoterKeyException", "The voter key doesn't match the receiving replica's key.")
    DUPLICATE_VOTER = (126, False, "DuplicateVoterException", "The voter is already part of the set of voters.")
    VOTER_NOT_FOUND = (127, False, "VoterNotFoundException", "The voter is not part of the set of voters.")
    INVALID_REGULAR_EXPRESSION = (128, False, "InvalidRegularExpression", "The regular expression is not valid.")
    REBOOTSTRAP_REQUIRED = (129, False, "RebootstrapRequiredException", "Client metadata is stale. The client should rebootstrap to obtain new metadata.")
    STREAMS_INVALID_TOPOLOGY = (130, False, "StreamsInvalidTopologyException", "The supplied topology is invalid.")
    STREAMS_INVALID_TOPOLOGY_EPOCH = (131, False, "StreamsInvalidTopologyEpochException", "The supplied topology epoch is invalid.")
    STREAMS_TOPOLOGY_FENCED = (132, False, "StreamsTopologyFencedException", "The supplied topology epoch is outdated.")
    SHARE_SESSION_LIMIT_REACHED = (133, True, "ShareSessionLimitReachedException", "The limit of share sessions has been reached.")
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
