import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Topic rules on produce as the Java client sees them, against any bootstrap address: prints
 * one "name: observation" line per check, so two brokers (Apache Kafka and Oxbow) compare line
 * by line. Topic names come from RUN, so the same RUN gives the same names on both.
 *
 * <p>A batch of keyed and keyless records to a compacted topic (which records fail, with which
 * exception and message: KIP-467 record errors), a record past message.timestamp.after.max.ms,
 * an lz4 producer to a compression.type=zstd topic (values read back), and topic creations with
 * invalid compression configs.
 *
 * <p>Usage: java ProduceRules BOOTSTRAP RUN
 */
public final class ProduceRules {
  private static final Map<String, String> observations = new TreeMap<>();

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String run = args[1];
    Properties common = new Properties();
    common.put("bootstrap.servers", bootstrap);
    try (Admin admin = Admin.create(common)) {
      String compacted = "java-rules-compacted-" + run;
      observe("create compacted", create(admin, compacted, Map.of("cleanup.policy", "compact")));
      long now = System.currentTimeMillis();
      List<String> mixed = send(bootstrap, compacted, "none",
          new String[][] {{"a", "1"}, {null, "2"}, {"b", "3"}, {null, "4"}}, now);
      for (int i = 0; i < mixed.size(); i++) {
        observe("mixed batch record " + i, mixed.get(i).replace(run, "<run>"));
      }
      observe("keyed batch", String.join(", ",
          send(bootstrap, compacted, "none", new String[][] {{"a", "5"}, {"b", "6"}}, now)));

      String plain = "java-rules-plain-" + run;
      observe("create plain", create(admin, plain, Map.of()));
      String future = send(bootstrap, plain, "none", new String[][] {{"k", "f"}}, now + 2 * 3_600_000L).get(0);
      // The message names the broker's clock: only its shape compares.
      observe("future record", future.replaceAll("[0-9]{6,}", "<n>"));

      String zstd = "java-rules-zstd-" + run;
      observe("create zstd", create(admin, zstd, Map.of("compression.type", "zstd")));
      String[][] values = new String[20][];
      for (int i = 0; i < values.length; i++) {
        values[i] = new String[] {"k" + i, ("value-" + i + " ").repeat(40)};
      }
      observe("lz4 into zstd", String.join(", ", send(bootstrap, zstd, "lz4", values, now)));
      observe("read back", readBack(bootstrap, zstd, values));

      for (String[] bad : new String[][] {{"compression.type", "ZSTD"}, {"compression.zstd.level", "23"},
          {"compression.gzip.level", "0"}, {"message.timestamp.after.max.ms", "-1"}}) {
        observe("create " + bad[0] + "=" + bad[1],
            create(admin, "java-rules-bad-" + run, Map.of(bad[0], bad[1])));
      }
    }
    observations.forEach((k, v) -> System.out.println(k + ": " + v));
  }

  private static void observe(String name, String value) {
    observations.put(name, value);
  }

  private static String create(Admin admin, String topic, Map<String, String> configs) {
    try {
      admin.createTopics(List.of(new NewTopic(topic, Optional.of(1), Optional.empty()).configs(configs)))
          .all().get();
      // Wait until the topic is usable (its leader known to the admin client).
      for (int i = 0; i < 100; i++) {
        try {
          admin.describeTopics(List.of(topic)).allTopicNames().get();
          break;
        } catch (ExecutionException e) {
          Thread.sleep(100);
        }
      }
      return "created";
    } catch (Exception e) {
      Throwable cause = e instanceof ExecutionException ? e.getCause() : e;
      return cause.getClass().getSimpleName() + ": " + cause.getMessage();
    }
  }

  /** Sends the records as one batch (linger) and returns each record's outcome. */
  private static List<String> send(String bootstrap, String topic, String compression, String[][] records,
      long timestamp) throws InterruptedException {
    Properties props = new Properties();
    props.put("bootstrap.servers", bootstrap);
    props.put("linger.ms", "200");
    props.put("compression.type", compression);
    props.put("retries", "0");
    props.put("enable.idempotence", "false");
    List<Future<RecordMetadata>> futures = new ArrayList<>();
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer())) {
      for (String[] r : records) {
        byte[] key = r[0] == null ? null : r[0].getBytes(StandardCharsets.UTF_8);
        futures.add(producer.send(new ProducerRecord<>(topic, 0, timestamp, key,
            r[1].getBytes(StandardCharsets.UTF_8))));
      }
      producer.flush();
    }
    List<String> outcomes = new ArrayList<>();
    for (Future<RecordMetadata> f : futures) {
      try {
        outcomes.add("offset " + f.get().offset());
      } catch (ExecutionException e) {
        outcomes.add(e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage());
      }
    }
    return outcomes;
  }

  private static String readBack(String bootstrap, String topic, String[][] values) {
    Properties props = new Properties();
    props.put("bootstrap.servers", bootstrap);
    try (KafkaConsumer<byte[], byte[]> consumer =
        new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      TopicPartition tp = new TopicPartition(topic, 0);
      consumer.assign(List.of(tp));
      consumer.seekToBeginning(List.of(tp));
      List<ConsumerRecord<byte[], byte[]>> got = new ArrayList<>();
      long deadline = System.currentTimeMillis() + 30_000;
      while (got.size() < values.length && System.currentTimeMillis() < deadline) {
        consumer.poll(Duration.ofMillis(200)).forEach(got::add);
      }
      if (got.size() != values.length) {
        return got.size() + " of " + values.length + " records";
      }
      for (int i = 0; i < values.length; i++) {
        if (!new String(got.get(i).key(), StandardCharsets.UTF_8).equals(values[i][0])
            || !new String(got.get(i).value(), StandardCharsets.UTF_8).equals(values[i][1])) {
          return "record " + i + " differs";
        }
      }
      return values.length + " records byte-identical";
    }
  }
}
