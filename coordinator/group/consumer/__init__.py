"""The consumer group type of KIP-848 (Kafka's ``modern.consumer`` package): the group, its members
and their reconciliation (:mod:`.group`), its manager (:mod:`.manager`: ConsumerGroupHeartbeat,
ConsumerGroupDescribe, the timers), the classic protocol's members inside a consumer group and the
conversions between the two types (:mod:`.classic_members`), and its records (:mod:`.records`)."""
