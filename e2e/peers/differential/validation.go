package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type createFunc func(name string, parts int32, configs map[string]*string) (kmsg.CreateTopicsResponseTopic, error)

// digits hides wall-clock numbers (timestamps, "now") in broker messages so that the
// wording compares across runs.
var digits = regexp.MustCompile(`-?[0-9]{6,}`)

// observeProduceErrors records what a client sees of a refused produce: the partition's
// error code and message, and each record error (KIP-467) with its batch index.
func observeProduceErrors(obs Observations, key, topic string, r kmsg.ProduceResponseTopicPartition) {
	clean := func(s string) string {
		return digits.ReplaceAllString(strings.ReplaceAll(s, topic, "<topic>"), "<n>")
	}
	obs[key+".error_code"] = int(r.ErrorCode)
	message := "<null>"
	if r.ErrorMessage != nil {
		message = clean(*r.ErrorMessage)
	}
	obs[key+".error_message"] = message
	var errs []string
	for _, e := range r.ErrorRecords {
		m := "<null>"
		if e.ErrorMessage != nil {
			m = clean(*e.ErrorMessage)
		}
		errs = append(errs, fmt.Sprintf("%d: %s", e.RelativeOffset, m))
	}
	obs[key+".record_errors"] = errs
}

// recordErrorsStep: a compacted topic refuses keyless records, and CreateTime records
// outside message.timestamp.before/after.max.ms are refused, each naming the records.
func recordErrorsStep(ctx context.Context, cl *kgo.Client, adm *kadm.Client, obs Observations, create createFunc, suffix string) error {
	compact, minute := "compact", "60000"
	name := "differential-compacted-" + suffix
	created, err := create(name, partitions, map[string]*string{"cleanup.policy": &compact, "message.timestamp.before.max.ms": &minute})
	if err != nil {
		return fmt.Errorf("create compacted topic: %w", err)
	}
	obs["record_errors.create.error_code"] = int(created.ErrorCode)
	tgt, err := waitForLeaders(ctx, cl, adm, name)
	if err != nil {
		return err
	}
	now := time.Now().UnixMilli()
	k := func(s string) []byte { return []byte(s) }
	mixed := []rawRecord{{key: k("a"), value: k("1")}, {value: k("2")}, {key: k("b"), value: k("3")}, {value: k("4")}}
	r, err := produceSettled(ctx, tgt, encodeBatch(now, mixed, false))
	if err != nil {
		return fmt.Errorf("produce keyless records: %w", err)
	}
	observeProduceErrors(obs, "record_errors.keyless", name, r)
	keyed := []rawRecord{{key: k("a"), value: k("1")}, {key: k("b"), value: k("2")}}
	r, err = produceSettled(ctx, tgt, encodeBatch(now, keyed, false))
	if err != nil {
		return fmt.Errorf("produce keyed records: %w", err)
	}
	obs["record_errors.keyed.error_code"] = int(r.ErrorCode)
	obs["record_errors.keyed.base_offset"] = r.BaseOffset
	// Record 1 two hours ahead (after.max.ms is an hour by default), record 2 an hour
	// back (before.max.ms is a minute on this topic); record 3 is both keyless and late.
	times := []rawRecord{{key: k("a"), value: k("1")}, {key: k("b"), value: k("2"), tsDelta: 2 * 3600_000},
		{key: k("c"), value: k("3"), tsDelta: -3600_000}, {value: k("4"), tsDelta: -3600_000}}
	r, err = produceSettled(ctx, tgt, encodeBatch(now, times, false))
	if err != nil {
		return fmt.Errorf("produce out-of-range timestamps: %w", err)
	}
	observeProduceErrors(obs, "record_errors.timestamps", name, r)
	end, err := tgt.listOffset(ctx, 0, -1)
	if err != nil {
		return err
	}
	obs["record_errors.log_end"] = end.Offset
	return nil
}

// compressionStep: compression.type on a topic re-encodes batches of another codec and keeps
// the values; invalid values and levels are refused naming the key.
func compressionStep(ctx context.Context, bootstrap string, cl *kgo.Client, adm *kadm.Client, obs Observations, create createFunc, suffix string) error {
	zstd := "zstd"
	name := "differential-zstd-" + suffix
	created, err := create(name, partitions, map[string]*string{"compression.type": &zstd})
	if err != nil {
		return fmt.Errorf("create zstd topic: %w", err)
	}
	obs["compression.create.error_code"] = int(created.ErrorCode)
	for _, bad := range []struct{ key, value string }{
		{"compression.type", "ZSTD"}, {"compression.type", "none"}, {"compression.zstd.level", "23"},
		{"compression.gzip.level", "0"}, {"compression.lz4.level", "18"}, {"message.timestamp.after.max.ms", "-1"},
	} {
		v := bad.value
		refused, err := create(name+"-bad", partitions, map[string]*string{bad.key: &v})
		if err != nil {
			return fmt.Errorf("create with %s=%s: %w", bad.key, bad.value, err)
		}
		key := fmt.Sprintf("compression.invalid.%s=%s", bad.key, bad.value)
		obs[key+".error_code"] = int(refused.ErrorCode)
		message := "<null>"
		if refused.ErrorMessage != nil {
			message = *refused.ErrorMessage
		}
		obs[key+".error_message"] = message
	}
	if _, err := waitForLeaders(ctx, cl, adm, name); err != nil {
		return err
	}
	producer, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ProducerBatchCompression(kgo.Lz4Compression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		return err
	}
	defer producer.Close()
	var batch []*kgo.Record
	for i := 0; i < 5; i++ {
		batch = append(batch, &kgo.Record{Topic: name, Partition: 0, Key: []byte(fmt.Sprint("k", i)),
			Value: []byte(strings.Repeat(fmt.Sprint("value-", i, " "), 20))})
	}
	if err := producer.ProduceSync(ctx, batch...).FirstErr(); err != nil {
		return fmt.Errorf("produce lz4 batch: %w", err)
	}
	tgt, err := waitForLeaders(ctx, cl, adm, name)
	if err != nil {
		return err
	}
	fetched, err := tgt.fetchRaw(ctx, 0, 0)
	if err != nil {
		return fmt.Errorf("fetch the re-encoded batch: %w", err)
	}
	obs["compression.stored_codecs"] = batchCodecs(fetched.RecordBatches)
	records, err := consumePartition(ctx, bootstrap, name, 0, kgo.NewOffset().AtStart(), len(batch))
	if err != nil {
		return fmt.Errorf("consume the re-encoded batch: %w", err)
	}
	var values []string
	for _, r := range records {
		values = append(values, fmt.Sprintf("%d %s=%s", r.Offset, r.Key, r.Value))
	}
	obs["compression.values"] = values
	return nil
}

// batchCodecs lists the compression codec (attributes bits 0-2) of each RecordBatch v2 in
// a fetch response's record bytes.
func batchCodecs(records []byte) []int {
	var codecs []int
	for len(records) >= 61 {
		length := int(binary.BigEndian.Uint32(records[8:12]))
		codecs = append(codecs, int(binary.BigEndian.Uint16(records[21:23])&0x07))
		if 12+length > len(records) {
			break
		}
		records = records[12+length:]
	}
	return codecs
}

// produceSettled is produceRaw to partition 0, retried while the partition is still being
// set up on the broker (a new topic's leader can answer NOT_LEADER_OR_FOLLOWER,
// LEADER_NOT_AVAILABLE or UNKNOWN_TOPIC_OR_PARTITION for a moment after metadata shows it).
func produceSettled(ctx context.Context, tgt *target, batch []byte) (kmsg.ProduceResponseTopicPartition, error) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		r, err := tgt.produceRaw(ctx, 0, batch)
		if err != nil || (r.ErrorCode != 3 && r.ErrorCode != 5 && r.ErrorCode != 6) || time.Now().After(deadline) {
			return r, err
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
