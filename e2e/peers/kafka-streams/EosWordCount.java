import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.Stores;

/**
 * A word count with processing.guarantee=exactly_once_v2: lines from INPUT are split into
 * words, re-keyed by word (a repartition topic), counted in a state store (a changelog
 * topic) and each new count written to OUTPUT. Every step is one transaction per commit:
 * the output and changelog records and the consumed offsets together.
 *
 *   java -cp LIBS:CLASSES EosWordCount BOOTSTRAP INPUT OUTPUT APPLICATION_ID STATE_DIR RF
 *
 * Prints "STATE <state>" on each change of the application's state; exits 0 on SIGTERM after
 * a clean close, 1 when the application fails.
 */
public final class EosWordCount {
    public static void main(String[] args) throws InterruptedException {
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[3]);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, Integer.parseInt(args[5]));
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 2);
        props.put(StreamsConfig.producerPrefix("transaction.timeout.ms"), 10000);
        props.put(StreamsConfig.consumerPrefix("session.timeout.ms"), 10000);

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(args[1], Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split(" ")))
            .groupBy((key, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
            .count(Materialized.<String, Long>as(Stores.inMemoryKeyValueStore("counts"))
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .toStream()
            .to(args[2], Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch done = new CountDownLatch(1);
        int[] exit = {0};
        streams.setStateListener((now, before) -> {
            System.out.println("STATE " + now);
            System.out.flush();
            if (now == KafkaStreams.State.ERROR) {
                exit[0] = 1;
                done.countDown();
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close();
            done.countDown();
        }));
        streams.start();
        done.await();
        streams.close();
        System.exit(exit[0]);
    }
}
