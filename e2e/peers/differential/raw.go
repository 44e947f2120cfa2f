package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawRecord is one record of a hand-built batch.
type rawRecord struct {
	key, value []byte
	headers    [][2]string
	// tsDelta is the record's timestamp relative to the batch's first timestamp.
	tsDelta int64
}

// encodeBatch builds a RecordBatch v2 (no compression, no producer id) as a broker receives
// it, with a correct CRC-32C unless corruptCRC.
func encodeBatch(firstTimestamp int64, records []rawRecord, corruptCRC bool) []byte {
	var body []byte
	maxTimestamp := firstTimestamp
	for i, r := range records {
		if firstTimestamp+r.tsDelta > maxTimestamp {
			maxTimestamp = firstTimestamp + r.tsDelta
		}
		var rec []byte
		rec = append(rec, 0) // attributes
		rec = binary.AppendVarint(rec, r.tsDelta)
		rec = binary.AppendVarint(rec, int64(i))
		rec = appendVarBytes(rec, r.key)
		rec = appendVarBytes(rec, r.value)
		rec = binary.AppendVarint(rec, int64(len(r.headers)))
		for _, h := range r.headers {
			rec = appendVarBytes(rec, []byte(h[0]))
			rec = appendVarBytes(rec, []byte(h[1]))
		}
		body = binary.AppendVarint(body, int64(len(rec)))
		body = append(body, rec...)
	}
	var b []byte
	b = binary.BigEndian.AppendUint64(b, 0)                      // base offset
	b = binary.BigEndian.AppendUint32(b, 0)                      // batch length, below
	b = binary.BigEndian.AppendUint32(b, 0xFFFFFFFF)             // partition leader epoch
	b = append(b, 2)                                             // magic
	b = binary.BigEndian.AppendUint32(b, 0)                      // crc, below
	b = binary.BigEndian.AppendUint16(b, 0)                      // attributes
	b = binary.BigEndian.AppendUint32(b, uint32(len(records)-1)) // last offset delta
	b = binary.BigEndian.AppendUint64(b, uint64(firstTimestamp)) // first timestamp
	b = binary.BigEndian.AppendUint64(b, uint64(maxTimestamp))   // max timestamp
	b = binary.BigEndian.AppendUint64(b, 0xFFFFFFFFFFFFFFFF)     // producer id -1
	b = binary.BigEndian.AppendUint16(b, 0xFFFF)                 // producer epoch -1
	b = binary.BigEndian.AppendUint32(b, 0xFFFFFFFF)             // base sequence -1
	b = binary.BigEndian.AppendUint32(b, uint32(len(records)))   // record count
	b = append(b, body...)
	binary.BigEndian.PutUint32(b[8:12], uint32(len(b)-12))
	crc := crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli))
	if corruptCRC {
		crc ^= 0xDEADBEEF
	}
	binary.BigEndian.PutUint32(b[17:21], crc)
	return b
}

func appendVarBytes(b, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(b, -1)
	}
	b = binary.AppendVarint(b, int64(len(v)))
	return append(b, v...)
}

// target is the one broker the raw requests go to: the leader of the scenario's partitions.
type target struct {
	client  *kgo.Client
	broker  *kgo.Broker
	topic   string
	topicID [16]byte
}

// produceRaw sends one batch to one partition (acks=all) and returns the partition's result.
func (t *target) produceRaw(ctx context.Context, partition int32, batch []byte) (kmsg.ProduceResponseTopicPartition, error) {
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 30000
	topic := kmsg.NewProduceRequestTopic()
	topic.Topic = t.topic
	topic.TopicID = t.topicID
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition = partition
	p.Records = batch
	topic.Partitions = append(topic.Partitions, p)
	req.Topics = append(req.Topics, topic)
	resp, err := req.RequestWith(ctx, t.broker)
	if err != nil {
		return kmsg.ProduceResponseTopicPartition{}, err
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.Partition == partition {
				return rp, nil
			}
		}
	}
	return kmsg.ProduceResponseTopicPartition{}, fmt.Errorf("no result for partition %d in the produce response", partition)
}

// fetchRaw fetches one partition from an offset without waiting.
func (t *target) fetchRaw(ctx context.Context, partition int32, offset int64) (kmsg.FetchResponseTopicPartition, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 1
	req.MaxBytes = 1 << 20
	req.SessionEpoch = -1
	topic := kmsg.NewFetchRequestTopic()
	topic.Topic = t.topic
	topic.TopicID = t.topicID
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition = partition
	p.FetchOffset = offset
	p.PartitionMaxBytes = 1 << 20
	topic.Partitions = append(topic.Partitions, p)
	req.Topics = append(req.Topics, topic)
	resp, err := req.RequestWith(ctx, t.broker)
	if err != nil {
		return kmsg.FetchResponseTopicPartition{}, err
	}
	if resp.ErrorCode != 0 {
		return kmsg.FetchResponseTopicPartition{ErrorCode: resp.ErrorCode}, nil
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.Partition == partition {
				return rp, nil
			}
		}
	}
	return kmsg.FetchResponseTopicPartition{}, fmt.Errorf("no result for partition %d in the fetch response", partition)
}

// listOffset asks for the offset of one partition at a timestamp (-1 latest, -2 earliest,
// -3 max timestamp, or a time in milliseconds).
func (t *target) listOffset(ctx context.Context, partition int32, timestamp int64) (kmsg.ListOffsetsResponseTopicPartition, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	topic := kmsg.NewListOffsetsRequestTopic()
	topic.Topic = t.topic
	p := kmsg.NewListOffsetsRequestTopicPartition()
	p.Partition = partition
	p.Timestamp = timestamp
	p.CurrentLeaderEpoch = -1
	topic.Partitions = append(topic.Partitions, p)
	req.Topics = append(req.Topics, topic)
	resp, err := req.RequestWith(ctx, t.broker)
	if err != nil {
		return kmsg.ListOffsetsResponseTopicPartition{}, err
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.Partition == partition {
				return rp, nil
			}
		}
	}
	return kmsg.ListOffsetsResponseTopicPartition{}, fmt.Errorf("no result for partition %d in the list-offsets response", partition)
}
