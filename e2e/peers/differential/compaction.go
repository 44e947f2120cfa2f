package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The compaction step (issue 30): a compacted topic is fed a seeded sequence of produce
// requests, each one batch, and once both brokers have cleaned, a consumer reading from
// offset 0 must see the same records at the same offsets.
//
//	30 requests    1..40 records each; keys k0..k11 (80%) or unique; 1 in 7 a tombstone;
//	               values 0..2000 bytes of words (1 in 10 empty); codec none/gzip/snappy/lz4/zstd per batch
//	20 requests    one 60 KB record each, key fillA
//	1 request      12 records: k1 at positions 0, 3, 6, 9, eight unique keys (the issue's
//	               case: a batch whose newest k1 is in its middle)
//	20 requests    one 60 KB record each, key fillB
//	(wait 2 × segment.ms)  one record "roll": the segment before it is sealed and cleanable
//
// Survivors are then fixed whatever the segment layout (Kafka rolls on record timestamps,
// 10 ms apart; Oxbow on the wall clock) and however many passes ran meanwhile: the newest
// record of each key below the roll record (tombstones too, delete.retention.ms is a day),
// and the roll record in the active segment. The step waits until no key appears twice
// below the roll record, then observes the records, the log start offset, the high
// watermark and the batches left in the log.
const (
	compactionSeed      = 30
	compactionSegmentMs = 200
	compactionKeys      = 12
	compactionWait      = 90 * time.Second
	fillRecordBytes     = 60_000
)

// compactionCodecs are the producer codecs, indexed by a batch's codec number.
var compactionCodecs = []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(),
	kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}

type compactionRecord struct {
	key   string
	value []byte // nil: a tombstone
}

// compactionBatch is one produce request: its records, as one batch of one codec.
type compactionBatch struct {
	codec   int
	records []compactionRecord
}

// compactionSequence builds the produce sequence from compactionSeed.
func compactionSequence() []compactionBatch {
	rng := rand.New(rand.NewPCG(compactionSeed, compactionSeed))
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november oscar papa")
	// text is n bytes of words: every codec shrinks it, so franz-go sends it compressed.
	text := func(n int) []byte {
		b := make([]byte, 0, n) // never nil: an empty value is not a tombstone
		for len(b) < n {
			b = append(b, words[rng.IntN(len(words))]...)
			b = append(b, ' ')
		}
		return b[:n]
	}
	// fill is half random bytes, half words: 60 KB that stays big after compression.
	fill := func() []byte {
		b := make([]byte, 0, fillRecordBytes)
		for len(b) < fillRecordBytes/2 {
			b = binary.LittleEndian.AppendUint64(b, rng.Uint64())
		}
		return append(b[:fillRecordBytes/2], text(fillRecordBytes/2)...)
	}
	var batches []compactionBatch
	for i := 0; i < 30; i++ {
		b := compactionBatch{codec: rng.IntN(len(compactionCodecs))}
		for j, n := 0, 1+rng.IntN(40); j < n; j++ {
			key := fmt.Sprintf("k%d", rng.IntN(compactionKeys))
			if rng.IntN(5) == 0 {
				key = fmt.Sprintf("u-%d-%d", i, j)
			}
			var value []byte // 1 in 7 a tombstone, 1 in 10 of the rest empty
			if rng.IntN(7) != 0 {
				value = text(rng.IntN(2001) * min(rng.IntN(10), 1))
			}
			b.records = append(b.records, compactionRecord{key, value})
		}
		batches = append(batches, b)
	}
	for i := 0; i < 20; i++ {
		batches = append(batches, compactionBatch{codec: i % len(compactionCodecs),
			records: []compactionRecord{{"fillA", fill()}}})
	}
	issue := compactionBatch{codec: 4}
	for j := 0; j < 12; j++ {
		key := fmt.Sprintf("issue-u-%d", j)
		if j%3 == 0 {
			key = "k1"
		}
		issue.records = append(issue.records, compactionRecord{key, text(100 + 10*j)})
	}
	batches = append(batches, issue)
	for i := 0; i < 20; i++ {
		batches = append(batches, compactionBatch{codec: (i + 2) % len(compactionCodecs),
			records: []compactionRecord{{"fillB", fill()}}})
	}
	return batches
}

// batchWritten collects what franz-go reports of each batch a producer wrote.
type batchWritten struct {
	mu      sync.Mutex
	batches []kgo.ProduceBatchMetrics
}

func (h *batchWritten) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.ProduceBatchMetrics) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.batches = append(h.batches, m)
}

// since returns the batches written after the first `from`, once they hold `records`
// records (the hook runs on its own goroutine, after the produce promises).
func (h *batchWritten) since(ctx context.Context, from, records int) ([]kgo.ProduceBatchMetrics, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.mu.Lock()
		got := append([]kgo.ProduceBatchMetrics(nil), h.batches[from:]...)
		h.mu.Unlock()
		n := 0
		for _, m := range got {
			n += m.NumRecords
		}
		if n >= records {
			return got, nil
		}
		if time.Now().After(deadline) {
			return got, fmt.Errorf("the producer reported %d of %d records written", n, records)
		}
		select {
		case <-ctx.Done():
			return got, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (h *batchWritten) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.batches)
}

// describeValue names a value by its length and hash; a tombstone is "nil".
func describeValue(v []byte) string {
	if v == nil {
		return "nil"
	}
	sum := sha256.Sum256(v)
	return fmt.Sprintf("%dB:%x", len(v), sum[:6])
}

// compactionStep plays the compaction scenario (see the top of this file).
func compactionStep(ctx context.Context, bootstrap string, cl *kgo.Client, adm *kadm.Client, obs Observations, create createFunc, suffix string) error {
	name := "differential-compaction-" + suffix
	configs := map[string]string{
		"cleanup.policy":            "compact",
		"segment.ms":                fmt.Sprint(compactionSegmentMs),
		"segment.bytes":             "1048576",
		"min.cleanable.dirty.ratio": "0.01",
		"delete.retention.ms":       "86400000",
	}
	asPointers := map[string]*string{}
	for k, v := range configs {
		asPointers[k] = &v
	}
	created, err := create(name, 1, asPointers)
	if err != nil {
		return fmt.Errorf("create compacted topic: %w", err)
	}
	obs["compaction.create.error_code"] = int(created.ErrorCode)
	tgt, err := waitForPartitionLeaders(ctx, cl, adm, name, 1)
	if err != nil {
		return err
	}

	// One idempotent producer per codec; manual flushing makes each request one batch,
	// which the written-batch hook confirms.
	producers := make([]*kgo.Client, len(compactionCodecs))
	hooks := make([]*batchWritten, len(compactionCodecs))
	for i, codec := range compactionCodecs {
		hooks[i] = &batchWritten{}
		producers[i], err = kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ProducerBatchCompression(codec),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ManualFlushing(), kgo.WithHooks(hooks[i]))
		if err != nil {
			return err
		}
		defer producers[i].Close()
	}
	// Timestamps: a minute ago, 10 ms apart, so that Kafka (which rolls on record
	// timestamps) rolls a segment every 20 records or so and every value is deterministic.
	base := time.Now().Add(-time.Minute).Truncate(time.Second).UnixMilli()
	type produced struct {
		offset int64
		key    string
		value  string
		ts     int64
	}
	var all []produced
	var requests []string
	seq := int64(0)
	for i, b := range compactionSequence() {
		p, hook := producers[b.codec], hooks[b.codec]
		before := hook.count()
		records := make([]*kgo.Record, len(b.records))
		var wg sync.WaitGroup
		var mu sync.Mutex
		var produceErr error
		for j, r := range b.records {
			records[j] = &kgo.Record{Topic: name, Partition: 0, Key: []byte(r.key), Value: r.value,
				Timestamp: time.UnixMilli(base + seq*10)}
			seq++
			wg.Add(1)
			p.Produce(ctx, records[j], func(_ *kgo.Record, err error) {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil && produceErr == nil {
					produceErr = err
				}
			})
		}
		if err := p.Flush(ctx); err != nil {
			return fmt.Errorf("flush request %d: %w", i, err)
		}
		wg.Wait()
		if produceErr != nil {
			return fmt.Errorf("produce request %d: %w", i, produceErr)
		}
		written, err := hook.since(ctx, before, len(records))
		if err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
		var shape []string
		for _, m := range written {
			shape = append(shape, fmt.Sprintf("%d records codec %d", m.NumRecords, m.CompressionType))
		}
		first, last := records[0].Offset, records[len(records)-1].Offset
		requests = append(requests, fmt.Sprintf("%d-%d: %s", first, last, strings.Join(shape, " + ")))
		for j, r := range records {
			all = append(all, produced{r.Offset, b.records[j].key, describeValue(r.Value), r.Timestamp.UnixMilli() - base})
		}
	}
	obs["compaction.produce.requests"] = requests

	// segment.ms is a wall-clock age in Oxbow: wait it out twice, then the roll record
	// (timestamp 30 s after the base, past segment.ms for Kafka too) seals the segment.
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(2 * compactionSegmentMs * time.Millisecond):
	}
	roll := &kgo.Record{Topic: name, Partition: 0, Key: []byte("roll"), Value: []byte("roll"),
		Timestamp: time.UnixMilli(base + 30_000)}
	if err := cl.ProduceSync(ctx, roll).FirstErr(); err != nil {
		return fmt.Errorf("produce the roll record: %w", err)
	}
	all = append(all, produced{roll.Offset, "roll", describeValue(roll.Value), 30_000})
	obs["compaction.produced_records"] = len(all)

	// Cleaned once no key appears twice below the roll record (every earlier duplicate sits
	// in a sealed segment); on a timeout, what was read is observed as it is.
	cleaned := func(records []*kgo.Record) bool {
		seen := map[string]bool{}
		for _, r := range records {
			if r.Offset < roll.Offset {
				if seen[string(r.Key)] {
					return false
				}
				seen[string(r.Key)] = true
			}
		}
		return true
	}
	deadline := time.Now().Add(compactionWait)
	var records []*kgo.Record
	for {
		records, err = consumeThrough(ctx, bootstrap, name, roll.Offset)
		if err != nil {
			return fmt.Errorf("consume the compacted topic: %w", err)
		}
		if cleaned(records) || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	obs["compaction.cleaned"] = cleaned(records)
	var lines []string
	for _, r := range records {
		lines = append(lines, fmt.Sprintf("%d %s=%s ts=%d", r.Offset, r.Key, describeValue(r.Value),
			r.Timestamp.UnixMilli()-base))
	}
	obs["compaction.records"] = lines
	obs["compaction.surviving_records"] = len(records)

	// Against the model: the newest record of each key, at the offset it was given.
	newest := map[string]produced{}
	for _, p := range all {
		newest[p.key] = p
	}
	expected := map[int64]string{}
	for _, p := range newest {
		expected[p.offset] = fmt.Sprintf("%d %s=%s ts=%d", p.offset, p.key, p.value, p.ts)
	}
	var unlike []string
	got := map[int64]bool{}
	for i, r := range records {
		got[r.Offset] = true
		if want, ok := expected[r.Offset]; !ok {
			unlike = append(unlike, "unexpected "+lines[i])
		} else if want != lines[i] {
			unlike = append(unlike, fmt.Sprintf("read %s, produced %s", lines[i], want))
		}
	}
	for offset, want := range expected {
		if !got[offset] {
			unlike = append(unlike, "missing "+want)
		}
	}
	sort.Strings(unlike)
	obs["compaction.unlike_model"] = unlike

	start, err := tgt.listOffset(ctx, 0, -2)
	if err != nil {
		return err
	}
	end, err := tgt.listOffset(ctx, 0, -1)
	if err != nil {
		return err
	}
	obs["compaction.log_start_offset"] = start.Offset
	obs["compaction.high_watermark"] = end.Offset
	batches, empty, err := batchLayout(ctx, tgt, start.Offset, end.Offset)
	if err != nil {
		return err
	}
	obs["compaction.batches"] = batches
	obs["compaction.empty_batches"] = empty
	return nil
}

// consumeThrough reads partition 0 from its start through offset `last`.
func consumeThrough(ctx context.Context, bootstrap, topic string, last int64) ([]*kgo.Record, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) == 0 || out[len(out)-1].Offset < last {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("timed out with %d records before offset %d", len(out), last)
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			return nil, errs[0].Err
		}
		out = append(out, fetches.Records()...)
	}
	return out, nil
}

// batchLayout walks the log's batches from `from` to `end` with raw fetches: each batch's
// offsets, record count and codec; batches holding no record are listed apart.
func batchLayout(ctx context.Context, tgt *target, from, end int64) (batches, empty []string, err error) {
	offset := from
	for offset < end {
		r, err := tgt.fetchRaw(ctx, 0, offset)
		if err != nil {
			return nil, nil, fmt.Errorf("fetch batches at %d: %w", offset, err)
		}
		if r.ErrorCode != 0 {
			return nil, nil, fmt.Errorf("fetch batches at %d: error code %d", offset, r.ErrorCode)
		}
		next := offset
		for b := r.RecordBatches; len(b) >= 61; {
			length := int(binary.BigEndian.Uint32(b[8:12]))
			if 12+length > len(b) {
				break // a partial batch at the end of the answer
			}
			base := int64(binary.BigEndian.Uint64(b[0:8]))
			last := base + int64(binary.BigEndian.Uint32(b[23:27]))
			count := binary.BigEndian.Uint32(b[57:61])
			line := fmt.Sprintf("%d-%d n=%d codec=%d", base, last, count, binary.BigEndian.Uint16(b[21:23])&0x07)
			if count == 0 {
				empty = append(empty, line)
			} else {
				batches = append(batches, line)
			}
			next = last + 1
			b = b[12+length:]
		}
		if next == offset {
			return nil, nil, fmt.Errorf("fetch at %d returned no whole batch", offset)
		}
		offset = next
	}
	return batches, empty, nil
}
