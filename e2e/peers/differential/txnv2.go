package main

// Transaction version 2 (KIP-890 part 2) in the transactions scenario (transactions.go):
// a producer as a Kafka 4 client drives it, with raw requests at the version 2 versions
// (txnVersionsV2): no AddPartitionsToTxn or AddOffsetsToTxn (the partition leader and the
// group coordinator add the partitions), an epoch bumped by every EndTxn and answered by
// it, retries recognised by the epoch before the bump.
//
//	v2_features   ApiVersions v4: transaction.version supported and finalized; the
//	              versions of the requests that carry it
//	v2_commit     InitProducerId, Produce v12 to 3 partitions, TxnOffsetCommit v5;
//	              OffsetFetch (require_stable) and DescribeTransactions while open;
//	              EndTxn v5 commit (its epoch); then the reads, offsets, DescribeProducers
//	              and DescribeTransactions once complete
//	v2_retries    EndTxn v5 again: the commit retried with the epoch before the bump,
//	              with the current one, an abort with the old epoch (and EndTxn v4 with
//	              either epoch); an empty abort (a bump), a retry of it, older epochs; a
//	              late Produce v12 of the old epoch; the next transaction from sequence
//	              0; an aborted one; the reads
//	v2_timed_out  a transaction aborted by its timeout, then the producer's EndTxn v5
//	              with the epoch it had (abort, then commit), then InitProducerId again
//
// Epochs are compared (a new transactional id starts at 0 on both brokers); producer ids
// are not: EndTxn's answer is recorded as the same id as before, a new one, or none.

import (
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnVersionsV2 are the versions of a transaction version 2 client: Produce v12 and
// TxnOffsetCommit v5 have the partition added implicitly, EndTxn v5 bumps the epoch. The
// other requests stay as txnVersions pins them; ApiVersions v4 carries the features.
var txnVersionsV2 = map[kmsg.Key]int16{
	kmsg.ApiVersions:        4,
	kmsg.Produce:            12,
	kmsg.EndTxn:             5,
	kmsg.AddPartitionsToTxn: 5,
	kmsg.TxnOffsetCommit:    5,
	kmsg.OffsetFetch:        7,
}

// v2Transient are the answers a version 2 producer retries: txnTransient's, and
// NOT_ENOUGH_REPLICAS, which a leader adding the partition answers while the previous
// transaction's markers are still being written (how it passes on the coordinator's
// CONCURRENT_TRANSACTIONS to a producer).
var v2Transient = map[string]bool{
	errName(kerr.NotEnoughReplicas.Code):         true,
	errName(kerr.ConcurrentTransactions.Code):    true,
	errName(kerr.CoordinatorLoadInProgress.Code): true,
	errName(kerr.CoordinatorNotAvailable.Code):   true,
	errName(kerr.NotCoordinator.Code):            true,
}

// v2Partitions are the partitions of the v2 topic the first transaction writes.
var v2Partitions = []int32{0, 1, 2}

// v2Features: the transaction.version feature and the versions that depend on it.
func (t *txnScenario) v2Features() error {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "differential", "1"
	resp, err := req.RequestWith(t.ctx, t.v2.broker)
	if err != nil {
		return err
	}
	t.set("v2.api_versions.version", resp.Version)
	t.set("v2.api_versions.error", errName(resp.ErrorCode))
	// Only transaction.version: Kafka lists other features (metadata.version, group.version,
	// ...) that are not this part's subject.
	supported, finalized := "absent", "absent"
	for _, f := range resp.SupportedFeatures {
		if f.Name == "transaction.version" {
			supported = fmt.Sprintf("%d-%d", f.MinVersion, f.MaxVersion)
		}
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "transaction.version" {
			finalized = fmt.Sprintf("%d-%d", f.MinVersionLevel, f.MaxVersionLevel)
		}
	}
	t.set("v2.api_versions.transaction_version.supported", supported)
	t.set("v2.api_versions.transaction_version.finalized", finalized)
	maxes := map[int16]int16{}
	for _, k := range resp.ApiKeys {
		maxes[k.ApiKey] = k.MaxVersion
	}
	for _, key := range []kmsg.Key{kmsg.EndTxn, kmsg.TxnOffsetCommit, kmsg.AddPartitionsToTxn} {
		t.set("v2.api_versions.max."+kmsg.NameForKey(int16(key)), maxes[int16(key)])
	}
	// Produce: v12 is the transaction version 2 one; v13 (topic ids, KIP-516) is not about
	// transactions, so only whether v12 is offered is compared.
	t.set("v2.api_versions.max.Produce_at_least_12", maxes[int16(kmsg.Produce)] >= 12)
	return nil
}

// endV2 sends EndTxn v5 at an epoch (the producer's, or another to play a retry or a
// zombie). Its answer is "ERROR epoch=E producer_id=same|new|none"; on NONE the producer
// goes on with the answered producer id and epoch, its sequences from 0 again.
func (t *txnScenario) endV2(p *producer, epoch int16, commit bool) (string, error) {
	resp, err := retry(t.ctx, func() (*kmsg.EndTxnResponse, error) {
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = p.id, p.pid, epoch, commit
		return req.RequestWith(t.ctx, t.v2.broker)
	}, func(r *kmsg.EndTxnResponse) int16 { return r.ErrorCode })
	if err != nil {
		return "", err
	}
	if resp.Version < 5 {
		return "", fmt.Errorf("EndTxn sent at v%d, not v5", resp.Version)
	}
	id := "new"
	switch resp.ProducerID {
	case p.pid:
		id = "same"
	case -1:
		id = "none"
	}
	if resp.ErrorCode == 0 && (resp.ProducerID != p.pid || resp.ProducerEpoch != p.epoch) {
		p.pid, p.epoch, p.seq = resp.ProducerID, resp.ProducerEpoch, map[string]int32{}
	}
	return fmt.Sprintf("%s epoch=%d producer_id=%s", errName(resp.ErrorCode), resp.ProducerEpoch, id), nil
}

// produceV2 writes one transactional batch with Produce v12 (the leader adds the partition
// to the transaction), retried while the answer is transient: "ERROR@base_offset".
func (t *txnScenario) produceV2(p *producer, partition int32, values ...string) (string, error) {
	deadline := time.Now().Add(txnRetryFor)
	for {
		code, offset, err := t.v2.produce(t.ctx, p, t.v2Topic, partition, values...)
		if err != nil {
			return "", err
		}
		if !v2Transient[code] || time.Now().After(deadline) {
			return fmt.Sprintf("%s@%d", code, offset), nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// offsetCommitV2 sends TxnOffsetCommit v5 (the group coordinator adds its partition to the
// transaction), retried while a partition's answer is transient.
func (t *txnScenario) offsetCommitV2(p *producer, offsets map[int32]int64) ([]string, error) {
	deadline := time.Now().Add(txnRetryFor)
	for {
		answers, err := t.v2.txnOffsetCommit(t.ctx, p, t.v2Group, t.v2Topic, offsets)
		if err != nil || time.Now().After(deadline) {
			return answers, err
		}
		transient := false
		for _, a := range answers {
			transient = transient || v2Transient[a[strings.LastIndex(a, "=")+1:]]
		}
		if !transient {
			return answers, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// settleV2 waits until the producer's transaction is complete: its state.
func (t *txnScenario) settleV2(p *producer) (txnState, error) {
	return t.v2.waitState(t.ctx, p.id, t.partitionName, txnSettle, "CompleteCommit", "CompleteAbort", "Empty")
}

// describeV2 records DescribeTransactions of the producer's id under key.
func (t *txnScenario) describeV2(key string, p *producer) error {
	described, err := t.v2.describe(t.ctx, p.id, t.partitionName)
	if err != nil {
		return err
	}
	t.set(key, described.String())
	return nil
}

// producersV2 records DescribeProducers of each v2 partition under key.
func (t *txnScenario) producersV2(key string) error {
	for _, partition := range v2Partitions {
		code, producers, err := t.v2.describeProducers(t.ctx, t.v2Topic, partition)
		if err != nil {
			return err
		}
		t.set(fmt.Sprintf("%s.p%d", key, partition), append([]string{code}, producers...))
	}
	return nil
}

// v2Commit: a version 2 transaction on every partition and the group's offsets, committed.
func (t *txnScenario) v2Commit() error {
	p, err := t.init("v2.commit.init", "v2", txnTimeoutMs)
	if err != nil || p == nil {
		return err
	}
	for _, partition := range v2Partitions {
		produced, err := t.produceV2(p, partition, fmt.Sprintf("v2c1-p%d-0", partition), fmt.Sprintf("v2c1-p%d-1", partition))
		if err != nil {
			return err
		}
		t.set(fmt.Sprintf("v2.commit.produce.p%d", partition), produced)
	}
	committed, err := t.offsetCommitV2(p, map[int32]int64{0: 3, 1: 4})
	if err != nil {
		return err
	}
	t.set("v2.commit.txn_offset_commit", committed)
	top, pending, err := t.v2.offsetFetch(t.ctx, t.v2Group, t.v2Topic, []int32{0, 1}, true)
	if err != nil {
		return err
	}
	t.set("v2.commit.offset_fetch_pending_require_stable.error", top)
	t.set("v2.commit.offset_fetch_pending_require_stable.partitions", pending)
	if err := t.describeV2("v2.commit.describe_transactions_open", p); err != nil {
		return err
	}
	ended, err := t.endV2(p, p.epoch, true)
	if err != nil {
		return err
	}
	t.set("v2.commit.end", ended)
	state, err := t.settleV2(p)
	if err != nil {
		return err
	}
	t.set("v2.commit.state_after", state.String())
	if err := t.observeTopicReads("v2.commit.read", t.v2, t.v2Topic, t.v2TopicID); err != nil {
		return err
	}
	if err := t.waitStableOffsets("v2.commit.offset_fetch_after", t.v2, t.v2Group, t.v2Topic); err != nil {
		return err
	}
	// The markers carry the bumped epoch, which the partitions' producer state takes.
	return t.producersV2("v2.commit.describe_producers_after")
}

// v2Retries: EndTxn v5 retried and refused around the committed transaction of v2Commit,
// a zombie's late write, then the next transactions of the producer.
func (t *txnScenario) v2Retries() error {
	p := t.producers["v2"]
	if p == nil {
		t.set("v2.retries", "no producer")
		return nil
	}
	// The transaction is CompleteCommit at epoch e (bumped by the commit); e-1 is the
	// epoch the producer committed with.
	committedWith := p.epoch - 1
	for _, c := range []struct {
		name   string
		epoch  int16
		commit bool
	}{
		{"commit_retry_pre_bump_epoch", committedWith, true},
		{"commit_current_epoch", p.epoch, true},
		{"abort_pre_bump_epoch", committedWith, false},
	} {
		ended, err := t.endV2(p, c.epoch, c.commit)
		if err != nil {
			return err
		}
		t.set("v2.retries."+c.name, ended)
	}
	// The same producer's EndTxn v4: Kafka reads an EndTxn by the request's version, so
	// version 1 rules apply whatever version the transaction was written with (the epoch
	// must be the current one; the same end again is a retry).
	for _, c := range []struct {
		name  string
		epoch int16
	}{{"end_v4_commit_current_epoch", p.epoch}, {"end_v4_commit_pre_bump_epoch", committedWith}} {
		code, err := t.b.endTxn(t.ctx, p.id, p.pid, c.epoch, true)
		if err != nil {
			return err
		}
		t.set("v2.retries."+c.name, code)
	}
	if err := t.describeV2("v2.retries.describe_transactions_after_retries", p); err != nil {
		return err
	}

	// A zombie of the committed transaction: its epoch, and the next sequence on p0 after
	// the two records it wrote there.
	stale := *p
	stale.epoch, stale.seq = committedWith, map[string]int32{fmt.Sprintf("%s:%d", t.v2Topic, 0): 2}

	// An abort with the current epoch and nothing in the transaction: the coordinator
	// aborts an empty transaction to hand the producer its next epoch. Epochs before it
	// are then a retry of that abort, or fenced.
	abortedWith := p.epoch
	ended, err := t.endV2(p, p.epoch, false)
	if err != nil {
		return err
	}
	t.set("v2.retries.empty_abort", ended)
	state, err := t.settleV2(p)
	if err != nil {
		return err
	}
	t.set("v2.retries.empty_abort.state_after", state.String())
	for _, c := range []struct {
		name   string
		epoch  int16
		commit bool
	}{
		{"empty_abort_retry", abortedWith, false},
		{"commit_after_empty_abort_pre_bump_epoch", abortedWith, true},
		{"abort_committed_epoch", committedWith, false},
		{"commit_committed_epoch", committedWith, true},
	} {
		ended, err := t.endV2(p, c.epoch, c.commit)
		if err != nil {
			return err
		}
		t.set("v2.retries."+c.name, ended)
	}

	// The zombie writes: it is refused, and neither opens a transaction nor is read.
	late, err := t.produceV2(&stale, 0, "v2-zombie")
	if err != nil {
		return err
	}
	t.set("v2.retries.late_produce", late)
	if err := t.describeV2("v2.retries.late_produce.describe_transactions", p); err != nil {
		return err
	}
	for _, iso := range []struct {
		name  string
		level int8
	}{{"read_uncommitted", readUncommitted}, {"read_committed", readCommitted}} {
		latest, err := t.v2.listLatest(t.ctx, t.v2Topic, 0, iso.level)
		if err != nil {
			return err
		}
		t.set("v2.retries.late_produce.p0.list_offsets_latest."+iso.name, latest)
	}

	// The next transactions, with the epoch of the empty abort: sequences from 0.
	if err := t.transactionV2("v2.retries.second", p, true, []int32{0, 1}, "v2c2", 10); err != nil {
		return err
	}
	if err := t.transactionV2("v2.retries.aborted", p, false, []int32{1, 2}, "v2a3", 20); err != nil {
		return err
	}
	if err := t.observeTopicReads("v2.retries.read", t.v2, t.v2Topic, t.v2TopicID); err != nil {
		return err
	}
	if err := t.waitStableOffsets("v2.retries.offset_fetch_after", t.v2, t.v2Group, t.v2Topic); err != nil {
		return err
	}
	return t.producersV2("v2.retries.describe_producers_after")
}

// transactionV2 runs one version 2 transaction: a record to each partition (value tag),
// the group's offset offsetBase+partition for each, EndTxn v5, the wait until complete;
// each answer recorded under key.
func (t *txnScenario) transactionV2(key string, p *producer, commit bool, parts []int32, tag string, offsetBase int64) error {
	offsets := map[int32]int64{}
	for _, partition := range parts {
		produced, err := t.produceV2(p, partition, fmt.Sprintf("%s-p%d-0", tag, partition))
		if err != nil {
			return err
		}
		t.set(fmt.Sprintf("%s.produce.p%d", key, partition), produced)
		offsets[partition] = offsetBase + int64(partition)
	}
	committed, err := t.offsetCommitV2(p, offsets)
	if err != nil {
		return err
	}
	t.set(key+".txn_offset_commit", committed)
	if err := t.describeV2(key+".describe_transactions_open", p); err != nil {
		return err
	}
	ended, err := t.endV2(p, p.epoch, commit)
	if err != nil {
		return err
	}
	t.set(key+".end", ended)
	state, err := t.settleV2(p)
	if err != nil {
		return err
	}
	t.set(key+".state_after", state.String())
	return nil
}

// v2TimedOut: a version 2 transaction past its transaction.timeout.ms is aborted by the
// coordinator (the scenario's brokers look every second), which bumps the epoch; the
// producer then ends it with the epoch it had, and a new InitProducerId goes on.
func (t *txnScenario) v2TimedOut() error {
	p, err := t.init("v2.timed_out.init", "v2-timed-out", 1000)
	if err != nil || p == nil {
		return err
	}
	produced, err := t.produceV2(p, 2, "v2-timed-out")
	if err != nil {
		return err
	}
	t.set("v2.timed_out.produce", produced)
	state, err := t.v2.waitState(t.ctx, p.id, t.partitionName, 60*time.Second, "CompleteAbort")
	if err != nil {
		return err
	}
	t.set("v2.timed_out.state_after_timeout", state.String())
	before := p.epoch
	for _, c := range []struct {
		name   string
		commit bool
	}{{"late_abort", false}, {"late_commit", true}} {
		ended, err := t.endV2(p, before, c.commit)
		if err != nil {
			return err
		}
		t.set("v2.timed_out."+c.name, ended)
	}
	if err := t.describeV2("v2.timed_out.describe_transactions", p); err != nil {
		return err
	}
	q, err := t.init("v2.timed_out.init_again", "v2-timed-out", txnTimeoutMs)
	if err != nil || q == nil {
		return err
	}
	produced, err = t.produceV2(q, 2, "v2-after-timeout")
	if err != nil {
		return err
	}
	ended, err := t.endV2(q, q.epoch, true)
	if err != nil {
		return err
	}
	state, err = t.settleV2(q)
	if err != nil {
		return err
	}
	t.set("v2.timed_out.good_transaction_after", fmt.Sprintf("produce=%s end=%s state=%s epoch=%d",
		produced, ended, state.state, state.epoch))
	latest := []string{}
	for _, iso := range []int8{readUncommitted, readCommitted} {
		l, err := t.v2.listLatest(t.ctx, t.v2Topic, 2, iso)
		if err != nil {
			return err
		}
		latest = append(latest, l)
	}
	t.set("v2.timed_out.p2.list_offsets_latest", latest)
	f, err := t.v2.fetch(t.ctx, t.v2Topic, t.v2TopicID, 2, 0, readCommitted)
	if err != nil {
		return err
	}
	t.set("v2.timed_out.p2.read_committed.values", f.values)
	t.set("v2.timed_out.p2.read_committed.aborted_first_offsets", f.abortedFirst)
	return nil
}
