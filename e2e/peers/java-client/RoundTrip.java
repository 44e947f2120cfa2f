import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java client's round trip against any Kafka-compatible bootstrap address.
 *
 * <p>Creates a topic (3 partitions, the broker's default replication factor), produces N keyed
 * records with headers and random payloads with the producer's DEFAULT settings (so idempotent,
 * acks=all), reads them back through a consumer group, and checks every record byte for byte:
 * key, value, headers, partition and offset as the producer was told. Then commits and checks
 * the group's committed offsets through the admin client. Exit status 0 only if all holds.
 *
 * <p>Usage: java RoundTrip BOOTSTRAP [MESSAGES]
 */
public final class RoundTrip {
  private record Sent(byte[] key, byte[] value, byte[] header, int partition, long offset) {}

  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: RoundTrip BOOTSTRAP [MESSAGES]");
      System.exit(2);
    }
    String bootstrap = args[0];
    int messages = args.length > 1 ? Integer.parseInt(args[1]) : 1000;
    String run = UUID.randomUUID().toString().substring(0, 8);
    String topic = "java-roundtrip-" + run;
    String group = "java-roundtrip-group-" + run;

    Properties common = new Properties();
    common.put("bootstrap.servers", bootstrap);

    try (Admin admin = Admin.create(common)) {
      try {
        admin.createTopics(List.of(new NewTopic(topic, Optional.of(3), Optional.empty())))
            .all().get();
      } catch (ExecutionException e) {
        if (!(e.getCause() instanceof TopicExistsException)) throw e;
      }
    }

    // Produce with the client's defaults: enable.idempotence=true, acks=all.
    Random random = new Random(42);
    List<Sent> sent = new ArrayList<>();
    Properties producerProps = new Properties();
    producerProps.putAll(common);
    producerProps.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
    producerProps.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerProps)) {
      List<Future<RecordMetadata>> futures = new ArrayList<>();
      List<byte[][]> payloads = new ArrayList<>();
      for (int i = 0; i < messages; i++) {
        byte[] key = ("key-" + (i % 17)).getBytes(StandardCharsets.UTF_8);
        byte[] value = new byte[random.nextInt(2048)];
        random.nextBytes(value);
        byte[] header = ("h-" + i).getBytes(StandardCharsets.UTF_8);
        ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(topic, key, value);
        record.headers().add("seq", header);
        futures.add(producer.send(record));
        payloads.add(new byte[][] {key, value, header});
      }
      producer.flush();
      for (int i = 0; i < messages; i++) {
        RecordMetadata md = futures.get(i).get();
        byte[][] p = payloads.get(i);
        sent.add(new Sent(p[0], p[1], p[2], md.partition(), md.offset()));
      }
    }
    Map<String, Sent> expected = new HashMap<>();
    Map<TopicPartition, Long> endOffsets = new HashMap<>();
    for (Sent s : sent) {
      expected.put(s.partition + "/" + s.offset, s);
      endOffsets.merge(new TopicPartition(topic, s.partition), s.offset + 1, Math::max);
    }
    if (expected.size() != messages) fail("producer returned duplicate (partition, offset) pairs");

    Properties consumerProps = new Properties();
    consumerProps.putAll(common);
    consumerProps.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    consumerProps.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    consumerProps.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    consumerProps.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    consumerProps.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    int received = 0;
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProps)) {
      consumer.subscribe(List.of(topic));
      long deadline = System.currentTimeMillis() + 60_000;
      while (received < messages) {
        if (System.currentTimeMillis() > deadline) {
          fail("timed out: received " + received + " of " + messages + " records");
        }
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
          Sent s = expected.remove(r.partition() + "/" + r.offset());
          if (s == null) fail("unexpected or duplicate record at " + r.partition() + "/" + r.offset());
          Header h = r.headers().lastHeader("seq");
          if (!Arrays.equals(s.key, r.key())) fail("key differs at " + r.partition() + "/" + r.offset());
          if (!Arrays.equals(s.value, r.value())) fail("value differs at " + r.partition() + "/" + r.offset());
          if (h == null || !Arrays.equals(s.header, h.value())) fail("header differs at " + r.partition() + "/" + r.offset());
          received++;
        }
      }
      Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
      endOffsets.forEach((tp, end) -> commit.put(tp, new OffsetAndMetadata(end)));
      consumer.commitSync(commit);
    }

    try (Admin admin = Admin.create(common)) {
      Map<TopicPartition, OffsetAndMetadata> committed =
          admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
      for (Map.Entry<TopicPartition, Long> e : endOffsets.entrySet()) {
        OffsetAndMetadata c = committed.get(e.getKey());
        if (c == null || c.offset() != e.getValue()) {
          fail("committed offset of " + e.getKey() + " is " + c + ", expected " + e.getValue());
        }
      }
    }
    System.out.println("java-client: " + messages + " records round-tripped byte-identical through "
        + bootstrap + " (topic " + topic + ", group " + group + ", idempotent producer, offsets committed)");
  }

  private static void fail(String why) {
    System.err.println("java-client: FAIL: " + why);
    System.exit(1);
  }
}
