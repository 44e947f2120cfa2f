// A kafkajs consumer group of 3 members: prints "stable" once the 6 partitions are
// assigned, then consumes until N distinct messages arrived; prints "ok ..." if every
// message came exactly once, else "fail ...". Usage: node kafkajs_group.js BOOTSTRAP TOPIC GROUP N
const { Kafka, logLevel } = require("kafkajs");
const [bootstrap, topic, groupId, total] = process.argv.slice(2);
const kafka = new Kafka({ brokers: [bootstrap], logLevel: logLevel.NOTHING, clientId: "kafkajs-groups" });
const members = [0, 1, 2].map(() => kafka.consumer({ groupId, heartbeatInterval: 500 }));
const assigned = new Map();
const seen = [];
const deadline = setTimeout(() => { console.log(`fail timeout after ${seen.length}`); process.exit(1); }, 120000);

async function main() {
  let announced = false;
  members.forEach((consumer, i) => {
    consumer.on(consumer.events.GROUP_JOIN, (e) => {
      assigned.set(i, (e.payload.memberAssignment[topic] || []).slice());
      const all = [...assigned.values()].flat().sort((a, b) => a - b);
      if (!announced && assigned.size === 3 && all.join(",") === "0,1,2,3,4,5" && [...assigned.values()].every((p) => p.length)) {
        announced = true;
        console.log("stable");
      }
    });
  });
  for (const consumer of members) {
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
  }
  await Promise.all(members.map((consumer) => consumer.run({
    eachMessage: async ({ message }) => {
      seen.push(message.value.toString());
      if (seen.length >= Number(total)) {
        setImmediate(finish);
      }
    },
  })));
}

let finishing = false;
async function finish() {
  if (finishing) return;
  finishing = true;
  await Promise.all(members.map((c) => c.disconnect()));
  clearTimeout(deadline);
  const distinct = new Set(seen).size;
  const ok = distinct === Number(total) && seen.length === Number(total);
  console.log(`${ok ? "ok" : "fail"} ${seen.length} deliveries, ${distinct} distinct, 3 members`);
  process.exit(ok ? 0 : 1);
}

main().catch((error) => { console.log(`fail ${error}`); process.exit(1); });
