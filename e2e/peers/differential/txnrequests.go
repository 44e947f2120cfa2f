package main

// Raw requests of the transactions scenario (transactions.go), sent through a client whose
// request versions are pinned (txnVersions: transaction version 1; txnVersionsV2 in
// txnv2.go), each answer reduced to what may be compared: Kafka error names, epochs,
// offsets, states. Producer ids never leave this file's callers: they differ between the
// brokers.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// txnVersions pins the requests whose newer versions mean transaction version 2 (KIP-890
// part 2), which both brokers finalize on a new cluster, to transaction version 1, as
// librdkafka and older Java clients speak it: EndTxn v4, AddPartitionsToTxn v3 (v4+ is
// the brokers' verification), Produce v11 (v12+ has the leader add the partition),
// TxnOffsetCommit v4. OffsetFetch stays at v7, the last with one group and require_stable
// at the top.
var txnVersions = map[kmsg.Key]int16{
	kmsg.Produce:            11,
	kmsg.EndTxn:             4,
	kmsg.AddPartitionsToTxn: 3,
	kmsg.TxnOffsetCommit:    4,
	kmsg.OffsetFetch:        7,
}

// txnVersionsOld is txnVersions with EndTxn and AddPartitionsToTxn at v1, the versions
// before PRODUCER_FENCED (KIP-588): such clients are answered INVALID_PRODUCER_EPOCH.
var txnVersionsOld = map[kmsg.Key]int16{
	kmsg.Produce:            11,
	kmsg.EndTxn:             1,
	kmsg.AddPartitionsToTxn: 1,
	kmsg.InitProducerID:     3,
}

// Transient coordinator answers a client retries: the coordinator is loading or moving, or
// the previous transaction's markers are still being written.
var txnTransient = map[int16]bool{
	kerr.CoordinatorLoadInProgress.Code: true,
	kerr.CoordinatorNotAvailable.Code:   true,
	kerr.NotCoordinator.Code:            true,
	kerr.ConcurrentTransactions.Code:    true,
}

const txnRetryFor = 30 * time.Second

// errName is a Kafka error code as Kafka names it ("NONE" for 0).
func errName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	var ke *kerr.Error
	if errors.As(kerr.ErrorForCode(code), &ke) && ke.Code == code {
		return ke.Message
	}
	return fmt.Sprintf("code %d", code)
}

// txnBroker is the one broker of the scenario seen through a version-pinned client.
type txnBroker struct {
	client *kgo.Client
	broker *kgo.Broker
	nodeID int32
}

func newTxnBroker(ctx context.Context, bootstrap string, maxes map[kmsg.Key]int16) (*txnBroker, error) {
	versions := kversion.Stable()
	for k, v := range maxes {
		versions.SetMaxKeyVersion(int16(k), v)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.MaxVersions(versions))
	if err != nil {
		return nil, err
	}
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil || len(meta.Brokers) != 1 {
		cl.Close()
		return nil, fmt.Errorf("metadata for the broker id: %v", err)
	}
	node := meta.Brokers[0].NodeID
	return &txnBroker{client: cl, broker: cl.Broker(int(node)), nodeID: node}, nil
}

// retry sends a coordinator request until its answer is not transient or txnRetryFor
// passed; code reads the answer's error code.
func retry[R kmsg.Response](ctx context.Context, send func() (R, error), code func(R) int16) (R, error) {
	deadline := time.Now().Add(txnRetryFor)
	for {
		resp, err := send()
		if err != nil || !txnTransient[code(resp)] || time.Now().After(deadline) {
			return resp, err
		}
		select {
		case <-ctx.Done():
			return resp, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// findCoordinator asks for the coordinator of a transactional id: its error and whether it
// is this broker. A new cluster creates __transaction_state first (retried meanwhile).
func (b *txnBroker) findCoordinator(ctx context.Context, id string) (string, bool, error) {
	var code int16
	var node int32
	_, err := retry(ctx, func() (*kmsg.FindCoordinatorResponse, error) {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = 1
		req.CoordinatorKey = id
		req.CoordinatorKeys = []string{id}
		resp, err := req.RequestWith(ctx, b.broker)
		if err != nil {
			return nil, err
		}
		code, node = resp.ErrorCode, resp.NodeID
		if len(resp.Coordinators) == 1 {
			code, node = resp.Coordinators[0].ErrorCode, resp.Coordinators[0].NodeID
		}
		return resp, nil
	}, func(*kmsg.FindCoordinatorResponse) int16 { return code })
	return errName(code), code == 0 && node == b.nodeID, err
}

// producer is a transactional id's producer id and epoch, and the next sequence number of
// each partition it wrote with that epoch.
type producer struct {
	id    string
	pid   int64
	epoch int16
	seq   map[string]int32
}

// initProducerID sends InitProducerId; on success the producer's id and epoch.
func (b *txnBroker) initProducerID(ctx context.Context, id *string, timeoutMs int32) (string, *producer, error) {
	resp, err := retry(ctx, func() (*kmsg.InitProducerIDResponse, error) {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = id
		req.TransactionTimeoutMillis = timeoutMs
		return req.RequestWith(ctx, b.broker)
	}, func(r *kmsg.InitProducerIDResponse) int16 { return r.ErrorCode })
	if err != nil {
		return "", nil, err
	}
	if resp.ErrorCode != 0 {
		return errName(resp.ErrorCode), nil, nil
	}
	name := ""
	if id != nil {
		name = *id
	}
	return "NONE", &producer{id: name, pid: resp.ProducerID, epoch: resp.ProducerEpoch, seq: map[string]int32{}}, nil
}

// reinit sends InitProducerId naming the producer's id and an epoch (KIP-360): its error.
func (b *txnBroker) reinit(ctx context.Context, p *producer, epoch int16) (string, error) {
	resp, err := retry(ctx, func() (*kmsg.InitProducerIDResponse, error) {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = &p.id
		req.TransactionTimeoutMillis = 60000
		req.ProducerID, req.ProducerEpoch = p.pid, epoch
		return req.RequestWith(ctx, b.broker)
	}, func(r *kmsg.InitProducerIDResponse) int16 { return r.ErrorCode })
	if err != nil {
		return "", err
	}
	return errName(resp.ErrorCode), nil
}

// addPartitions sends AddPartitionsToTxn (v3 or below): each partition's error as
// "topic:partition=ERROR", sorted; names names a partition in observations.
func (b *txnBroker) addPartitions(ctx context.Context, id string, pid int64, epoch int16, parts map[string][]int32, names func(string, int32) string) ([]string, error) {
	resp, err := retry(ctx, func() (*kmsg.AddPartitionsToTxnResponse, error) {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
		topics := make([]string, 0, len(parts))
		for t := range parts {
			topics = append(topics, t)
		}
		sort.Strings(topics)
		for _, t := range topics {
			rt := kmsg.NewAddPartitionsToTxnRequestTopic()
			rt.Topic, rt.Partitions = t, parts[t]
			req.Topics = append(req.Topics, rt)
		}
		return req.RequestWith(ctx, b.broker)
	}, func(r *kmsg.AddPartitionsToTxnResponse) int16 {
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if txnTransient[p.ErrorCode] {
					return p.ErrorCode
				}
			}
		}
		return 0
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out = append(out, names(t.Topic, p.Partition)+"="+errName(p.ErrorCode))
		}
	}
	sort.Strings(out)
	return out, nil
}

// endTxn sends EndTxn: its error.
func (b *txnBroker) endTxn(ctx context.Context, id string, pid int64, epoch int16, commit bool) (string, error) {
	resp, err := retry(ctx, func() (*kmsg.EndTxnResponse, error) {
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
		return req.RequestWith(ctx, b.broker)
	}, func(r *kmsg.EndTxnResponse) int16 { return r.ErrorCode })
	if err != nil {
		return "", err
	}
	return errName(resp.ErrorCode), nil
}

// produce writes one transactional batch of the producer (its next sequence number for
// the partition) and returns the partition's error and base offset.
func (b *txnBroker) produce(ctx context.Context, p *producer, topic string, partition int32, values ...string) (string, int64, error) {
	key := fmt.Sprintf("%s:%d", topic, partition)
	var records []rawRecord
	for _, v := range values {
		records = append(records, rawRecord{value: []byte(v)})
	}
	batch := asTransactional(encodeBatch(time.Now().UnixMilli(), records, false), p.pid, p.epoch, p.seq[key])
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID = &p.id
	req.Acks = -1
	req.TimeoutMillis = 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, b.broker)
	if err != nil {
		return "", 0, err
	}
	for _, t := range resp.Topics {
		for _, r := range t.Partitions {
			if r.Partition == partition {
				if r.ErrorCode == 0 {
					p.seq[key] += int32(len(values))
				}
				return errName(r.ErrorCode), r.BaseOffset, nil
			}
		}
	}
	return "", 0, fmt.Errorf("no result for %s in the produce response", key)
}

// asTransactional turns a batch of encodeBatch into one of a transactional producer: the
// transactional attribute, producer id, epoch and base sequence, and the CRC again.
func asTransactional(b []byte, pid int64, epoch int16, baseSequence int32) []byte {
	binary.BigEndian.PutUint16(b[21:23], binary.BigEndian.Uint16(b[21:23])|0x10)
	binary.BigEndian.PutUint64(b[43:51], uint64(pid))
	binary.BigEndian.PutUint16(b[51:53], uint16(epoch))
	binary.BigEndian.PutUint32(b[53:57], uint32(baseSequence))
	binary.BigEndian.PutUint32(b[17:21], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// txnState is a transactional id's DescribeTransactions answer, producer id left out.
type txnState struct {
	errorCode string
	state     string
	epoch     int16
	timeoutMs int32
	topics    []string // "topic:partition", sorted
}

func (s txnState) String() string {
	return fmt.Sprintf("%s state=%s epoch=%d timeout_ms=%d partitions=%v", s.errorCode, s.state, s.epoch, s.timeoutMs, s.topics)
}

// groupPartition is the __consumer_offsets partition of a group as Kafka places it:
// abs(Java's String.hashCode) modulo offsets.topic.num.partitions (50 on both brokers).
func groupPartition(group string) int32 {
	var h int32
	for _, c := range group { // the scenario's group names are ASCII
		h = 31*h + int32(c)
	}
	if h == math.MinInt32 {
		return 0
	}
	if h < 0 {
		h = -h
	}
	return h % 50
}

// describe sends DescribeTransactions for one id.
func (b *txnBroker) describe(ctx context.Context, id string, names func(string, int32) string) (txnState, error) {
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	resp, err := req.RequestWith(ctx, b.broker)
	if err != nil {
		return txnState{}, err
	}
	if len(resp.TransactionStates) != 1 {
		return txnState{}, fmt.Errorf("%d transaction states in the answer", len(resp.TransactionStates))
	}
	t := resp.TransactionStates[0]
	out := txnState{errorCode: errName(t.ErrorCode), state: t.State, epoch: t.ProducerEpoch, timeoutMs: t.TimeoutMillis, topics: []string{}}
	for _, topic := range t.Topics {
		for _, p := range topic.Partitions {
			out.topics = append(out.topics, names(topic.Topic, p))
		}
	}
	sort.Strings(out.topics)
	return out, nil
}

// waitState polls DescribeTransactions until the id is in one of the states (markers are
// written after EndTxn is answered; a timed-out transaction is aborted by a periodic
// check) or the deadline passes; it returns the last answer.
func (b *txnBroker) waitState(ctx context.Context, id string, names func(string, int32) string, wait time.Duration, states ...string) (txnState, error) {
	deadline := time.Now().Add(wait)
	for {
		s, err := b.describe(ctx, id, names)
		if err != nil {
			return s, err
		}
		for _, want := range states {
			if s.state == want {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			return s, nil
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// listTransactions sends ListTransactions with a states filter: "name=state" for the ids
// names accepts (others belong to other runs), sorted, and the unknown state filters.
func (b *txnBroker) listTransactions(ctx context.Context, states []string, names func(string) (string, bool)) ([]string, []string, string, error) {
	req := kmsg.NewPtrListTransactionsRequest()
	req.StateFilters = states
	resp, err := req.RequestWith(ctx, b.broker)
	if err != nil {
		return nil, nil, "", err
	}
	listed := []string{}
	for _, t := range resp.TransactionStates {
		if name, ok := names(t.TransactionalID); ok {
			listed = append(listed, name+"="+t.TransactionState)
		}
	}
	sort.Strings(listed)
	unknown := append([]string{}, resp.UnknownStateFilters...)
	sort.Strings(unknown)
	return listed, unknown, errName(resp.ErrorCode), nil
}

// describeProducers sends DescribeProducers for one partition: its error and each active
// producer's epoch, last sequence, coordinator epoch and open transaction's first offset,
// sorted (producer ids and timestamps left out).
func (b *txnBroker) describeProducers(ctx context.Context, topic string, partition int32) (string, []string, error) {
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, b.broker)
	if err != nil {
		return "", nil, err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.Partition != partition {
				continue
			}
			producers := []string{}
			for _, a := range p.ActiveProducers {
				producers = append(producers, fmt.Sprintf("epoch=%d last_sequence=%d coordinator_epoch=%d txn_start=%d",
					a.ProducerEpoch, a.LastSequence, a.CoordinatorEpoch, a.CurrentTxnStartOffset))
			}
			sort.Strings(producers)
			return errName(p.ErrorCode), producers, nil
		}
	}
	return "", nil, fmt.Errorf("no result for partition %d in the describe-producers response", partition)
}

// addOffsets sends AddOffsetsToTxn for a group: its error.
func (b *txnBroker) addOffsets(ctx context.Context, p *producer, group string) (string, error) {
	resp, err := retry(ctx, func() (*kmsg.AddOffsetsToTxnResponse, error) {
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = p.id, p.pid, p.epoch, group
		return req.RequestWith(ctx, b.broker)
	}, func(r *kmsg.AddOffsetsToTxnResponse) int16 { return r.ErrorCode })
	if err != nil {
		return "", err
	}
	return errName(resp.ErrorCode), nil
}

// txnOffsetCommit sends TxnOffsetCommit as a memberless producer: "partition=ERROR", sorted.
func (b *txnBroker) txnOffsetCommit(ctx context.Context, p *producer, group, topic string, offsets map[int32]int64) ([]string, error) {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = p.id, group, p.pid, p.epoch
	req.Generation, req.MemberID = -1, ""
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	for partition, offset := range offsets {
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		meta := fmt.Sprintf("txn-%d", offset)
		rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = partition, offset, -1, &meta
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, b.broker)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range resp.Topics {
		for _, r := range t.Partitions {
			out = append(out, fmt.Sprintf("%d=%s", r.Partition, errName(r.ErrorCode)))
		}
	}
	sort.Strings(out)
	return out, nil
}

// offsetFetch sends OffsetFetch v7 for a group's partitions: the top-level error and
// "partition=ERROR@offset(metadata)", sorted.
func (b *txnBroker) offsetFetch(ctx context.Context, group, topic string, partitions []int32, requireStable bool) (string, []string, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	req.RequireStable = requireStable
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, partitions
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, b.broker)
	if err != nil {
		return "", nil, err
	}
	var out []string
	for _, t := range resp.Topics {
		for _, r := range t.Partitions {
			meta := "<null>"
			if r.Metadata != nil {
				meta = *r.Metadata
			}
			out = append(out, fmt.Sprintf("%d=%s@%d(%s)", r.Partition, errName(r.ErrorCode), r.Offset, meta))
		}
	}
	sort.Strings(out)
	return errName(resp.ErrorCode), out, nil
}

// unstable reports whether an offsetFetch answer still has offsets pending in a transaction.
func unstable(top string, partitions []string) bool {
	if top == "UNSTABLE_OFFSET_COMMIT" {
		return true
	}
	for _, p := range partitions {
		if strings.Contains(p, "UNSTABLE_OFFSET_COMMIT") {
			return true
		}
	}
	return false
}
