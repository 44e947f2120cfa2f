// Command roundtrip is franz-go's round trip against any Kafka-compatible bootstrap address.
//
// It creates a topic (3 partitions, the broker's default replication factor), produces N keyed
// records with headers and random payloads with kgo's DEFAULT producer settings (idempotent,
// acks=all), consumes them back through a consumer group, checks each record byte for byte
// (key, value, header, partition, offset), commits, and checks the committed offsets.
//
//	roundtrip -bootstrap 127.0.0.1:9092 [-messages 1000]
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

type position struct {
	partition int32
	offset    int64
}

func main() {
	bootstrap := flag.String("bootstrap", "", "bootstrap address host:port")
	messages := flag.Int("messages", 1000, "records to round-trip")
	flag.Parse()
	if *bootstrap == "" {
		fmt.Fprintln(os.Stderr, "usage: roundtrip -bootstrap HOST:PORT [-messages N]")
		os.Exit(2)
	}
	if err := run(*bootstrap, *messages); err != nil {
		fmt.Fprintf(os.Stderr, "franz-go: FAIL: %v\n", err)
		os.Exit(1)
	}
}

func run(bootstrap string, messages int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	suffix := fmt.Sprintf("%08x", mrand.Uint32())
	topic := "franz-roundtrip-" + suffix
	group := "franz-roundtrip-group-" + suffix

	adminClient, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	defer adminClient.Close()
	admin := kadm.NewClient(adminClient)
	created, err := admin.CreateTopic(ctx, 3, -1, nil, topic)
	if err == nil {
		err = created.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}

	// Produce with kgo's defaults: idempotent, acks=all.
	producer, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.DefaultProduceTopic(topic))
	if err != nil {
		return fmt.Errorf("producer: %w", err)
	}
	records := make([]*kgo.Record, messages)
	for i := range records {
		value := make([]byte, mrand.IntN(2048))
		_, _ = rand.Read(value)
		records[i] = &kgo.Record{
			Key:     []byte(fmt.Sprintf("key-%d", i%17)),
			Value:   value,
			Headers: []kgo.RecordHeader{{Key: "seq", Value: []byte(fmt.Sprintf("h-%d", i))}},
		}
	}
	if err := producer.ProduceSync(ctx, records...).FirstErr(); err != nil {
		producer.Close()
		return fmt.Errorf("produce: %w", err)
	}
	producer.Close()
	expected := make(map[position]*kgo.Record, messages)
	ends := map[int32]int64{}
	for _, r := range records {
		expected[position{r.Partition, r.Offset}] = r
		if r.Offset+1 > ends[r.Partition] {
			ends[r.Partition] = r.Offset + 1
		}
	}
	if len(expected) != messages {
		return errors.New("producer returned duplicate (partition, offset) pairs")
	}

	consumer, err := kgo.NewClient(
		kgo.SeedBrokers(bootstrap),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
	)
	if err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	defer consumer.Close()
	received := 0
	for received < messages {
		fetches := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("timed out: received %d of %d records", received, messages)
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			return fmt.Errorf("fetch: %v", errs[0].Err)
		}
		for _, got := range fetches.Records() {
			at := position{got.Partition, got.Offset}
			want, ok := expected[at]
			if !ok {
				return fmt.Errorf("unexpected or duplicate record at %d/%d", at.partition, at.offset)
			}
			delete(expected, at)
			if !bytes.Equal(want.Key, got.Key) || !bytes.Equal(want.Value, got.Value) {
				return fmt.Errorf("key or value differs at %d/%d", at.partition, at.offset)
			}
			if len(got.Headers) != 1 || got.Headers[0].Key != "seq" ||
				!bytes.Equal(got.Headers[0].Value, want.Headers[0].Value) {
				return fmt.Errorf("headers differ at %d/%d", at.partition, at.offset)
			}
			received++
		}
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}

	committed, err := admin.FetchOffsets(ctx, group)
	if err != nil {
		return fmt.Errorf("fetch committed offsets: %w", err)
	}
	for partition, end := range ends {
		c, ok := committed.Lookup(topic, partition)
		if !ok || c.Err != nil || c.At != end {
			return fmt.Errorf("committed offset of %s-%d is %+v, expected %d", topic, partition, c, end)
		}
	}
	fmt.Printf("franz-go: %d records round-tripped byte-identical through %s (topic %s, group %s, idempotent producer, offsets committed)\n",
		messages, bootstrap, topic, group)
	return nil
}
