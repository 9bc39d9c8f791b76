"""The classic group type (Kafka's ``classic`` package): the group and its state machine
(:mod:`.group`), the classic protocol's requests (:mod:`.requests`), its manager (:mod:`.manager`:
JoinGroup, SyncGroup, Heartbeat, LeaveGroup, DescribeGroups, the timers) and its record
(:mod:`.records`)."""
