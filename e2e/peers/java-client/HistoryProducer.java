import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java client's producer in the replication history checker (e2e/cluster/history.py).
 *
 * <p>Writes unique values {@code TAG:PRODUCER:SEQ(9 digits):xxx…} (VALUE_BYTES long) at RATE
 * records per second, record SEQ to partition SEQ % PARTITIONS, with the client's DEFAULT
 * idempotence settings (enable.idempotence=true, acks=all: neither is set here). Only the
 * fault-tolerance knobs the librdkafka producers of the checker tune are set, to the same
 * values, so both clients face the same faults the same way.
 *
 * <p>Protocol with the harness:
 *
 * <ul>
 *   <li>stdout: one line per acknowledged record, {@code PARTITION OFFSET VALUE} (offset -1 if
 *       the client reported none);
 *   <li>stderr: {@code ready idempotence=B acks=A} once the producer exists (its effective
 *       settings); {@code failed PARTITION SEQ ExceptionClass: message} per record whose delivery
 *       failed; {@code fatal ExceptionClass: message} when the producer refuses a send (a fatal
 *       error: it is closed and a fresh one keeps the load up); at the end {@code summary sent N
 *       acked N failed N undelivered N}; anything else is the client's own WARN/ERROR log;
 *   <li>stdin: a line {@code stop SECONDS}, end of input, or SIGTERM stops producing; what was
 *       sent is then flushed for up to SECONDS (default 120); records still unacknowledged
 *       after that are failed by a forced close and counted as undelivered. Exit status 0.
 * </ul>
 *
 * <p>Usage: java HistoryProducer BOOTSTRAP TOPIC TAG PRODUCER RATE PARTITIONS [VALUE_BYTES [CONFIG [TUNING]]]
 *
 * <p>CONFIG: a properties file of connection settings (security.protocol, ssl.*) applied
 * first; the settings above still win, so both clients keep facing faults the same way.
 *
 * <p>TUNING: {@code tuned} (the default) or {@code defaults}, which leaves out the
 * fault-tolerance settings: the client's own defaults, for a harness that times them.
 */
public final class HistoryProducer {
  private static final PrintStream ACKS =
      new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.US_ASCII);

  private static volatile boolean stopping = false;
  private static volatile long flushSeconds = 120;
  /** System.nanoTime() after which a failed delivery is a record the forced close dropped. */
  private static volatile long forcedAfter = Long.MAX_VALUE;

  private static final AtomicLong acked = new AtomicLong();
  private static final AtomicLong failed = new AtomicLong();
  private static final AtomicLong undelivered = new AtomicLong();

  public static void main(String[] args) throws Exception {
    if (args.length < 6) {
      System.err.println("usage: HistoryProducer BOOTSTRAP TOPIC TAG PRODUCER RATE PARTITIONS [VALUE_BYTES [CONFIG]]");
      System.exit(2);
    }
    String bootstrap = args[0];
    String topic = args[1];
    String tag = args[2];
    int producerIndex = Integer.parseInt(args[3]);
    double perSecond = Double.parseDouble(args[4]);
    int partitions = Integer.parseInt(args[5]);
    int valueBytes = args.length > 6 ? Integer.parseInt(args[6]) : 100;
    String config = args.length > 7 && !args[7].isEmpty() ? args[7] : null;
    boolean tuned = args.length <= 8 || !args[8].equals("defaults");

    Properties props = new Properties();
    if (config != null) {
      try (InputStream in = new FileInputStream(config)) {
        props.load(in);
      }
    }
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    // The librdkafka producers' fault-tolerance settings (history.py Workload.config), by their
    // Java names: message.timeout.ms -> delivery.timeout.ms, topic.metadata.refresh.interval.ms
    // -> metadata.max.age.ms. request.timeout.ms bounds one request (the Java client has no
    // separate socket.timeout.ms): a SIGSTOPped leader's in-flight requests fail after 5 s.
    if (tuned) {
      props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
      props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "300000");
      props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
      props.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, "50");
      props.put(ProducerConfig.RETRY_BACKOFF_MAX_MS_CONFIG, "500");
      props.put(ProducerConfig.RECONNECT_BACKOFF_MS_CONFIG, "50");
      props.put(ProducerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "500");
      props.put(ProducerConfig.SOCKET_CONNECTION_SETUP_TIMEOUT_MS_CONFIG, "5000");
      props.put(ProducerConfig.METADATA_MAX_AGE_CONFIG, "10000");
    }

    ProducerConfig effective = new ProducerConfig(props);
    System.err.println("ready idempotence=" + effective.getBoolean(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG)
        + " acks=" + effective.getString(ProducerConfig.ACKS_CONFIG));

    CountDownLatch done = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      // SIGTERM: stop producing, let main flush and report, then let the JVM exit.
      stopping = true;
      try {
        done.await(flushSeconds + 30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }, "history-producer-shutdown"));
    Thread stdin = new Thread(HistoryProducer::readStdin, "history-producer-stdin");
    stdin.setDaemon(true);
    stdin.start();

    long sent = 0;
    try {
      KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props);
      long started = System.nanoTime();
      long seq = 0;
      while (!stopping) {
        long due = (long) ((System.nanoTime() - started) / 1e9 * perSecond);
        while (seq < due && !stopping) {
          int partition = (int) (seq % partitions);
          byte[] value = value(tag, producerIndex, seq, valueBytes);
          try {
            producer.send(new ProducerRecord<>(topic, partition, null, value), callback(partition, seq, value));
          } catch (RuntimeException e) {
            // Raised by send() itself: the producer is in a fatal state (or closing). The record
            // was not sent; a fresh producer takes over, as the librdkafka producers do.
            System.err.println("fatal " + describe(e));
            producer.close(Duration.ofSeconds(5));
            producer = new KafkaProducer<>(props);
            continue;
          }
          seq++;
          sent++;
        }
        Thread.sleep(5);
      }
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(flushSeconds);
      forcedAfter = deadline;
      // close(timeout) sends what is pending for up to the timeout, then fails the rest; every
      // callback has run when it returns.
      producer.close(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
    } finally {
      System.err.println("summary sent " + sent + " acked " + acked.get() + " failed " + failed.get()
          + " undelivered " + undelivered.get());
      System.err.flush();
      ACKS.flush();
      done.countDown();
    }
  }

  private static Callback callback(int partition, long seq, byte[] value) {
    return (metadata, error) -> {
      if (error != null) {
        if (System.nanoTime() >= forcedAfter) {
          undelivered.incrementAndGet();
        } else {
          failed.incrementAndGet();
          System.err.println("failed " + partition + " " + seq + " " + describe(error));
        }
        return;
      }
      long offset = metadata.hasOffset() ? metadata.offset() : -1;
      acked.incrementAndGet();
      ACKS.println(metadata.partition() + " " + offset + " " + new String(value, StandardCharsets.US_ASCII));
    };
  }

  static byte[] value(String tag, int producer, long seq, int valueBytes) {
    StringBuilder value = new StringBuilder(valueBytes);
    value.append(tag).append(':').append(producer).append(':').append(String.format("%09d", seq)).append(':');
    while (value.length() < valueBytes) {
      value.append('x');
    }
    return value.toString().getBytes(StandardCharsets.US_ASCII);
  }

  private static String describe(Throwable error) {
    String message = String.valueOf(error.getMessage()).replace('\n', ' ');
    return error.getClass().getSimpleName() + ": " + message;
  }

  /** `stop SECONDS` or end of input stops producing (the harness died: do not linger). */
  private static void readStdin() {
    try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII))) {
      String line;
      while ((line = in.readLine()) != null) {
        String[] words = line.trim().split("\\s+");
        if (words.length == 2 && words[0].equals("stop")) {
          flushSeconds = Long.parseLong(words[1]);
          break;
        }
      }
    } catch (Exception e) {
      System.err.println("stdin: " + describe(e));
    }
    stopping = true;
  }
}
