// kafkajs side of the client suite: one JSON job on stdin, one JSON result on stdout (see
// roundtrip.py for the format). Codecs: kafkajs-snappy, lz4js (LZ4 frames, as Kafka
// uses) and @mongodb-js/zstd; gzip is built in.
//
// kafkajs's Consumer only works through a consumer group; consume jobs instead read with
// kafkajs's own cluster and broker objects (Metadata, then Fetch from the leader) and its
// own record decoding, so the bytes are still parsed by the real client library.
'use strict'
const { Kafka, CompressionTypes, CompressionCodecs, logLevel } = require('kafkajs')
const SnappyCodec = require('kafkajs-snappy')
const lz4 = require('lz4js')
const zstd = require('@mongodb-js/zstd')

CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec
CompressionCodecs[CompressionTypes.LZ4] = () => ({
  async compress (encoder) { return Buffer.from(lz4.compress(encoder.buffer)) },
  async decompress (buffer) { return Buffer.from(lz4.decompress(buffer)) }
})
CompressionCodecs[CompressionTypes.ZSTD] = () => ({
  async compress (encoder) { return zstd.compress(encoder.buffer) },
  async decompress (buffer) { return zstd.decompress(buffer) }
})

const CODECS = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4,
  zstd: CompressionTypes.ZSTD
}

const unb64 = text => (text === null ? null : Buffer.from(text, 'base64'))
const b64 = buffer => (buffer === null || buffer === undefined ? null : Buffer.from(buffer).toString('base64'))

function client (job) {
  return new Kafka({
    clientId: 'oxbow-client-suite',
    brokers: [job.bootstrap],
    logLevel: logLevel.ERROR,
    retry: { retries: 2 }
  })
}

async function produce (job) {
  const producer = client(job).producer({
    idempotent: job.idempotent !== false,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: true
  })
  await producer.connect()
  const messages = job.messages.map(m => {
    // kafkajs takes headers as an object; repeated keys as an array of values.
    const headers = {}
    for (const [key, value] of m.headers) {
      const decoded = unb64(value)
      if (key in headers) headers[key] = [].concat(headers[key], [decoded])
      else headers[key] = decoded
    }
    return { partition: 0, key: unb64(m.key), value: unb64(m.value), headers, timestamp: String(m.timestamp) }
  })
  let results
  try {
    const metadata = await producer.send({
      topic: job.topic,
      acks: -1,
      timeout: 30000,
      compression: CODECS[job.compression],
      messages
    })
    const base = Number(metadata[0].baseOffset)
    results = messages.map((_, i) => ({ offset: base + i }))
  } catch (error) {
    const type = error.type || (error.cause && error.cause.type) || error.name
    results = messages.map(() => ({ error: type === 'MESSAGE_TOO_LARGE' ? type : `${type}: ${error.message}` }))
  }
  await producer.disconnect()
  return { results }
}

async function consume (job) {
  const kafka = client(job)
  const createCluster = Object.getOwnPropertySymbols(kafka)
    .find(symbol => symbol.description === 'private:Kafka:createCluster')
  const cluster = kafka[createCluster]({ allowAutoTopicCreation: false })
  await cluster.connect()
  await cluster.addTargetTopic(job.topic)
  const leader = cluster.findTopicPartitionMetadata(job.topic).find(p => p.partitionId === 0).leader
  const broker = await cluster.findBroker({ nodeId: String(leader) })
  const messages = []
  let offset = 0
  const deadline = Date.now() + 60000
  while (messages.length < job.count) {
    if (Date.now() > deadline) throw new Error(`${messages.length} of ${job.count} messages after 60 s`)
    const response = await broker.fetch({
      replicaId: -1,
      maxWaitTime: 500,
      minBytes: 1,
      maxBytes: 8 * 1024 * 1024,
      topics: [{ topic: job.topic, partitions: [{ partition: 0, fetchOffset: String(offset), maxBytes: 2 * 1024 * 1024 }] }]
    })
    const partition = response.responses[0].partitions[0]
    if (partition.errorCode !== 0) throw new Error(`fetch error code ${partition.errorCode}`)
    for (const record of partition.messages) {
      if (Number(record.offset) < offset || record.isControlRecord) continue
      const headers = []
      for (const [key, value] of Object.entries(record.headers || {})) {
        for (const one of Array.isArray(value) ? value : [value]) headers.push([key, b64(one)])
      }
      messages.push({
        offset: Number(record.offset),
        key: b64(record.key),
        value: b64(record.value),
        headers,
        timestamp: Number(record.timestamp),
        create_time: !(record.batchContext && record.batchContext.timestampType === 1)
      })
      offset = Number(record.offset) + 1
    }
  }
  await cluster.disconnect()
  return { messages: messages.slice(0, job.count) }
}

async function main () {
  let input = ''
  for await (const chunk of process.stdin) input += chunk
  const job = JSON.parse(input)
  const result = job.op === 'produce' ? await produce(job) : await consume(job)
  process.stdout.write(JSON.stringify(result))
}

main().catch(error => {
  console.error(error)
  process.exit(1)
})
