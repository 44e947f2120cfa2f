import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * A transactional writer on the Java client, for the history of e2e/cluster/transactions.py:
 * the same transactions as its librdkafka Writer, 3 records to each of 3 partitions (named
 * by number), every fourth aborted on purpose. Against a broker that finalizes
 * transaction.version 2 the client uses it (KIP-890): no AddPartitionsToTxn (the partition
 * leaders add the partitions on Produce), and every EndTxn bumps the producer epoch.
 *
 *   java -cp LIBS:CLASSES TxnWriter BOOTSTRAP TOPIC TRANSACTIONAL_ID
 *
 * Transaction k is named {@code ID-t<k>}; its records' values are {@code NAME-p<partition>-<i>}.
 * Prints to stdout, one line each, flushed:
 *   call WHAT              the client call it is about to make (a stall's report names it)
 *   session N              the Nth producer's initTransactions returned
 *   committed|aborted|unknown NAME   a transaction's outcome
 * and to stderr why an outcome was not the planned one. Runs until stdin closes or SIGTERM,
 * then ends the transaction under way, closes the producer and exits 0.
 *
 * Errors are handled as the KafkaProducer documentation says: ProducerFencedException,
 * OutOfOrderSequenceException and AuthorizationException are fatal (close, a new producer
 * with the same transactional.id; the outcome is unknown); another KafkaException is
 * abortable (abortTransaction: aborted if that returns); a TimeoutException of
 * commitTransaction or abortTransaction says nothing of the outcome and only the same call
 * may follow: retried once, then unknown and a new producer.
 */
public final class TxnWriter {
    private static final int PARTITIONS = 3;
    private static final int RECORDS_PER_PARTITION = 3;
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(5);

    private enum Outcome { COMMITTED, ABORTED, UNKNOWN }

    private final String bootstrap;
    private final String topic;
    private final String transactionalId;
    private volatile boolean stopping;
    private int sessions;

    private TxnWriter(String bootstrap, String topic, String transactionalId) {
        this.bootstrap = bootstrap;
        this.topic = topic;
        this.transactionalId = transactionalId;
    }

    public static void main(String[] args) throws InterruptedException {
        if (args.length != 3) {
            System.err.println("usage: TxnWriter BOOTSTRAP TOPIC TRANSACTIONAL_ID");
            System.exit(2);
        }
        TxnWriter writer = new TxnWriter(args[0], args[1], args[2]);
        CountDownLatch done = new CountDownLatch(1);
        Thread stdin = new Thread(writer::stopAtEndOfInput, "stdin");
        stdin.setDaemon(true);
        stdin.start();
        // SIGTERM: the JVM exits once this hook returns, so it waits for the loop to end the
        // transaction under way (at most two bounded commits and a close, well within 90 s).
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            writer.stopping = true;
            try {
                done.await(90, TimeUnit.SECONDS);
            } catch (InterruptedException ignored) {
                Thread.currentThread().interrupt();
            }
        }));
        int exit = 0;
        try {
            writer.run();
        } catch (RuntimeException error) {
            error.printStackTrace();
            exit = 1;
        } finally {
            done.countDown();
        }
        System.exit(exit);
    }

    private void stopAtEndOfInput() {
        try {
            while (System.in.read() != -1) {
                // Nothing is read from stdin; its end is the signal to stop.
            }
        } catch (IOException ignored) {
            // A broken stdin is an end too.
        }
        stopping = true;
    }

    private void run() {
        KafkaProducer<String, String> producer = session();
        for (int k = 1; producer != null && !stopping; k++) {
            String name = transactionalId + "-t" + k;
            Outcome outcome = transaction(producer, name, k % 4 == 0);
            say(outcome.name().toLowerCase(Locale.ROOT) + " " + name);
            if (outcome == Outcome.UNKNOWN) {
                // The producer is fatally failed or mid-commit: a new one's initTransactions
                // fences it and completes or aborts what it left.
                producer.close(CLOSE_TIMEOUT);
                producer = session();
            }
        }
        if (producer != null) {
            producer.close(CLOSE_TIMEOUT);
        }
    }

    private Properties config() {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.LINGER_MS_CONFIG, 2);
        // As the librdkafka writers: an open transaction outlives a fault of 20 s at most.
        props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 20000);
        // Bounded calls, so that an outcome line follows every transaction within about a
        // minute: a send is given up after 20 s, initTransactions, commitTransaction and
        // abortTransaction after 30 s.
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10000);
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 20000);
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 30000);
        return props;
    }

    /** A new producer whose initTransactions returned, or null once told to stop. */
    private KafkaProducer<String, String> session() {
        while (!stopping) {
            call("initTransactions");
            KafkaProducer<String, String> producer = new KafkaProducer<>(config());
            try {
                producer.initTransactions();
                sessions++;
                say("session " + sessions);
                return producer;
            } catch (KafkaException error) {
                log("initTransactions failed, a new producer: " + error);
                producer.close(CLOSE_TIMEOUT);
                pause();
            }
        }
        return null;
    }

    private Outcome transaction(KafkaProducer<String, String> producer, String name, boolean abortOnPurpose) {
        try {
            call("beginTransaction and send " + name);
            producer.beginTransaction();
            for (int p = 0; p < PARTITIONS; p++) {
                for (int i = 0; i < RECORDS_PER_PARTITION; i++) {
                    producer.send(new ProducerRecord<>(topic, p, null, name + "-p" + p + "-" + i));
                }
            }
            if (abortOnPurpose) {
                // Written first, so that the abort has records to mark (as the Python writer).
                call("flush " + name);
                producer.flush();
            }
            return end(producer, name, !abortOnPurpose);
        } catch (ProducerFencedException | OutOfOrderSequenceException | AuthorizationException error) {
            return unknown(name, "fatal " + error);
        } catch (KafkaException error) {
            return abortAfter(producer, name, error);
        } catch (IllegalStateException error) {
            // Not a state this loop leaves a producer in; a new producer is the way out.
            return unknown(name, error.toString());
        }
    }

    /**
     * commitTransaction (or abortTransaction). A TimeoutException leaves the outcome open and
     * allows only the same call after it: retried once, then the outcome is unknown. Other
     * errors are the caller's.
     */
    private Outcome end(KafkaProducer<String, String> producer, String name, boolean commit) {
        String what = (commit ? "commitTransaction " : "abortTransaction ") + name;
        try {
            call(what);
            complete(producer, commit);
        } catch (TimeoutException first) {
            log(what + " timed out, retried: " + first);
            try {
                call(what + " (retried after a timeout)");
                complete(producer, commit);
            } catch (TimeoutException second) {
                return unknown(name, what + " timed out twice: " + second);
            }
        }
        return commit ? Outcome.COMMITTED : Outcome.ABORTED;
    }

    private static void complete(KafkaProducer<String, String> producer, boolean commit) {
        if (commit) {
            producer.commitTransaction();
        } else {
            producer.abortTransaction();
        }
    }

    /** An abortable error: aborted if abortTransaction returns, else unknown. */
    private Outcome abortAfter(KafkaProducer<String, String> producer, String name, KafkaException error) {
        log(name + ": " + error + "; abortTransaction");
        try {
            return end(producer, name, false);
        } catch (KafkaException | IllegalStateException abortError) {
            return unknown(name, "abortTransaction after " + error + " failed: " + abortError);
        }
    }

    private Outcome unknown(String name, String why) {
        log(name + ": outcome unknown (" + why + "); a new producer");
        return Outcome.UNKNOWN;
    }

    private void pause() {
        try {
            Thread.sleep(1000);
        } catch (InterruptedException ignored) {
            Thread.currentThread().interrupt();
        }
    }

    private static void call(String what) {
        say("call " + what);
    }

    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    /** To stderr, in UTC as the node logs and transactions.py's log. */
    private static void log(String message) {
        System.err.println("[" + Instant.now() + "] " + message);
        System.err.flush();
    }
}
