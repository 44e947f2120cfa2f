package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Observations are what a client can see, keyed by a stable path ("list_offsets.p0.latest").
// Values are numbers, strings, booleans or lists of them; nothing that differs run to run
// (topic names, wall-clock times) goes in: timestamps are relative to the scenario's base.
type Observations map[string]any

const (
	partitions     = 3
	batchesPerPart = 3
	recordsPerBat  = 4
	explicitRetain = "86400000"
)

// errorCode turns a client error into what the broker said: its Kafka error code, or a
// "client: ..." string when the error did not come from the broker.
func errorCode(err error) any {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return int(ke.Code)
	}
	return "client: " + err.Error()
}

// runScenario plays the whole scenario against one bootstrap address.
func runScenario(ctx context.Context, bootstrap string) (Observations, error) {
	obs := Observations{}
	suffix := fmt.Sprintf("%08x", rand.Uint32())
	topic := "differential-" + suffix
	group := "differential-group-" + suffix
	// Record timestamps: an hour ago plus one second per record, so that time lookups are
	// deterministic and no retention or timestamp-skew rule touches them.
	base := time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli()
	rel := func(ts int64) int64 {
		if ts < 0 {
			return ts
		}
		return ts - base
	}

	cl, err := kgo.NewClient(
		kgo.SeedBrokers(bootstrap),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
		kgo.DisableIdempotentWrite(),
		kgo.RequiredAcks(kgo.AllISRAcks()),
	)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	// 1. Create the topic (explicit retention.ms), then again, then one with 0 partitions.
	create := func(name string, parts int32, configs map[string]*string) (kmsg.CreateTopicsResponseTopic, error) {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 30000
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic = name
		t.NumPartitions = parts
		t.ReplicationFactor = 1
		for k, v := range configs {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = k, v
			t.Configs = append(t.Configs, c)
		}
		req.Topics = append(req.Topics, t)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return kmsg.CreateTopicsResponseTopic{}, err
		}
		if len(resp.Topics) != 1 {
			return kmsg.CreateTopicsResponseTopic{}, fmt.Errorf("create topics: %d results", len(resp.Topics))
		}
		return resp.Topics[0], nil
	}
	retain := explicitRetain
	created, err := create(topic, partitions, map[string]*string{"retention.ms": &retain})
	if err != nil {
		return nil, fmt.Errorf("create topic: %w", err)
	}
	obs["create_topic.error_code"] = int(created.ErrorCode)
	obs["create_topic.num_partitions"] = int(created.NumPartitions)
	again, err := create(topic, partitions, nil)
	if err != nil {
		return nil, fmt.Errorf("create topic again: %w", err)
	}
	obs["create_topic_again.error_code"] = int(again.ErrorCode)
	zero, err := create(topic+"-zero", 0, nil)
	if err != nil {
		return nil, fmt.Errorf("create topic with 0 partitions: %w", err)
	}
	obs["create_topic_zero_partitions.error_code"] = int(zero.ErrorCode)

	// Wait until every partition has a leader, then aim raw requests at it.
	tgt, err := waitForLeaders(ctx, cl, adm, topic)
	if err != nil {
		return nil, err
	}

	// 2. Produce keyed batches with headers: each partition gets batchesPerPart batches of
	// recordsPerBat records, each batch acknowledged before the next; one tombstone last.
	type sent struct {
		partition int32
		offset    int64
	}
	var produced []sent
	n := 0
	for p := int32(0); p < partitions; p++ {
		for b := 0; b < batchesPerPart; b++ {
			var batch []*kgo.Record
			for i := 0; i < recordsPerBat; i++ {
				batch = append(batch, &kgo.Record{
					Topic:     topic,
					Partition: p,
					Key:       []byte(fmt.Sprintf("key-%d-%d", p, i%2)),
					Value:     []byte(fmt.Sprintf("value-%d-%d-%d", p, b, i)),
					Headers: []kgo.RecordHeader{
						{Key: "batch", Value: []byte(fmt.Sprint(b))},
						{Key: "empty", Value: nil},
					},
					Timestamp: time.UnixMilli(base + int64(n)*1000),
				})
				n++
			}
			results := cl.ProduceSync(ctx, batch...)
			if err := results.FirstErr(); err != nil {
				return nil, fmt.Errorf("produce: %w", err)
			}
			for _, r := range results {
				produced = append(produced, sent{r.Record.Partition, r.Record.Offset})
			}
		}
	}
	tombstone := &kgo.Record{Topic: topic, Partition: 2, Key: []byte("key-2-0"), Value: nil,
		Timestamp: time.UnixMilli(base + int64(n)*1000)}
	if err := cl.ProduceSync(ctx, tombstone).FirstErr(); err != nil {
		return nil, fmt.Errorf("produce tombstone: %w", err)
	}
	produced = append(produced, sent{tombstone.Partition, tombstone.Offset})
	var producedList []string
	for _, s := range produced {
		producedList = append(producedList, fmt.Sprintf("%d:%d", s.partition, s.offset))
	}
	obs["produce.assigned_offsets"] = producedList

	// From here on a step that fails records "<step>.step_error" and the scenario goes on,
	// so one missing API shows as one difference rather than hiding all the others.
	step := func(name string, run func() error) {
		if err := run(); err != nil {
			obs[name+".step_error"] = errorCode(err)
		}
	}
	// 3. List offsets: earliest, latest, max timestamp, by time, after the last time.
	step("list_offsets", func() error {
		for p := int32(0); p < partitions; p++ {
			for _, q := range []struct {
				name string
				ts   int64
			}{{"earliest", -2}, {"latest", -1}, {"max_timestamp", -3},
				{"time_mid", base + 5500}, {"time_after_end", base + 1_000_000}} {
				ts := q.ts
				if q.name == "time_mid" {
					// The middle of this partition's records.
					ts = base + int64(int(p)*batchesPerPart*recordsPerBat+5)*1000 + 500
				}
				r, err := tgt.listOffset(ctx, p, ts)
				if err != nil {
					return fmt.Errorf("list offsets: %w", err)
				}
				key := fmt.Sprintf("list_offsets.p%d.%s", p, q.name)
				obs[key+".error_code"] = int(r.ErrorCode)
				obs[key+".offset"] = r.Offset
				obs[key+".timestamp"] = rel(r.Timestamp)
				obs[key+".leader_epoch"] = int(r.LeaderEpoch)
			}
		}
		return nil
	})

	// 4. Consume from earliest: every record with key, value, headers, timestamp.
	step("consume_earliest", func() error {
		records, err := consume(ctx, bootstrap, topic, kgo.NewOffset().AtStart(), len(produced))
		if err != nil {
			return fmt.Errorf("consume from earliest: %w", err)
		}
		var lines []string
		for _, r := range records {
			var hs []string
			for _, h := range r.Headers {
				hs = append(hs, fmt.Sprintf("%s=%q(nil=%v)", h.Key, h.Value, h.Value == nil))
			}
			lines = append(lines, fmt.Sprintf("p%d@%d key=%q value=%q(nil=%v) ts=%d type=%d headers=%v",
				r.Partition, r.Offset, r.Key, r.Value, r.Value == nil, rel(r.Timestamp.UnixMilli()),
				r.Attrs.TimestampType(), hs))
		}
		obs["consume_earliest.records"] = lines
		return nil
	})

	// 5. Consume from a timestamp: the first record each partition returns.
	step("consume_from_timestamp", func() error {
		fromTime, err := consume(ctx, bootstrap, topic, kgo.NewOffset().AfterMilli(base+5500), -partitions)
		if err != nil {
			return fmt.Errorf("consume from timestamp: %w", err)
		}
		for _, r := range fromTime {
			obs[fmt.Sprintf("consume_from_timestamp.p%d.first_offset", r.Partition)] = r.Offset
		}
		return nil
	})

	// 6. Consume from latest: a record produced after the end was read is the one seen.
	step("consume_latest", func() error {
		latest, err := tgt.listOffset(ctx, 0, -1)
		if err != nil {
			return err
		}
		late := &kgo.Record{Topic: topic, Partition: 0, Value: []byte("late"), Timestamp: time.UnixMilli(base + 100_000)}
		if err := cl.ProduceSync(ctx, late).FirstErr(); err != nil {
			return fmt.Errorf("produce late record: %w", err)
		}
		fromLatest, err := consumePartition(ctx, bootstrap, topic, 0, kgo.NewOffset().At(latest.Offset), 1)
		if err != nil {
			return fmt.Errorf("consume from latest: %w", err)
		}
		obs["consume_latest.offset"] = fromLatest[0].Offset
		obs["consume_latest.value"] = string(fromLatest[0].Value)
		return nil
	})

	// 7. Describe configs: a fixed set of topic configs (value, source, default, read-only).
	step("describe_configs", func() error {
		describe := kmsg.NewPtrDescribeConfigsRequest()
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType = kmsg.ConfigResourceTypeTopic
		res.ResourceName = topic
		res.ConfigNames = []string{"cleanup.policy", "retention.ms", "retention.bytes", "segment.bytes",
			"max.message.bytes", "min.insync.replicas", "message.timestamp.type", "compression.type",
			"compression.gzip.level", "compression.lz4.level", "compression.zstd.level",
			"message.timestamp.before.max.ms", "message.timestamp.after.max.ms", "no.such.config"}
		describe.Resources = append(describe.Resources, res)
		described, err := describe.RequestWith(ctx, cl)
		if err != nil {
			return fmt.Errorf("describe configs: %w", err)
		}
		for _, r := range described.Resources {
			obs["describe_configs.error_code"] = int(r.ErrorCode)
			var names []string
			for _, c := range r.Configs {
				names = append(names, c.Name)
				value := "<null>"
				if c.Value != nil {
					value = *c.Value
				}
				obs["describe_configs."+c.Name+".value"] = value
				obs["describe_configs."+c.Name+".source"] = c.Source.String()
				obs["describe_configs."+c.Name+".read_only"] = c.ReadOnly
			}
			sort.Strings(names)
			obs["describe_configs.names"] = names
		}
		return nil
	})

	// 8. Group offsets: commit as a simple (memberless) consumer, fetch them back.
	step("group_offsets", func() error {
		offsets := kadm.Offsets{}
		offsets.Add(kadm.Offset{Topic: topic, Partition: 0, At: 2, LeaderEpoch: -1, Metadata: "meta-0"})
		offsets.Add(kadm.Offset{Topic: topic, Partition: 1, At: 5, LeaderEpoch: -1})
		committed, err := adm.CommitOffsets(ctx, group, offsets)
		if err != nil {
			obs["commit_offsets.error_code"] = errorCode(err)
		} else {
			committed.Each(func(r kadm.OffsetResponse) {
				obs[fmt.Sprintf("commit_offsets.p%d.error_code", r.Partition)] = errorCode(r.Err)
			})
		}
		fetched, err := adm.FetchOffsetsForTopics(ctx, group, topic)
		if err != nil {
			obs["fetch_offsets.error_code"] = errorCode(err)
		} else {
			fetched.Each(func(r kadm.OffsetResponse) {
				key := fmt.Sprintf("fetch_offsets.p%d", r.Partition)
				obs[key+".error_code"] = errorCode(r.Err)
				obs[key+".offset"] = r.At
				obs[key+".metadata"] = r.Metadata
			})
		}
		return nil
	})

	// 9. Delete records: p0 before offset 3; then the log start, a fetch below it, and a
	step("delete_records", func() error {
		// delete beyond the high watermark.
		deleteBefore := func(p int32, offset int64) (kmsg.DeleteRecordsResponseTopicPartition, error) {
			req := kmsg.NewPtrDeleteRecordsRequest()
			req.TimeoutMillis = 30000
			t := kmsg.NewDeleteRecordsRequestTopic()
			t.Topic = topic
			dp := kmsg.NewDeleteRecordsRequestTopicPartition()
			dp.Partition, dp.Offset = p, offset
			t.Partitions = append(t.Partitions, dp)
			req.Topics = append(req.Topics, t)
			resp, err := req.RequestWith(ctx, tgt.broker)
			if err != nil {
				return kmsg.DeleteRecordsResponseTopicPartition{}, err
			}
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				return kmsg.DeleteRecordsResponseTopicPartition{}, errors.New("delete records: unexpected response shape")
			}
			return resp.Topics[0].Partitions[0], nil
		}
		deleted, err := deleteBefore(0, 3)
		if err != nil {
			return fmt.Errorf("delete records: %w", err)
		}
		obs["delete_records.error_code"] = int(deleted.ErrorCode)
		obs["delete_records.low_watermark"] = deleted.LowWatermark
		start, err := tgt.listOffset(ctx, 0, -2)
		if err != nil {
			return err
		}
		obs["delete_records.earliest_after"] = start.Offset
		below, err := tgt.fetchRaw(ctx, 0, 1)
		if err != nil {
			return fmt.Errorf("fetch below the log start: %w", err)
		}
		obs["fetch_below_log_start.error_code"] = int(below.ErrorCode)
		obs["fetch_below_log_start.log_start_offset"] = below.LogStartOffset
		beyond, err := deleteBefore(1, 999)
		if err != nil {
			return fmt.Errorf("delete records beyond the end: %w", err)
		}
		obs["delete_records_beyond_end.error_code"] = int(beyond.ErrorCode)
		at, err := tgt.fetchRaw(ctx, 0, 3)
		if err != nil {
			return fmt.Errorf("fetch at the log start: %w", err)
		}
		obs["fetch_at_log_start.error_code"] = int(at.ErrorCode)
		obs["fetch_at_log_start.high_watermark"] = at.HighWatermark
		obs["fetch_at_log_start.has_records"] = len(at.RecordBatches) > 0
		past, err := tgt.fetchRaw(ctx, 0, 500)
		if err != nil {
			return fmt.Errorf("fetch past the end: %w", err)
		}
		obs["fetch_past_end.error_code"] = int(past.ErrorCode)
		return nil
	})

	// 10. Produce errors: an unknown partition, a batch over max.message.bytes, a bad CRC.
	step("produce_errors", func() error {
		small := []rawRecord{{key: []byte("k"), value: []byte("v"), headers: [][2]string{{"h", "x"}}}}
		unknown, err := tgt.produceRaw(ctx, 99, encodeBatch(base, small, false))
		if err != nil {
			return fmt.Errorf("produce to an unknown partition: %w", err)
		}
		obs["produce_unknown_partition.error_code"] = int(unknown.ErrorCode)
		huge := []rawRecord{{key: []byte("k"), value: bytes.Repeat([]byte("x"), 1_200_000)}}
		tooLarge, err := tgt.produceRaw(ctx, 1, encodeBatch(base, huge, false))
		if err != nil {
			return fmt.Errorf("produce over the size limit: %w", err)
		}
		obs["produce_over_size_limit.error_code"] = int(tooLarge.ErrorCode)
		corrupt, err := tgt.produceRaw(ctx, 1, encodeBatch(base, small, true))
		if err != nil {
			return fmt.Errorf("produce with a bad CRC: %w", err)
		}
		obs["produce_corrupt_crc.error_code"] = int(corrupt.ErrorCode)
		good, err := tgt.produceRaw(ctx, 1, encodeBatch(base, small, false))
		if err != nil {
			return fmt.Errorf("raw produce: %w", err)
		}
		obs["produce_raw.error_code"] = int(good.ErrorCode)
		obs["produce_raw.base_offset"] = good.BaseOffset
		obs["produce_raw.log_append_time"] = good.LogAppendTime
		obs["produce_raw.log_start_offset"] = good.LogStartOffset
		return nil
	})

	// 12-13. Per-record validation errors (KIP-467) and the compression.type topic config.
	step("record_errors", func() error { return recordErrorsStep(ctx, cl, adm, obs, create, suffix) })
	step("compression", func() error { return compressionStep(ctx, bootstrap, cl, adm, obs, create, suffix) })
	// 14-16. Every Kafka 4.1 topic config, dynamic broker configs, the LogAppendTime bit.
	step("topic_configs", func() error { return topicConfigsStep(ctx, cl, adm, obs, create, suffix) })
	step("broker_configs", func() error { return brokerConfigsStep(ctx, cl, obs, topic) })
	step("log_append_time_bit", func() error { return logAppendTimeBitStep(ctx, cl, adm, obs, create, suffix) })
	// 17. Log compaction: a seeded produce sequence, then what a consumer reads once cleaned.
	step("compaction", func() error { return compactionStep(ctx, bootstrap, cl, adm, obs, create, suffix) })
	// 18. Transactions: commits, aborts, open transactions, offsets in transactions, refusals.
	step("transactions", func() error { return transactionsStep(ctx, bootstrap, cl, adm, obs, create, suffix) })

	// 11. Metadata for an unknown topic, without auto-creation.
	step("metadata_unknown_topic", func() error {
		meta := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		missing := topic + "-missing"
		mt.Topic = &missing
		meta.Topics = append(meta.Topics, mt)
		meta.AllowAutoTopicCreation = false
		metaResp, err := meta.RequestWith(ctx, tgt.broker)
		if err != nil {
			return fmt.Errorf("metadata for an unknown topic: %w", err)
		}
		if len(metaResp.Topics) == 1 {
			obs["metadata_unknown_topic.error_code"] = int(metaResp.Topics[0].ErrorCode)
		}
		return nil
	})

	return obs, nil
}

// waitForLeaders waits until every partition of the topic has a leader and returns the
// raw-request target (the leader of partition 0; the scenario runs against one broker).
func waitForLeaders(ctx context.Context, cl *kgo.Client, adm *kadm.Client, topic string) (*target, error) {
	return waitForPartitionLeaders(ctx, cl, adm, topic, partitions)
}

// waitForPartitionLeaders is waitForLeaders for a topic of `count` partitions.
func waitForPartitionLeaders(ctx context.Context, cl *kgo.Client, adm *kadm.Client, topic string, count int) (*target, error) {
	for {
		details, err := adm.ListTopics(ctx, topic)
		if err == nil {
			if d, ok := details[topic]; ok && d.Err == nil && len(d.Partitions) == count {
				ready := true
				for _, p := range d.Partitions {
					ready = ready && p.Leader >= 0 && p.Err == nil
				}
				if ready {
					leader := d.Partitions[0].Leader
					return &target{client: cl, broker: cl.Broker(int(leader)), topic: topic, topicID: d.ID}, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("topic %s has no leaders: %v", topic, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// consume reads all partitions from `from` until `want` records arrived; a negative `want`
// means the first record of each of -want partitions. Records come back sorted.
func consume(ctx context.Context, bootstrap, topic string, from kgo.Offset, want int) ([]*kgo.Record, error) {
	assign := map[int32]kgo.Offset{}
	for p := int32(0); p < partitions; p++ {
		assign[p] = from
	}
	return consumeAssigned(ctx, bootstrap, topic, assign, want)
}

func consumePartition(ctx context.Context, bootstrap, topic string, p int32, from kgo.Offset, want int) ([]*kgo.Record, error) {
	return consumeAssigned(ctx, bootstrap, topic, map[int32]kgo.Offset{p: from}, want)
}

func consumeAssigned(ctx context.Context, bootstrap, topic string, assign map[int32]kgo.Offset, want int) ([]*kgo.Record, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	firstOnly := want < 0
	var out []*kgo.Record
	seen := map[int32]bool{}
	for {
		if firstOnly && len(seen) == -want || !firstOnly && len(out) >= want {
			break
		}
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("timed out with %d records", len(out))
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			return nil, errs[0].Err
		}
		for _, r := range fetches.Records() {
			if firstOnly {
				if seen[r.Partition] {
					continue
				}
				seen[r.Partition] = true
			}
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Partition != out[j].Partition {
			return out[i].Partition < out[j].Partition
		}
		return out[i].Offset < out[j].Offset
	})
	return out, nil
}
