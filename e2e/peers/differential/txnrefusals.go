package main

// The refusals of the transactions scenario (transactions.go): requests a transaction
// coordinator must refuse, each answer recorded, each followed by a transaction of the
// same transactional id that must still commit (the coordinator's state unharmed).

import (
	"strings"
	"time"
)

// badInput: refused requests, each followed by a transaction that must still commit.
func (t *txnScenario) badInput() error {
	ctx, b := t.ctx, t.b
	onBad := func(parts ...int32) map[string][]int32 { return map[string][]int32{t.badTopic: parts} }

	// An id that never called InitProducerId.
	never := t.prefix + "never"
	code, err := b.endTxn(ctx, never, 4242, 0, true)
	if err != nil {
		return err
	}
	t.set("bad_input.never_initialized.end", code)
	added, err := b.addPartitions(ctx, never, 4242, 0, onBad(0), t.partitionName)
	if err != nil {
		return err
	}
	t.set("bad_input.never_initialized.add_partitions", added)
	p, err := t.init("bad_input.never_initialized.init", "never", txnTimeoutMs)
	if err != nil {
		return err
	}
	if err := t.goodTransaction("bad_input.never_initialized", p, 0); err != nil {
		return err
	}

	// A wrong producer id for a known id (the first part's, at rest).
	if main := t.producers["main"]; main != nil {
		code, err := b.endTxn(ctx, main.id, main.pid+1000, main.epoch, true)
		if err != nil {
			return err
		}
		t.set("bad_input.wrong_producer_id.end", code)
		added, err := b.addPartitions(ctx, main.id, main.pid+1000, main.epoch, onBad(1), t.partitionName)
		if err != nil {
			return err
		}
		t.set("bad_input.wrong_producer_id.add_partitions", added)
		if err := t.goodTransaction("bad_input.wrong_producer_id", main, 1); err != nil {
			return err
		}
	}

	// A fenced epoch: InitProducerId twice, then the first epoch.
	first, err := t.init("bad_input.fenced.init_first", "fenced", txnTimeoutMs)
	if err != nil || first == nil {
		return err
	}
	stale := *first
	current, err := t.init("bad_input.fenced.init_second", "fenced", txnTimeoutMs)
	if err != nil || current == nil {
		return err
	}
	for _, c := range []struct {
		name   string
		broker *txnBroker
	}{{"v4", b}, {"v1", t.old}} {
		code, err := c.broker.endTxn(ctx, stale.id, stale.pid, stale.epoch, true)
		if err != nil {
			return err
		}
		t.set("bad_input.fenced.end_"+c.name, code)
	}
	for _, c := range []struct {
		name   string
		broker *txnBroker
	}{{"v3", b}, {"v1", t.old}} {
		added, err := c.broker.addPartitions(ctx, stale.id, stale.pid, stale.epoch, onBad(2), t.partitionName)
		if err != nil {
			return err
		}
		t.set("bad_input.fenced.add_partitions_"+c.name, added)
	}
	reinit, err := b.reinit(ctx, current, stale.epoch)
	if err != nil {
		return err
	}
	t.set("bad_input.fenced.init_with_stale_epoch", reinit)
	if err := t.goodTransaction("bad_input.fenced", current, 2); err != nil {
		return err
	}

	// A topic that does not exist, and a partition that does not exist, beside a good one.
	q, err := t.init("bad_input.unknown_topic.init", "unknown-topic", txnTimeoutMs)
	if err != nil || q == nil {
		return err
	}
	for name, parts := range map[string]map[string][]int32{
		"missing_topic":     {t.badTopic: {0}, t.missing: {0}},
		"missing_partition": {t.badTopic: {0, 99}},
	} {
		added, err := b.addPartitions(ctx, q.id, q.pid, q.epoch, parts, t.partitionName)
		if err != nil {
			return err
		}
		t.set("bad_input.unknown_topic."+name, added)
	}
	described, err := b.describe(ctx, q.id, t.partitionName)
	if err != nil {
		return err
	}
	t.set("bad_input.unknown_topic.describe_transactions", described.String())
	if err := t.goodTransaction("bad_input.unknown_topic", q, 0); err != nil {
		return err
	}

	// EndTxn twice: commit, commit again once complete, then abort.
	q, err = t.init("bad_input.end_twice.init", "end-twice", txnTimeoutMs)
	if err != nil || q == nil {
		return err
	}
	if err := t.goodTransaction("bad_input.end_twice.first", q, 1); err != nil {
		return err
	}
	for _, again := range []struct {
		name   string
		commit bool
	}{{"commit_again", true}, {"abort_after_commit", false}} {
		code, err := t.end(q, again.commit)
		if err != nil {
			return err
		}
		t.set("bad_input.end_twice."+again.name, code)
	}
	if err := t.goodTransaction("bad_input.end_twice", q, 1); err != nil {
		return err
	}

	// EndTxn of a transaction with no partitions.
	q, err = t.init("bad_input.no_partitions.init", "no-partitions", txnTimeoutMs)
	if err != nil || q == nil {
		return err
	}
	for _, c := range []struct {
		name   string
		commit bool
	}{{"commit", true}, {"abort", false}} {
		code, err := t.end(q, c.commit)
		if err != nil {
			return err
		}
		t.set("bad_input.no_partitions."+c.name, code)
		state, err := t.settle(q)
		if err != nil {
			return err
		}
		t.set("bad_input.no_partitions."+c.name+".state_after", state.String())
	}
	if err := t.goodTransaction("bad_input.no_partitions", q, 2); err != nil {
		return err
	}

	// Transaction timeouts: above the maximum, zero, negative, the maximum itself.
	for _, c := range []struct {
		name    string
		timeout int32
	}{{"above_max", txnMaxTimeout + 1}, {"zero", 0}, {"negative", -1}, {"max", txnMaxTimeout}} {
		q, err := t.init("bad_input.timeout_"+c.name, "timeout-"+strings.ReplaceAll(c.name, "_", "-"), c.timeout)
		if err != nil {
			return err
		}
		if q != nil {
			if err := t.goodTransaction("bad_input.timeout_"+c.name, q, 0); err != nil {
				return err
			}
		}
	}

	// An empty transactional id.
	empty := ""
	code, _, err = b.findCoordinator(ctx, empty)
	if err != nil {
		return err
	}
	t.set("bad_input.empty_id.find_coordinator", code)
	code, _, err = b.initProducerID(ctx, &empty, txnTimeoutMs)
	if err != nil {
		return err
	}
	t.set("bad_input.empty_id.init", code)
	if code, err = b.endTxn(ctx, empty, 4242, 0, true); err != nil {
		return err
	}
	t.set("bad_input.empty_id.end", code)
	if added, err = b.addPartitions(ctx, empty, 4242, 0, onBad(0), t.partitionName); err != nil {
		return err
	}
	t.set("bad_input.empty_id.add_partitions", added)

	// A 10,000-character transactional id.
	code, here, err := b.findCoordinator(ctx, t.longID)
	if err != nil {
		return err
	}
	t.set("bad_input.long_id.find_coordinator", code)
	t.set("bad_input.long_id.find_coordinator.is_this_broker", here)
	code, q, err = b.initProducerID(ctx, &t.longID, txnTimeoutMs)
	if err != nil {
		return err
	}
	t.set("bad_input.long_id.init", code)
	if err := t.goodTransaction("bad_input.long_id", q, 1); err != nil {
		return err
	}

	return t.timedOut()
}

// timedOut: a transaction past its transaction.timeout.ms is aborted by the coordinator
// (which bumps the epoch); the producer's commit comes too late.
func (t *txnScenario) timedOut() error {
	p, err := t.init("bad_input.timed_out.init", "timed-out", 1000)
	if err != nil || p == nil {
		return err
	}
	added, err := t.add(p, t.badTopic, 2)
	if err != nil {
		return err
	}
	t.set("bad_input.timed_out.add_partitions", added)
	code, _, err := t.b.produce(t.ctx, p, t.badTopic, 2, "late")
	if err != nil {
		return err
	}
	t.set("bad_input.timed_out.produce", code)
	state, err := t.b.waitState(t.ctx, p.id, t.partitionName, 60*time.Second, "CompleteAbort")
	if err != nil {
		return err
	}
	t.set("bad_input.timed_out.state_after_timeout", state.String())
	for _, c := range []struct {
		name   string
		commit bool
	}{{"commit", true}, {"abort", false}} {
		code, err := t.end(p, c.commit)
		if err != nil {
			return err
		}
		t.set("bad_input.timed_out.late_"+c.name, code)
	}
	q, err := t.init("bad_input.timed_out.init_again", "timed-out", txnTimeoutMs)
	if err != nil {
		return err
	}
	return t.goodTransaction("bad_input.timed_out", q, 2)
}
