'use strict'
// KafkaJS against a SASL_PLAINTEXT groupcoord (tests/coordinator/security/test_security_clients.py).
// usage: node kafkajs_sasl.js BROKERS USER PASSWORD GROUP TOPIC
// Prints one JSON line: {"ok": true, "groups": [...], "assignment": {...}} once the consumer joined,
// or {"ok": false, "name": ..., "type": ..., "message": ...} for the first error.
const path = require('path')
const { Kafka, logLevel } = require(path.join(__dirname, '..', '..', 'interop', 'js', 'node_modules', 'kafkajs'))

const [brokers, username, password, groupId, topic] = process.argv.slice(2)
const kafka = new Kafka({
  clientId: 'groupcoord-security-js',
  brokers: brokers.split(','),
  sasl: { mechanism: 'plain', username, password },
  logLevel: logLevel.NOTHING,
  retry: { retries: 0 },
})

const done = (obj, code) => { process.stdout.write(JSON.stringify(obj) + '\n'); process.exit(code) }
const failed = err => done({ ok: false, name: err.name, type: err.type || null, message: err.message }, 0)

async function main () {
  const admin = kafka.admin()
  await admin.connect()
  const { groups } = await admin.listGroups()
  await admin.disconnect()
  const consumer = kafka.consumer({ groupId, sessionTimeout: 6000, heartbeatInterval: 500, retry: { retries: 0 } })
  consumer.on(consumer.events.CRASH, ({ payload }) => failed(payload.error))
  consumer.on(consumer.events.GROUP_JOIN, async ({ payload }) => {
    const assignment = payload.memberAssignment
    await consumer.disconnect()
    done({ ok: true, groups: groups.map(g => g.groupId), assignment }, 0)
  })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic] })
  await consumer.run({ eachMessage: async () => {} })
}

setTimeout(() => done({ ok: false, name: 'timeout', type: null, message: 'no outcome in 20 s' }, 1), 20000).unref()
main().catch(failed)
