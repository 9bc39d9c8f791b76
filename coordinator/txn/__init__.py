"""Kafka's transaction coordinator (``TransactionCoordinator``, ``TransactionStateManager``,
``TransactionMetadata``), sans-I/O: the state of every transactional id, kept in the transaction log
(``__transaction_state``) as Kafka's TransactionLogKey/Value records, and the markers that end a
transaction in every partition it touched, the group coordinator's offsets partitions included.

- :mod:`.state`: the transaction states and one transactional id's metadata, with Kafka's
  transitions (prepare a transition, write it, complete it);
- :mod:`.records`: the transaction log's records;
- :mod:`.coordinator`: the requests (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
  DescribeTransactions, ListTransactions), the markers, the timeouts, loading.
"""
