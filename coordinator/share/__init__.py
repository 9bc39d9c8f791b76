"""Share groups (KIP-932, "queues for Kafka").

:mod:`.partition`: the share-partition leader's state machine (Kafka's ``SharePartition``), sans-I/O.
"""
