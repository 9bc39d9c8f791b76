'use strict'
// KafkaJS, driven by groupcoord's interop tests (tests/interop/clients.py: KafkaJSHost).
//
// stdin:  one JSON command a line: {"id": n, "op": "...", ...args}
// stdout: one JSON object a line, either a reply {"id": n, "ok": true, ...} / {"id": n, "ok": false, "error": "..."}
//         or an event {"event": "...", ...}. KafkaJS's own logs go to stderr.
//
// ops: init {brokers}, consumer.start {name, groupId, topics, sessionTimeout, heartbeatInterval,
//      rebalanceTimeout, maxWaitTimeInMs}, consumer.stop {name}, produce {messages: [{topic, partition, value}]},
//      fetchOffsets {groupId, topics}, setOffsets {groupId, topic, partitions: [{partition, offset}]},
//      describeGroups {groupIds}, listGroups, deleteGroups {groupIds}, listTopics, shutdown
//      (a consumer topic starting with ^ is a regular expression, as in librdkafka)
// events: group_join {name, memberId, leaderId, isLeader, groupProtocol, assignment: {topic: [partitions]}},
//         message {name, topic, partition, offset, value} (sent after its offset was committed),
//         crash {name, error}, stopped {name}
const readline = require('readline')
const { Kafka, logLevel, AssignerProtocol } = require('kafkajs')

const out = obj => process.stdout.write(JSON.stringify(obj) + '\n')
const logCreator = () => ({ namespace, level, label, log }) => {
  process.stderr.write(`[kafkajs ${label}] ${namespace}: ${log.message} ${JSON.stringify(log)}\n`)
}

let kafka = null
let producer = null
let admin = null
const consumers = new Map()

async function getProducer () {
  if (!producer) {
    producer = kafka.producer({ allowAutoTopicCreation: false })
    await producer.connect()
  }
  return producer
}

async function getAdmin () {
  if (!admin) {
    admin = kafka.admin()
    await admin.connect()
  }
  return admin
}

const ops = {
  async init ({ brokers, clientId }) {
    kafka = new Kafka({
      clientId: clientId || 'groupcoord-interop-js',
      brokers,
      logLevel: logLevel.WARN,
      logCreator,
      retry: { initialRetryTime: 100, retries: 10 },
    })
    return {}
  },

  async 'consumer.start' ({ name, groupId, topics, sessionTimeout = 6000, heartbeatInterval = 500,
    rebalanceTimeout = 10000, maxWaitTimeInMs = 200 }) {
    const consumer = kafka.consumer({ groupId, sessionTimeout, heartbeatInterval, rebalanceTimeout, maxWaitTimeInMs })
    const { GROUP_JOIN, CRASH } = consumer.events
    consumer.on(GROUP_JOIN, ({ payload }) => {
      out({
        event: 'group_join',
        name,
        memberId: payload.memberId,
        leaderId: payload.leaderId,
        isLeader: payload.isLeader,
        groupProtocol: payload.groupProtocol,
        assignment: payload.memberAssignment,
      })
    })
    consumer.on(CRASH, ({ payload }) => out({ event: 'crash', name, error: String(payload.error) }))
    await consumer.connect()
    const subscribed = topics.map(t => (t.startsWith('^') ? new RegExp(t) : t))
    await consumer.subscribe({ topics: subscribed, fromBeginning: true })
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ topic, partition, message }) => {
        const next = (BigInt(message.offset) + 1n).toString()
        await consumer.commitOffsets([{ topic, partition, offset: next }])
        out({ event: 'message', name, topic, partition, offset: Number(message.offset),
          value: message.value.toString() })
      },
    })
    consumers.set(name, consumer)
    return {}
  },

  async 'consumer.stop' ({ name }) {
    const consumer = consumers.get(name)
    if (!consumer) throw new Error(`no consumer ${name}`)
    consumers.delete(name)
    await consumer.disconnect()
    out({ event: 'stopped', name })
    return {}
  },

  async produce ({ messages }) {
    // one request per call; offsets: base offset of each (topic, partition) batch + index in it
    const p = await getProducer()
    const byTopic = new Map()
    for (const m of messages) {
      if (!byTopic.has(m.topic)) byTopic.set(m.topic, [])
      byTopic.get(m.topic).push(m)
    }
    const topicMessages = [...byTopic].map(([topic, ms]) => ({
      topic,
      messages: ms.map(m => ({ value: m.value, partition: m.partition })),
    }))
    const result = await p.sendBatch({ topicMessages, acks: -1 })
    const base = new Map(result.map(r => [`${r.topicName}/${r.partition}`, Number(r.baseOffset)]))
    const seen = new Map()
    const offsets = messages.map(m => {
      const key = `${m.topic}/${m.partition}`
      const i = seen.get(key) || 0
      seen.set(key, i + 1)
      return [m.topic, m.partition, base.get(key) + i]
    })
    return { offsets }
  },

  async listTopics () {
    return { topics: await (await getAdmin()).listTopics() }
  },

  async fetchOffsets ({ groupId, topics }) {
    const a = await getAdmin()
    const res = await a.fetchOffsets({ groupId, topics })
    return {
      offsets: res.flatMap(({ topic, partitions }) =>
        partitions.map(({ partition, offset }) => [topic, partition, Number(offset)])),
    }
  },

  async setOffsets ({ groupId, topic, partitions }) {
    const a = await getAdmin()
    await a.setOffsets({ groupId, topic, partitions: partitions.map(p => ({ ...p, offset: String(p.offset) })) })
    return {}
  },

  async describeGroups ({ groupIds }) {
    // member metadata and assignments decoded with KafkaJS's own consumer-protocol decoders
    const a = await getAdmin()
    const { groups } = await a.describeGroups(groupIds)
    return {
      groups: groups.map(g => ({
        groupId: g.groupId,
        errorCode: g.errorCode,
        state: g.state,
        protocolType: g.protocolType,
        protocol: g.protocol,
        members: g.members.map(m => {
          const metadata = m.memberMetadata.length ? AssignerProtocol.MemberMetadata.decode(m.memberMetadata) : null
          const assignment = m.memberAssignment.length
            ? AssignerProtocol.MemberAssignment.decode(m.memberAssignment) : null
          return {
            memberId: m.memberId,
            clientId: m.clientId,
            clientHost: m.clientHost,
            topics: metadata && metadata.topics,
            assignment: assignment && assignment.assignment,
          }
        }),
      })),
    }
  },

  async listGroups () {
    const a = await getAdmin()
    return await a.listGroups()
  },

  async deleteGroups ({ groupIds }) {
    const a = await getAdmin()
    try {
      return { results: await a.deleteGroups(groupIds) }
    } catch (e) {
      // KafkaJSDeleteGroupsError carries the per-group results
      if (e.groups) return { results: e.groups.map(g => ({ groupId: g.groupId, errorCode: g.errorCode,
        error: g.error && g.error.type })) }
      throw e
    }
  },

  async shutdown () {
    for (const [name, consumer] of consumers) {
      consumers.delete(name)
      await consumer.disconnect().catch(() => {})
    }
    if (producer) await producer.disconnect().catch(() => {})
    if (admin) await admin.disconnect().catch(() => {})
    return {}
  },
}

const rl = readline.createInterface({ input: process.stdin })
rl.on('line', line => {
  if (!line.trim()) return
  let cmd
  try {
    cmd = JSON.parse(line)
  } catch (e) {
    out({ event: 'bad_command', line, error: String(e) })
    return
  }
  const op = ops[cmd.op]
  if (!op) {
    out({ id: cmd.id, ok: false, error: `unknown op ${cmd.op}` })
    return
  }
  op(cmd).then(
    res => {
      out({ id: cmd.id, ok: true, ...res })
      if (cmd.op === 'shutdown') process.exit(0)
    },
    err => out({ id: cmd.id, ok: false, error: String((err && err.stack) || err) })
  )
})
rl.on('close', () => {
  ops.shutdown().finally(() => process.exit(0))
})
