"""The share group type of KIP-932 ("Queues for Kafka", Kafka's ``modern.share`` package), its group
coordinator side: the group and its members (:mod:`.group`), its manager (:mod:`.manager`:
ShareGroupHeartbeat, ShareGroupDescribe, the session timers, the share-partition state metadata;
:mod:`.offsets`: DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets),
Kafka's ``simple`` assignor (:mod:`.assignor`), its records (:mod:`.records`), its group configs
(:mod:`.configs`) and the admin API's view (:mod:`.view`)."""
