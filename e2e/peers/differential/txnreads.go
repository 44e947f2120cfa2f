package main

// The reads of the transactions scenario (transactions.go): latest offsets and fetches at
// either isolation level, and what a client makes of a fetch answer.

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Isolation levels of ListOffsets and Fetch.
const (
	readUncommitted int8 = 0
	readCommitted   int8 = 1
)

// listLatest asks for a partition's latest offset at an isolation level: "ERROR@offset".
func (b *txnBroker) listLatest(ctx context.Context, topic string, partition int32, isolation int8) (string, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	req.IsolationLevel = isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, b.broker)
	if err != nil {
		return "", err
	}
	for _, t := range resp.Topics {
		for _, r := range t.Partitions {
			if r.Partition == partition {
				return fmt.Sprintf("%s@%d", errName(r.ErrorCode), r.Offset), nil
			}
		}
	}
	return "", fmt.Errorf("no result for partition %d in the list-offsets response", partition)
}

// fetched is what a client makes of one Fetch answer for a partition.
type fetched struct {
	errorCode      string
	highWatermark  int64
	lastStable     int64
	abortedFirst   []int64  // the aborted transactions' first offsets, sorted; nil if null
	values         []string // "offset=value" of the records a client returns
	controlBatches []string // "offset:COMMIT(coordinator_epoch=N)" or "offset:ABORT(...)"
}

// fetch reads a partition from an offset at an isolation level (one answer, no waiting)
// and applies the aborted-transactions list as Kafka's consumer does: a transactional batch
// of a producer with an aborted transaction starting at or before it is skipped, until
// that producer's abort marker; control batches are never returned.
func (b *txnBroker) fetch(ctx context.Context, topic string, topicID [16]byte, partition int32, offset int64, isolation int8) (fetched, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 1
	req.MaxBytes = 1 << 20
	req.IsolationLevel = isolation
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, topicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, b.broker)
	if err != nil {
		return fetched{}, err
	}
	if resp.ErrorCode != 0 {
		return fetched{errorCode: errName(resp.ErrorCode)}, nil
	}
	for _, t := range resp.Topics {
		for _, r := range t.Partitions {
			if r.Partition == partition {
				return clientView(r)
			}
		}
	}
	return fetched{}, fmt.Errorf("no result for partition %d in the fetch response", partition)
}

func clientView(r kmsg.FetchResponseTopicPartition) (fetched, error) {
	out := fetched{errorCode: errName(r.ErrorCode), highWatermark: r.HighWatermark, lastStable: r.LastStableOffset}
	aborted := append([]kmsg.FetchResponseTopicPartitionAbortedTransaction(nil), r.AbortedTransactions...)
	sort.Slice(aborted, func(i, j int) bool { return aborted[i].FirstOffset < aborted[j].FirstOffset })
	if r.AbortedTransactions != nil {
		out.abortedFirst = []int64{}
	}
	for _, a := range aborted {
		out.abortedFirst = append(out.abortedFirst, a.FirstOffset)
	}
	abortedProducers := map[int64]bool{}
	for raw := r.RecordBatches; len(raw) >= 61; {
		length := int(binary.BigEndian.Uint32(raw[8:12]))
		if 12+length > len(raw) {
			break // a partial batch at the end of the answer
		}
		var batch kmsg.RecordBatch
		if err := batch.ReadFrom(raw[:12+length]); err != nil {
			return out, fmt.Errorf("decode a batch: %w", err)
		}
		raw = raw[12+length:]
		last := batch.FirstOffset + int64(batch.LastOffsetDelta)
		for len(aborted) > 0 && aborted[0].FirstOffset <= last {
			abortedProducers[aborted[0].ProducerID] = true
			aborted = aborted[1:]
		}
		transactional, control := batch.Attributes&0x10 != 0, batch.Attributes&0x20 != 0
		records, err := batchRecords(batch)
		if err != nil {
			return out, err
		}
		if control {
			// A marker: key (version, type 0 abort / 1 commit), value (version,
			// coordinator epoch).
			kind, coordinatorEpoch := "?", int32(-1)
			if len(records) == 1 && len(records[0].Key) >= 4 {
				kind = map[uint16]string{0: "ABORT", 1: "COMMIT"}[binary.BigEndian.Uint16(records[0].Key[2:4])]
			}
			if len(records) == 1 && len(records[0].Value) >= 6 {
				coordinatorEpoch = int32(binary.BigEndian.Uint32(records[0].Value[2:6]))
			}
			out.controlBatches = append(out.controlBatches, fmt.Sprintf("%d:%s(coordinator_epoch=%d)", batch.FirstOffset, kind, coordinatorEpoch))
			if kind == "ABORT" {
				delete(abortedProducers, batch.ProducerID)
			}
			continue
		}
		if transactional && abortedProducers[batch.ProducerID] {
			continue
		}
		for _, rec := range records {
			out.values = append(out.values, fmt.Sprintf("%d=%s", batch.FirstOffset+int64(rec.OffsetDelta), rec.Value))
		}
	}
	return out, nil
}

// batchRecords decodes the records of an uncompressed batch (the scenario writes no other).
func batchRecords(batch kmsg.RecordBatch) ([]kmsg.Record, error) {
	if batch.Attributes&0x07 != 0 {
		return nil, fmt.Errorf("a compressed batch at %d", batch.FirstOffset)
	}
	var out []kmsg.Record
	for src := batch.Records; len(src) > 0; {
		length, n := binary.Varint(src)
		if n <= 0 || int(length) < 0 || n+int(length) > len(src) {
			return nil, fmt.Errorf("a bad record length in the batch at %d", batch.FirstOffset)
		}
		var rec kmsg.Record
		if err := rec.ReadFrom(src[:n+int(length)]); err != nil {
			return nil, fmt.Errorf("decode a record of the batch at %d: %w", batch.FirstOffset, err)
		}
		out = append(out, rec)
		src = src[n+int(length):]
	}
	return out, nil
}
