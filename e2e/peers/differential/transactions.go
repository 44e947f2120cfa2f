package main

// The transactions scenario: transactional producers driven with raw requests, and what a
// client sees of their transactions. Both brokers finalize transaction version 2 (KIP-890
// part 2) on a new cluster. Every part but the v2_ ones pins the requests to version 1
// (txnrequests.go), as librdkafka and older Java clients still speak it; the v2_ parts
// (txnv2.go) speak version 2 as a Kafka 4 client does.
//
//	commit_abort   FindCoordinator (TRANSACTION), InitProducerId, AddPartitionsToTxn for 3
//	               partitions, transactional batches, EndTxn commit; a second transaction
//	               aborted, a third committed; then per partition ListOffsets latest
//	               (read_uncommitted / read_committed) and Fetch at both isolation levels:
//	               the last stable offset, the aborted transactions' first offsets, the
//	               control batches and the values a client returns
//	open           a transaction left open holds the last stable offset at its first offset;
//	               DescribeTransactions, ListTransactions (Ongoing), DescribeProducers
//	               meanwhile; then committed
//	offsets        AddOffsetsToTxn + TxnOffsetCommit; OffsetFetch (require_stable) while
//	               pending, after the commit, after an aborted second one; a TxnOffsetCommit
//	               whose group was never added
//	bad_input      EndTxn / AddPartitionsToTxn of an id that never called InitProducerId or
//	               with a wrong producer id; a fenced epoch (v4 and v1 answers); a topic that
//	               does not exist; EndTxn twice, and with no partitions; timeouts above the
//	               maximum; an empty and a 10,000-character transactional id; a commit after
//	               the coordinator aborted a timed-out transaction; each followed by a
//	               transaction that must still commit
//	listing        ListTransactions (no filter, CompleteCommit, Ongoing, an unknown state),
//	               DescribeTransactions of every id, at rest
//	v2_features, v2_commit, v2_retries, v2_timed_out
//	               transaction version 2 (txnv2.go): the feature in ApiVersions, implicit
//	               adds by Produce v12 and TxnOffsetCommit v5, EndTxn v5's epoch bumps,
//	               its retries and refusals, a zombie's write, an aborted transaction, a
//	               transaction aborted by its timeout
//	unadded_produce  a transactional batch to a partition not added to the transaction
//	               (Kafka verifies with the coordinator, KIP-890 part 1), last: it may leave
//	               its partition's transaction open
//
// Every transaction is waited on until the coordinator reports it complete (markers are
// written after EndTxn is answered), so the observations do not depend on timing. Producer
// ids are never recorded: they differ between the brokers.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	txnPrefix     = "transactions."
	txnSettle     = 30 * time.Second // how long a transaction may take to complete
	txnTimeoutMs  = 60000            // transaction.timeout.ms of the scenario's producers
	txnMaxTimeout = 900000           // Kafka's default transaction.max.timeout.ms
	txnLongID     = 10000            // characters of the very long transactional id
)

// txnScenario is the state shared by the transactions scenario's parts.
type txnScenario struct {
	ctx                 context.Context
	obs                 Observations
	b, old              *txnBroker // pinned to transaction version 1; EndTxn/AddPartitionsToTxn v1
	v2                  *txnBroker // at the transaction version 2 versions (txnVersionsV2)
	prefix              string     // of every transactional id and group of this run
	txnTopic, badTopic  string
	strayTopic, missing string
	v2Topic, v2Group    string // written and committed by the v2_ parts only
	txnTopicID          [16]byte
	v2TopicID           [16]byte
	producers           map[string]*producer // the last InitProducerId answer of each id
	unknownID, longID   string
	group, unaddedGroup string
}

// transactionsStep plays the transactions scenario (see the top of this file).
func transactionsStep(ctx context.Context, bootstrap string, cl *kgo.Client, adm *kadm.Client, obs Observations, create createFunc, suffix string) error {
	prefix := "differential-txn-" + suffix + "-"
	t := &txnScenario{
		ctx: ctx, obs: obs, prefix: prefix,
		txnTopic: prefix + "topic", badTopic: prefix + "bad", strayTopic: prefix + "stray",
		missing: prefix + "missing", v2Topic: prefix + "v2", v2Group: prefix + "group-v2",
		producers: map[string]*producer{},
		unknownID: prefix + "unknown", group: prefix + "group", unaddedGroup: prefix + "group-unadded",
	}
	t.longID = prefix + "long-" + strings.Repeat("x", txnLongID-len(prefix)-len("long-"))
	for _, topic := range []struct {
		name  string
		count int32
	}{{t.txnTopic, partitions}, {t.badTopic, partitions}, {t.strayTopic, 1}, {t.v2Topic, partitions}} {
		created, err := create(topic.name, topic.count, nil)
		if err != nil {
			return fmt.Errorf("create %s: %w", topic.name, err)
		}
		if created.ErrorCode != 0 {
			return fmt.Errorf("create %s: %s", topic.name, errName(created.ErrorCode))
		}
		tgt, err := waitForPartitionLeaders(ctx, cl, adm, topic.name, int(topic.count))
		if err != nil {
			return err
		}
		switch topic.name {
		case t.txnTopic:
			t.txnTopicID = tgt.topicID
		case t.v2Topic:
			t.v2TopicID = tgt.topicID
		}
	}
	var err error
	if t.b, err = newTxnBroker(ctx, bootstrap, txnVersions); err != nil {
		return err
	}
	defer t.b.client.Close()
	if t.old, err = newTxnBroker(ctx, bootstrap, txnVersionsOld); err != nil {
		return err
	}
	defer t.old.client.Close()
	if t.v2, err = newTxnBroker(ctx, bootstrap, txnVersionsV2); err != nil {
		return err
	}
	defer t.v2.client.Close()

	for _, part := range []struct {
		name string
		run  func() error
	}{
		{"commit_abort", t.commitAbort},
		{"open", t.openTransaction},
		{"offsets", t.offsets},
		{"bad_input", t.badInput},
		{"listing", t.listing},
		// After listing, which lists every transactional id of the run at rest.
		{"v2_features", t.v2Features},
		{"v2_commit", t.v2Commit},
		{"v2_retries", t.v2Retries},
		{"v2_timed_out", t.v2TimedOut},
		{"unadded_produce", t.unaddedProduce},
	} {
		if err := part.run(); err != nil {
			obs[txnPrefix+part.name+".step_error"] = errorCode(err)
		}
	}
	return nil
}

// topicName is a topic's name in observations.
func (t *txnScenario) topicName(topic string) string {
	switch topic {
	case t.txnTopic:
		return "txn"
	case t.badTopic:
		return "bad"
	case t.strayTopic:
		return "stray"
	case t.missing:
		return "missing"
	case t.v2Topic:
		return "v2"
	}
	return "other"
}

// partitionName is a partition's name in observations: the group's own partition of
// __consumer_offsets is named for the group (its number depends on the run's group name).
func (t *txnScenario) partitionName(topic string, partition int32) string {
	if topic == "__consumer_offsets" {
		for _, group := range []string{t.group, t.unaddedGroup, t.v2Group} {
			if partition == groupPartition(group) {
				return topic + ":<partition of " + strings.TrimPrefix(group, t.prefix) + ">"
			}
		}
		return fmt.Sprintf("%s:%d", topic, partition)
	}
	return fmt.Sprintf("%s:%d", t.topicName(topic), partition)
}

// idName is a transactional id's name in observations; false for another run's ids.
func (t *txnScenario) idName(id string) (string, bool) {
	if !strings.HasPrefix(id, t.prefix) {
		return "", false
	}
	if len(id) > 100 {
		return fmt.Sprintf("long(%d)", len(id)), true
	}
	return strings.TrimPrefix(id, t.prefix), true
}

func (t *txnScenario) set(key string, value any) { t.obs[txnPrefix+key] = value }

// init sends InitProducerId for the named id with the scenario's timeout and records its
// error and epoch under key.
func (t *txnScenario) init(key, name string, timeoutMs int32) (*producer, error) {
	id := t.prefix + name
	code, p, err := t.b.initProducerID(t.ctx, &id, timeoutMs)
	if err != nil {
		return nil, err
	}
	t.set(key+".error", code)
	if p == nil {
		return nil, nil
	}
	t.set(key+".epoch", p.epoch)
	if before, ok := t.producers[name]; ok {
		t.set(key+".same_producer_id", before.pid == p.pid)
	}
	t.producers[name] = p
	return p, nil
}

func (t *txnScenario) add(p *producer, topic string, parts ...int32) ([]string, error) {
	return t.b.addPartitions(t.ctx, p.id, p.pid, p.epoch, map[string][]int32{topic: parts}, t.partitionName)
}

func (t *txnScenario) end(p *producer, commit bool) (string, error) {
	return t.b.endTxn(t.ctx, p.id, p.pid, p.epoch, commit)
}

// settle waits until the producer's transaction is complete and returns its state.
func (t *txnScenario) settle(p *producer) (txnState, error) {
	return t.b.waitState(t.ctx, p.id, t.partitionName, txnSettle, "CompleteCommit", "CompleteAbort", "Empty")
}

// transaction runs one whole transaction: values written to each partition of topic as
// one batch, then EndTxn, then the wait until it is complete. It records under key what
// each request answered and the state reached.
func (t *txnScenario) transaction(key string, p *producer, commit bool, topic string, parts []int32, values func(int32) []string) error {
	added, err := t.add(p, topic, parts...)
	if err != nil {
		return err
	}
	t.set(key+".add_partitions", added)
	for _, partition := range parts {
		code, offset, err := t.b.produce(t.ctx, p, topic, partition, values(partition)...)
		if err != nil {
			return err
		}
		t.set(fmt.Sprintf("%s.produce.p%d", key, partition), fmt.Sprintf("%s@%d", code, offset))
	}
	ended, err := t.end(p, commit)
	if err != nil {
		return err
	}
	t.set(key+".end", ended)
	state, err := t.settle(p)
	if err != nil {
		return err
	}
	t.set(key+".state_after", state.String())
	return nil
}

// goodTransaction is the check after a bad request: a one-record transaction on the bad
// topic still commits. It is recorded as one line.
func (t *txnScenario) goodTransaction(key string, p *producer, partition int32) error {
	if p == nil {
		t.set(key+".good_transaction_after", "no producer")
		return nil
	}
	added, err := t.add(p, t.badTopic, partition)
	if err != nil {
		return err
	}
	produced, _, err := t.b.produce(t.ctx, p, t.badTopic, partition, "good")
	if err != nil {
		return err
	}
	ended, err := t.end(p, true)
	if err != nil {
		return err
	}
	state, err := t.settle(p)
	if err != nil {
		return err
	}
	t.set(key+".good_transaction_after", fmt.Sprintf("add=%v produce=%s end=%s state=%s epoch=%d",
		added, produced, ended, state.state, state.epoch))
	return nil
}

// observeReads records, per partition of the scenario's topic, the latest offsets at both
// isolation levels and what a fetch from offset 0 returns at both.
func (t *txnScenario) observeReads(key string) error {
	return t.observeTopicReads(key, t.b, t.txnTopic, t.txnTopicID)
}

// observeTopicReads is observeReads for a topic of `partitions` partitions, through b.
func (t *txnScenario) observeTopicReads(key string, b *txnBroker, topic string, topicID [16]byte) error {
	for p := int32(0); p < partitions; p++ {
		for _, iso := range []struct {
			name  string
			level int8
		}{{"read_uncommitted", readUncommitted}, {"read_committed", readCommitted}} {
			latest, err := b.listLatest(t.ctx, topic, p, iso.level)
			if err != nil {
				return err
			}
			k := fmt.Sprintf("%s.p%d.%s", key, p, iso.name)
			t.set(k+".list_offsets_latest", latest)
			f, err := b.fetch(t.ctx, topic, topicID, p, 0, iso.level)
			if err != nil {
				return err
			}
			t.set(k+".fetch.error", f.errorCode)
			t.set(k+".fetch.high_watermark", f.highWatermark)
			t.set(k+".fetch.last_stable_offset", f.lastStable)
			t.set(k+".fetch.aborted_first_offsets", f.abortedFirst)
			t.set(k+".fetch.values", f.values)
			t.set(k+".fetch.control_batches", f.controlBatches)
		}
	}
	return nil
}

// commitAbort: a committed transaction on every partition, an aborted one on two, a
// committed one on one, then what readers see.
func (t *txnScenario) commitAbort() error {
	code, here, err := t.b.findCoordinator(t.ctx, t.prefix+"main")
	if err != nil {
		return err
	}
	t.set("find_coordinator.error", code)
	t.set("find_coordinator.is_this_broker", here)
	p, err := t.init("commit_abort.init", "main", txnTimeoutMs)
	if err != nil || p == nil {
		return err
	}
	all := []int32{0, 1, 2}
	if err := t.transaction("commit_abort.first", p, true, t.txnTopic, all, func(partition int32) []string {
		return []string{fmt.Sprintf("c1-p%d-0", partition), fmt.Sprintf("c1-p%d-1", partition)}
	}); err != nil {
		return err
	}
	if err := t.transaction("commit_abort.second", p, false, t.txnTopic, []int32{0, 1}, func(partition int32) []string {
		return []string{fmt.Sprintf("a2-p%d-0", partition), fmt.Sprintf("a2-p%d-1", partition)}
	}); err != nil {
		return err
	}
	if err := t.transaction("commit_abort.third", p, true, t.txnTopic, []int32{0}, func(partition int32) []string {
		return []string{fmt.Sprintf("c3-p%d-0", partition)}
	}); err != nil {
		return err
	}
	return t.observeReads("commit_abort.read")
}

// openTransaction: a transaction left open on partition 1, observed, then committed.
func (t *txnScenario) openTransaction() error {
	p, err := t.init("open.init", "open", txnTimeoutMs)
	if err != nil || p == nil {
		return err
	}
	added, err := t.add(p, t.txnTopic, 1)
	if err != nil {
		return err
	}
	t.set("open.add_partitions", added)
	code, start, err := t.b.produce(t.ctx, p, t.txnTopic, 1, "o-p1-0", "o-p1-1")
	if err != nil {
		return err
	}
	t.set("open.produce.p1", fmt.Sprintf("%s@%d", code, start))
	committed, err := t.b.listLatest(t.ctx, t.txnTopic, 1, readCommitted)
	if err != nil {
		return err
	}
	t.set("open.list_offsets_latest.read_committed", committed)
	t.set("open.last_stable_offset_is_transaction_start", committed == fmt.Sprintf("NONE@%d", start))
	uncommitted, err := t.b.listLatest(t.ctx, t.txnTopic, 1, readUncommitted)
	if err != nil {
		return err
	}
	t.set("open.list_offsets_latest.read_uncommitted", uncommitted)
	f, err := t.b.fetch(t.ctx, t.txnTopic, t.txnTopicID, 1, 0, readCommitted)
	if err != nil {
		return err
	}
	t.set("open.fetch_read_committed.last_stable_offset", f.lastStable)
	t.set("open.fetch_read_committed.high_watermark", f.highWatermark)
	t.set("open.fetch_read_committed.values", f.values)
	described, err := t.b.describe(t.ctx, p.id, t.partitionName)
	if err != nil {
		return err
	}
	t.set("open.describe_transactions", described.String())
	listed, _, listCode, err := t.b.listTransactions(t.ctx, []string{"Ongoing"}, t.idName)
	if err != nil {
		return err
	}
	t.set("open.list_transactions_ongoing", listed)
	t.set("open.list_transactions_ongoing.error", listCode)
	producersCode, producers, err := t.b.describeProducers(t.ctx, t.txnTopic, 1)
	if err != nil {
		return err
	}
	t.set("open.describe_producers.p1.error", producersCode)
	t.set("open.describe_producers.p1", producers)
	ended, err := t.end(p, true)
	if err != nil {
		return err
	}
	t.set("open.end", ended)
	state, err := t.settle(p)
	if err != nil {
		return err
	}
	t.set("open.state_after", state.String())
	if committed, err = t.b.listLatest(t.ctx, t.txnTopic, 1, readCommitted); err != nil {
		return err
	}
	t.set("open.list_offsets_latest.read_committed_after", committed)
	for partition := int32(0); partition < partitions; partition++ {
		code, producers, err := t.b.describeProducers(t.ctx, t.txnTopic, partition)
		if err != nil {
			return err
		}
		t.set(fmt.Sprintf("open.describe_producers_after.p%d", partition), append([]string{code}, producers...))
	}
	return nil
}

// offsets: group offsets committed within transactions.
func (t *txnScenario) offsets() error {
	p, err := t.init("offsets.init", "offsets", txnTimeoutMs)
	if err != nil || p == nil {
		return err
	}
	fetchOffsets := func(key, group string, requireStable bool) error {
		top, parts, err := t.b.offsetFetch(t.ctx, group, t.txnTopic, []int32{0, 1}, requireStable)
		if err != nil {
			return err
		}
		t.set(key+".error", top)
		t.set(key+".partitions", parts)
		return nil
	}
	fetchSettled := func(key, group string) error {
		return t.waitStableOffsets(key, t.b, group, t.txnTopic)
	}
	for _, txn := range []struct {
		name    string
		commit  bool
		offsets map[int32]int64
	}{{"committed", true, map[int32]int64{0: 1, 1: 2}}, {"aborted", false, map[int32]int64{0: 10, 1: 20}}} {
		key := "offsets." + txn.name
		added, err := t.b.addOffsets(t.ctx, p, t.group)
		if err != nil {
			return err
		}
		t.set(key+".add_offsets", added)
		described, err := t.b.describe(t.ctx, p.id, t.partitionName)
		if err != nil {
			return err
		}
		t.set(key+".describe_transactions", described.String())
		committed, err := t.b.txnOffsetCommit(t.ctx, p, t.group, t.txnTopic, txn.offsets)
		if err != nil {
			return err
		}
		t.set(key+".txn_offset_commit", committed)
		if err := fetchOffsets(key+".offset_fetch_pending_require_stable", t.group, true); err != nil {
			return err
		}
		if err := fetchOffsets(key+".offset_fetch_pending", t.group, false); err != nil {
			return err
		}
		ended, err := t.end(p, txn.commit)
		if err != nil {
			return err
		}
		t.set(key+".end", ended)
		state, err := t.settle(p)
		if err != nil {
			return err
		}
		t.set(key+".state_after", state.String())
		if err := fetchSettled(key+".offset_fetch_after", t.group); err != nil {
			return err
		}
	}
	// TxnOffsetCommit for a group the transaction never added (no AddOffsetsToTxn).
	q, err := t.init("offsets.unadded.init", "offsets-unadded", txnTimeoutMs)
	if err != nil || q == nil {
		return err
	}
	committed, err := t.b.txnOffsetCommit(t.ctx, q, t.unaddedGroup, t.txnTopic, map[int32]int64{0: 5})
	if err != nil {
		return err
	}
	t.set("offsets.unadded.txn_offset_commit", committed)
	ended, err := t.end(q, true)
	if err != nil {
		return err
	}
	t.set("offsets.unadded.end", ended)
	state, err := t.settle(q)
	if err != nil {
		return err
	}
	t.set("offsets.unadded.state_after", state.String())
	return fetchOffsets("offsets.unadded.offset_fetch_require_stable", t.unaddedGroup, true)
}

// waitStableOffsets records OffsetFetch (require_stable) of a group's offsets for
// partitions 0 and 1 of topic once stable: a complete transaction's offsets become stable
// when the group coordinator has read the marker.
func (t *txnScenario) waitStableOffsets(key string, b *txnBroker, group, topic string) error {
	deadline := time.Now().Add(txnSettle)
	for {
		top, parts, err := b.offsetFetch(t.ctx, group, topic, []int32{0, 1}, true)
		if err != nil {
			return err
		}
		if !unstable(top, parts) || time.Now().After(deadline) {
			t.set(key+".error", top)
			t.set(key+".partitions", parts)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// listing: ListTransactions and DescribeTransactions with every transaction at rest.
func (t *txnScenario) listing() error {
	for _, filter := range []struct {
		name   string
		states []string
	}{{"all", nil}, {"complete_commit", []string{"CompleteCommit"}}, {"ongoing", []string{"Ongoing"}},
		{"unknown_state", []string{"NoSuchState"}}} {
		listed, unknown, code, err := t.b.listTransactions(t.ctx, filter.states, t.idName)
		if err != nil {
			return err
		}
		key := "listing.list_transactions_" + filter.name
		t.set(key, listed)
		t.set(key+".error", code)
		t.set(key+".unknown_state_filters", unknown)
	}
	for _, id := range []string{t.prefix + "main", t.prefix + "open", t.prefix + "offsets", t.prefix + "fenced",
		t.prefix + "timed-out", t.prefix + "no-partitions", t.unknownID, t.longID} {
		described, err := t.b.describe(t.ctx, id, t.partitionName)
		if err != nil {
			return err
		}
		name, _ := t.idName(id)
		t.set("listing.describe_transactions."+name, described.String())
	}
	return nil
}

// unaddedProduce: a transactional batch to a partition the transaction never added.
func (t *txnScenario) unaddedProduce() error {
	p, err := t.init("unadded_produce.init", "unadded", txnTimeoutMs)
	if err != nil || p == nil {
		return err
	}
	added, err := t.add(p, t.badTopic, 0)
	if err != nil {
		return err
	}
	t.set("unadded_produce.add_partitions", added)
	code, _, err := t.b.produce(t.ctx, p, t.strayTopic, 0, "stray")
	if err != nil {
		return err
	}
	t.set("unadded_produce.produce_unadded", code)
	code, _, err = t.b.produce(t.ctx, p, t.badTopic, 0, "added")
	if err != nil {
		return err
	}
	t.set("unadded_produce.produce_added", code)
	ended, err := t.end(p, true)
	if err != nil {
		return err
	}
	t.set("unadded_produce.end", ended)
	state, err := t.settle(p)
	if err != nil {
		return err
	}
	t.set("unadded_produce.state_after", state.String())
	for _, iso := range []struct {
		name  string
		level int8
	}{{"read_uncommitted", readUncommitted}, {"read_committed", readCommitted}} {
		latest, err := t.b.listLatest(t.ctx, t.strayTopic, 0, iso.level)
		if err != nil {
			return err
		}
		t.set("unadded_produce.unadded_partition.list_offsets_latest."+iso.name, latest)
	}
	return nil
}
