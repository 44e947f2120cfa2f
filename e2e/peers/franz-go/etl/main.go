// Command etl is franz-go's transactional consume-transform-produce (kgo.GroupTransactSession)
// against any Kafka-compatible cluster, with the churn a real ETL fleet sees.
//
// It creates an input and an output topic, writes -records keyed records to the input, then
// runs -sessions GroupTransactSessions (distinct transactional ids etl-0..N-1, one consumer
// group) that copy every input record to the output inside transactions that also commit the
// group's offsets. Each session leaves and joins again every few seconds, so the group
// rebalances often and franz-go aborts transactions whose produces a rebalance cut short
// (EndTxn right after a commit, at the epoch the commit handed out: KIP-890's version 2).
// The broker may be killed and restarted meanwhile (the caller does that).
//
// It succeeds when the group's committed offsets reach the input's end and the output, read at
// read_committed, holds every input record exactly once. It fails on the first error a session
// cannot recover from (PRODUCER_FENCED when nothing else uses the id, INVALID_PRODUCER_EPOCH,
// INVALID_TXN_STATE, ...), on a lost or duplicated record, or when no progress is made for
// -stall. One summary line on stdout: records, transactions committed, aborted, rebalances.
//
//	etl -bootstrap host:port[,host:port] [-records 20000] [-sessions 3] [-stall 90s]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	inputTopic  = "etl-in"
	outputTopic = "etl-out"
	group       = "etl"
	partitions  = 6
	// Small transactions: many EndTxn calls, each a chance for the race a rebalance opens.
	perTransaction = 20
)

type counters struct {
	committed, aborted, sessions atomic.Int64
	lastProgress                 atomic.Int64 // unix nanos of the last commit
}

func main() {
	bootstrap := flag.String("bootstrap", "", "bootstrap addresses host:port[,host:port]")
	records := flag.Int("records", 20000, "input records")
	sessions := flag.Int("sessions", 3, "concurrent transact sessions")
	replicas := flag.Int("replication-factor", 3, "replication factor of both topics")
	stall := flag.Duration("stall", 90*time.Second, "fail when no transaction commits for this long")
	flag.Parse()
	if *bootstrap == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: etl -bootstrap HOST:PORT[,HOST:PORT] [-records N] [-sessions N] [-replication-factor N] [-stall D]")
		os.Exit(2)
	}
	seeds := strings.Split(*bootstrap, ",")
	if err := run(seeds, *records, *sessions, int16(*replicas), *stall); err != nil {
		fmt.Fprintf(os.Stderr, "etl: FAIL: %v\n", err)
		os.Exit(1)
	}
}

func run(seeds []string, records, sessions int, replicas int16, stall time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	configs := map[string]*string{"min.insync.replicas": ptr("2")}
	if replicas < 2 {
		configs = nil
	}
	for _, topic := range []string{inputTopic, outputTopic} {
		created, err := adm.CreateTopic(ctx, partitions, replicas, configs, topic)
		if err != nil && !errors.Is(created.Err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("creating %s: %w", topic, err)
		}
	}
	if err := produceInput(ctx, seeds, records); err != nil {
		return err
	}
	ends, err := adm.ListEndOffsets(ctx, inputTopic)
	if err != nil {
		return fmt.Errorf("input end offsets: %w", err)
	}

	var stats counters
	stats.lastProgress.Store(time.Now().UnixNano())
	runCtx, stop := context.WithCancel(ctx)
	fatal := make(chan error, sessions)
	var wg sync.WaitGroup
	for i := 0; i < sessions; i++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			if err := churn(runCtx, seeds, id, &stats); err != nil {
				fatal <- fmt.Errorf("session etl-%d: %w", id, err)
			}
		}(i)
	}

	// Done when the group's committed offsets are the input's ends.
	var failure error
	for failure == nil {
		select {
		case failure = <-fatal:
			continue
		case <-ctx.Done():
			failure = errors.New("not done within 10 minutes")
			continue
		case <-time.After(500 * time.Millisecond):
		}
		if since := time.Since(time.Unix(0, stats.lastProgress.Load())); since > stall {
			failure = fmt.Errorf("no transaction committed for %s", since.Round(time.Second))
			continue
		}
		offsets, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			continue // the coordinator may be moving
		}
		done := true
		ends.Each(func(end kadm.ListedOffset) {
			committed, ok := offsets.Lookup(end.Topic, end.Partition)
			if !ok || committed.At < end.Offset {
				done = false
			}
		})
		if done {
			break
		}
	}
	stop()
	wg.Wait()
	if failure != nil {
		return failure
	}
	return checkOutput(ctx, seeds, records, &stats)
}

func ptr(s string) *string { return &s }

func produceInput(ctx context.Context, seeds []string, records int) error {
	producer, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(inputTopic))
	if err != nil {
		return err
	}
	defer producer.Close()
	for i := 0; i < records; i++ {
		value := fmt.Sprintf("record-%07d", i)
		producer.Produce(ctx, &kgo.Record{Key: []byte(value), Value: []byte(value)}, nil)
	}
	if err := producer.Flush(ctx); err != nil {
		return err
	}
	// Produce's callbacks were nil: a failed record shows in the output check as missing.
	return nil
}

// churn runs one transactional id's sessions one after another: each lives 3-8 s, then
// leaves the group, so the group rebalances while transactions are open.
func churn(ctx context.Context, seeds []string, id int, stats *counters) error {
	for ctx.Err() == nil {
		life := time.Duration(3000+mrand.IntN(5000)) * time.Millisecond
		if err := oneSession(ctx, seeds, id, life, stats); err != nil {
			return err
		}
		stats.sessions.Add(1)
	}
	return nil
}

func oneSession(ctx context.Context, seeds []string, id int, life time.Duration, stats *counters) error {
	session, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(seeds...),
		kgo.TransactionalID(fmt.Sprintf("etl-%d", id)),
		kgo.TransactionTimeout(60*time.Second),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(inputTopic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.SessionTimeout(6*time.Second),
		kgo.HeartbeatInterval(500*time.Millisecond),
		kgo.DefaultProduceTopic(outputTopic),
	)
	if err != nil {
		return err
	}
	defer session.Close()
	until := time.Now().Add(life)
	for ctx.Err() == nil && time.Now().Before(until) {
		pollCtx, cancel := context.WithTimeout(ctx, time.Second)
		fetches := session.PollRecords(pollCtx, perTransaction)
		cancel()
		if fetches.IsClientClosed() {
			return nil
		}
		if fetches.Empty() {
			continue
		}
		if err := session.Begin(); err != nil {
			return fmt.Errorf("BeginTransaction: %w", err)
		}
		// One transaction in eight meets a transform that fails (as an ETL's does on a record
		// it cannot map yet): it is aborted as soon as its records are handed to the client,
		// right after the previous commit, whose markers may still be in flight; the group
		// then reads the same records again from its committed offsets.
		transformFailed := mrand.IntN(8) == 0
		var produced sync.WaitGroup
		fetches.EachRecord(func(r *kgo.Record) {
			produced.Add(1)
			out := &kgo.Record{Key: r.Key, Value: r.Value}
			session.Produce(ctx, out, func(_ *kgo.Record, _ error) { produced.Done() })
		})
		if !transformFailed {
			produced.Wait()
		}
		// TryCommit: a produce that failed, or a rebalance meanwhile, makes End abort.
		outcome := kgo.TryCommit
		if transformFailed {
			outcome = kgo.TryAbort
		}
		endCtx, endCancel := context.WithTimeout(context.Background(), 60*time.Second)
		committed, err := session.End(endCtx, outcome)
		endCancel()
		if transformFailed {
			produced.Wait() // every promise has run before the next transaction begins
		}
		if err != nil {
			if unrecoverable(err) {
				return fmt.Errorf("EndTxn: %w", err)
			}
			// The transaction's outcome is unknown to this session: a new one (InitProducerId)
			// aborts whatever is left open and starts from the committed offsets.
			fmt.Fprintf(os.Stderr, "etl: session etl-%d: EndTxn: %v (a new session takes over)\n", id, err)
			return nil
		}
		if committed {
			stats.committed.Add(1)
			stats.lastProgress.Store(time.Now().UnixNano())
		} else {
			stats.aborted.Add(1)
		}
	}
	return nil
}

// unrecoverable: errors that fence a producer no other process shares the id with, or that
// say the coordinator lost track of the transaction.
func unrecoverable(err error) bool {
	for _, fatal := range []error{
		kerr.ProducerFenced, kerr.InvalidProducerEpoch, kerr.InvalidTxnState,
		kerr.InvalidProducerIDMapping, kerr.TransactionalIDAuthorizationFailed,
	} {
		if errors.Is(err, fatal) {
			return true
		}
	}
	return false
}

// checkOutput reads the output from the start at read_committed: every input record
// exactly once. Reading stops once every record was seen and 5 s brought nothing new (a
// duplicate would have had that long to show), or after 2 minutes.
func checkOutput(ctx context.Context, seeds []string, records int, stats *counters) error {
	reader, err := kgo.NewClient(
		kgo.SeedBrokers(seeds...),
		kgo.ConsumeTopics(outputTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	)
	if err != nil {
		return err
	}
	defer reader.Close()
	seen := make(map[string]int, records)
	deadline := time.Now().Add(2 * time.Minute)
	lastNew := time.Now()
	for time.Now().Before(deadline) {
		if len(seen) >= records && time.Since(lastNew) > 5*time.Second {
			break
		}
		pollCtx, cancel := context.WithTimeout(ctx, time.Second)
		fetches := reader.PollFetches(pollCtx)
		cancel()
		fetches.EachRecord(func(r *kgo.Record) {
			seen[string(r.Value)]++
			lastNew = time.Now()
		})
	}
	missing, duplicated := 0, 0
	var examples []string
	for i := 0; i < records; i++ {
		value := fmt.Sprintf("record-%07d", i)
		switch n := seen[value]; {
		case n == 0:
			missing++
			if len(examples) < 5 {
				examples = append(examples, value+" missing")
			}
		case n > 1:
			duplicated++
			if len(examples) < 5 {
				examples = append(examples, fmt.Sprintf("%s %d times", value, n))
			}
		}
		delete(seen, value)
	}
	if missing > 0 || duplicated > 0 || len(seen) > 0 {
		return fmt.Errorf("output at read_committed: %d missing, %d duplicated, %d unknown (%s)",
			missing, duplicated, len(seen), strings.Join(examples, ", "))
	}
	fmt.Printf("etl: %d records copied exactly once; %d transactions committed, %d aborted by franz-go, %d session restarts (rebalances)\n",
		records, stats.committed.Load(), stats.aborted.Load(), stats.sessions.Load())
	return nil
}
