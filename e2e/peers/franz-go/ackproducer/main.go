// Command ackproducer is franz-go's producer at its DEFAULT settings (idempotent, acks=all,
// kgo's retries and backoffs), for harnesses that time acknowledgements across faults
// (e2e/cluster/failover_window.py). It speaks the protocol of the Java client's
// HistoryProducer (e2e/peers/java-client/HistoryProducer.java), so a harness reads both alike:
//
//   - stdout: one line per acknowledged record, "PARTITION OFFSET VALUE";
//   - stderr: "ready" once the client exists; "failed PARTITION SEQ message" per record whose
//     delivery failed; "summary sent N acked N failed N undelivered N" at the end; anything
//     else is kgo's own log at level info (its metadata updates and why they ran);
//   - stdin: a line "stop SECONDS", or end of input, stops producing; what was sent is then
//     flushed for up to SECONDS (default 120) and what is still unacknowledged counts as
//     undelivered.
//
// Values are "TAG:PRODUCER:SEQ(9 digits):xxx…" (value-bytes long), record SEQ to partition
// SEQ % partitions (the only setting beside the seed brokers: a manual partitioner, so each
// partition's acknowledgements come at a steady rate).
//
//	ackproducer -bootstrap H:P[,H:P] -topic T -tag TAG [-producer 0] [-rate 300]
//	            [-partitions 3] [-value-bytes 100]
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	bootstrap := flag.String("bootstrap", "", "seed brokers host:port[,host:port]")
	topic := flag.String("topic", "", "topic to write")
	tag := flag.String("tag", "", "value prefix")
	producer := flag.Int("producer", 0, "producer number, in every value")
	rate := flag.Float64("rate", 300, "records per second")
	partitions := flag.Int("partitions", 3, "partitions, written round robin")
	valueBytes := flag.Int("value-bytes", 100, "value length")
	flag.Parse()
	if *bootstrap == "" || *topic == "" || *tag == "" || *partitions < 1 || *rate <= 0 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: ackproducer -bootstrap H:P[,H:P] -topic T -tag TAG [-producer N] "+
			"[-rate R] [-partitions N] [-value-bytes N]")
		os.Exit(2)
	}
	client, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(*bootstrap, ",")...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelInfo, nil)),
	)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fatal client: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "ready")

	flushFor := make(chan time.Duration, 1)
	go readStdin(flushFor)

	// One writer for stdout: the callbacks run on the client's goroutines.
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	var outMu sync.Mutex
	var acked, failed, undelivered atomic.Int64
	flushing := atomic.Bool{}
	stopOut := make(chan struct{})
	go func() {
		// Acknowledgement lines reach the harness within 5 ms: it timestamps them on arrival.
		ticker := time.NewTicker(5 * time.Millisecond)
		defer ticker.Stop()
		for {
			select {
			case <-ticker.C:
				outMu.Lock()
				_ = out.Flush()
				outMu.Unlock()
			case <-stopOut:
				return
			}
		}
	}()

	started := time.Now()
	var sent int64
	var flushWithin time.Duration
produce:
	for {
		due := int64(time.Since(started).Seconds() * *rate)
		for ; sent < due; sent++ {
			seq := sent
			partition := int32(seq % int64(*partitions))
			value := makeValue(*tag, *producer, seq, *valueBytes)
			record := &kgo.Record{Topic: *topic, Partition: partition, Value: value}
			client.Produce(context.Background(), record, func(r *kgo.Record, err error) {
				if err != nil {
					if flushing.Load() {
						undelivered.Add(1) // failed by the Close after the flush ran out of time
						return
					}
					failed.Add(1)
					fmt.Fprintf(os.Stderr, "failed %d %d %v\n", partition, seq, err)
					return
				}
				acked.Add(1)
				outMu.Lock()
				fmt.Fprintf(out, "%d %d %s\n", r.Partition, r.Offset, r.Value)
				outMu.Unlock()
			})
		}
		select {
		case flushWithin = <-flushFor:
			break produce
		case <-time.After(5 * time.Millisecond):
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), flushWithin)
	_ = client.Flush(ctx)
	cancel()
	flushing.Store(true)
	client.Close() // fails what is still buffered: the callbacks run before Close returns
	close(stopOut)
	outMu.Lock()
	_ = out.Flush()
	outMu.Unlock()
	fmt.Fprintf(os.Stderr, "summary sent %d acked %d failed %d undelivered %d\n", sent, acked.Load(),
		failed.Load(), undelivered.Load())
}

func makeValue(tag string, producer int, seq int64, valueBytes int) []byte {
	value := fmt.Sprintf("%s:%d:%09d:", tag, producer, seq)
	if len(value) < valueBytes {
		value += strings.Repeat("x", valueBytes-len(value))
	}
	return []byte(value)
}

// readStdin sends how long to flush once "stop SECONDS" or end of input arrives.
func readStdin(flushFor chan<- time.Duration) {
	scanner := bufio.NewScanner(os.Stdin)
	within := 120 * time.Second
	for scanner.Scan() {
		words := strings.Fields(scanner.Text())
		if len(words) == 2 && words[0] == "stop" {
			if seconds, err := strconv.Atoi(words[1]); err == nil {
				within = time.Duration(seconds) * time.Second
			}
			break
		}
	}
	flushFor <- within
}
