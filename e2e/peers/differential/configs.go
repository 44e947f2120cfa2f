package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newTopicConfigs are set on a topic at creation as a Kafka user's script would: every
// Kafka 4.1 topic config the first versions of Oxbow did not know, at a non-default value.
var newTopicConfigs = map[string]string{
	"file.delete.delay.ms":         "30000",
	"min.cleanable.dirty.ratio":    "0.25",
	"min.compaction.lag.ms":        "1000",
	"max.compaction.lag.ms":        "600000",
	"preallocate":                  "true",
	"segment.jitter.ms":            "100",
	"local.retention.ms":           "-2",
	"local.retention.bytes":        "-2",
	"remote.log.copy.disable":      "true",
	"remote.log.delete.on.disable": "false",
	"remote.storage.enable":        "false",
	"segment.index.bytes":          "65536",
}

// badTopicConfigs are refused by IncrementalAlterConfigs, each naming the key.
var badTopicConfigs = [][2]string{
	{"min.cleanable.dirty.ratio", "1.5"},
	{"min.cleanable.dirty.ratio", "abc"},
	{"max.compaction.lag.ms", "0"},
	{"min.compaction.lag.ms", "-1"},
	{"file.delete.delay.ms", "-1"},
	{"segment.jitter.ms", "-1"},
	{"preallocate", "yes"},
	{"local.retention.bytes", "-3"},
	{"remote.storage.enable", "true"},
	{"message.downconversion.enable", "true"},
}

// describeAll describes one config resource with synonyms and documentation; names nil
// means every config.
func describeAll(ctx context.Context, cl *kgo.Client, kind kmsg.ConfigResourceType, name string, names []string) (kmsg.DescribeConfigsResponseResource, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	req.IncludeDocumentation = true
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType = kind
	res.ResourceName = name
	res.ConfigNames = names
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return kmsg.DescribeConfigsResponseResource{}, err
	}
	if len(resp.Resources) != 1 {
		return kmsg.DescribeConfigsResponseResource{}, fmt.Errorf("%d resources in the answer", len(resp.Resources))
	}
	return resp.Resources[0], nil
}

// observeConfigs records each config's value, source, read-only flag, type, synonym chain
// and whether it is documented.
func observeConfigs(obs Observations, prefix string, r kmsg.DescribeConfigsResponseResource, withValues bool) {
	obs[prefix+".error_code"] = int(r.ErrorCode)
	var names []string
	for _, c := range r.Configs {
		names = append(names, c.Name)
		key := prefix + "." + c.Name
		if withValues {
			value := "<null>"
			if c.Value != nil {
				value = *c.Value
			}
			obs[key+".value"] = value
		}
		obs[key+".source"] = c.Source.String()
		obs[key+".read_only"] = c.ReadOnly
		obs[key+".type"] = c.ConfigType.String()
		obs[key+".documented"] = c.Documentation != nil && *c.Documentation != ""
		var synonyms []string
		for _, s := range c.ConfigSynonyms {
			synonyms = append(synonyms, s.Source.String()+":"+s.Name)
		}
		obs[key+".synonyms"] = synonyms
	}
	sort.Strings(names)
	obs[prefix+".names"] = names
}

// alterOne sets (or with a nil value deletes) configs of one resource with
// IncrementalAlterConfigs and returns its error code and message.
func alterOne(ctx context.Context, cl *kgo.Client, kind kmsg.ConfigResourceType, name string, configs map[string]*string) (int, string, error) {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kind
	res.ResourceName = name
	keys := make([]string, 0, len(configs))
	for k := range configs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name = k
		c.Value = configs[k]
		c.Op = kmsg.IncrementalAlterConfigOpSet
		if configs[k] == nil {
			c.Op = kmsg.IncrementalAlterConfigOpDelete
		}
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, "", err
	}
	if len(resp.Resources) != 1 {
		return 0, "", fmt.Errorf("%d resources in the answer", len(resp.Resources))
	}
	message := "<null>"
	if m := resp.Resources[0].ErrorMessage; m != nil {
		message = *m
	}
	return int(resp.Resources[0].ErrorCode), message, nil
}

// topicConfigsStep: a topic created with every newer Kafka 4.1 topic config is described
// as Kafka describes it (all configs, synonyms, types, documentation); bad values are
// refused with Kafka's code and words.
func topicConfigsStep(ctx context.Context, cl *kgo.Client, adm *kadm.Client, obs Observations, create createFunc, suffix string) error {
	name := "differential-configs-" + suffix
	configs := map[string]*string{}
	for k, v := range newTopicConfigs {
		configs[k] = &v
	}
	created, err := create(name, partitions, configs)
	if err != nil {
		return fmt.Errorf("create topic with every config: %w", err)
	}
	obs["topic_configs.create.error_code"] = int(created.ErrorCode)
	if _, err := waitForLeaders(ctx, cl, adm, name); err != nil {
		return err
	}
	described, err := describeAll(ctx, cl, kmsg.ConfigResourceTypeTopic, name, nil)
	if err != nil {
		return fmt.Errorf("describe every topic config: %w", err)
	}
	observeConfigs(obs, "topic_configs.describe", described, true)
	for _, bad := range badTopicConfigs {
		value := bad[1]
		code, message, err := alterOne(ctx, cl, kmsg.ConfigResourceTypeTopic, name, map[string]*string{bad[0]: &value})
		if err != nil {
			return fmt.Errorf("alter %s: %w", bad[0], err)
		}
		key := "topic_configs.bad." + bad[0] + "=" + bad[1]
		obs[key+".error_code"] = code
		obs[key+".error_message"] = message
	}
	return nil
}

// brokerConfigsStep: dynamic broker configs as kafka-configs --entity-type brokers uses
// them: the cluster-wide default and one broker's own, their effect on a topic's
// configs, refusals, and removal (so the brokers end as they began).
func brokerConfigsStep(ctx context.Context, cl *kgo.Client, obs Observations, topic string) error {
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil || len(meta.Brokers) == 0 {
		return fmt.Errorf("metadata for the broker id: %v", err)
	}
	node := strconv.Itoa(int(meta.Brokers[0].NodeID))
	watched := []string{"min.insync.replicas", "log.retention.ms", "log.cleaner.min.cleanable.ratio", "compression.type", "node.id", "log.segment.bytes"}
	describeBoth := func(stage string) error {
		defaults, err := describeAll(ctx, cl, kmsg.ConfigResourceTypeBroker, "", nil)
		if err != nil {
			return err
		}
		observeConfigs(obs, "broker_configs."+stage+".defaults", defaults, true)
		own, err := describeAll(ctx, cl, kmsg.ConfigResourceTypeBroker, node, watched)
		if err != nil {
			return err
		}
		// node.id differs between the two clusters: values are compared for the rest.
		for i := range own.Configs {
			if own.Configs[i].Name == "node.id" {
				own.Configs[i].Value = nil
			}
		}
		observeConfigs(obs, "broker_configs."+stage+".broker", own, true)
		t, err := describeAll(ctx, cl, kmsg.ConfigResourceTypeTopic, topic, []string{"retention.ms", "min.cleanable.dirty.ratio", "compression.type", "min.insync.replicas"})
		if err != nil {
			return err
		}
		observeConfigs(obs, "broker_configs."+stage+".topic", t, true)
		return nil
	}
	if err := describeBoth("initial"); err != nil {
		return err
	}
	ratio, retention, lz4 := "0.3", "5000000", "lz4"
	alter := func(key, resource string, configs map[string]*string) error {
		code, message, err := alterOne(ctx, cl, kmsg.ConfigResourceTypeBroker, resource, configs)
		obs["broker_configs."+key+".error_code"] = code
		obs["broker_configs."+key+".error_message"] = strings.ReplaceAll(message, node, "<node>")
		return err
	}
	if err := alter("alter_default", "", map[string]*string{"log.cleaner.min.cleanable.ratio": &ratio, "log.retention.ms": &retention}); err != nil {
		return err
	}
	own := "7000000"
	if err := alter("alter_broker", node, map[string]*string{"log.retention.ms": &own, "compression.type": &lz4}); err != nil {
		return err
	}
	// The brokers apply metadata asynchronously: wait until the topic sees the change.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		t, err := describeAll(ctx, cl, kmsg.ConfigResourceTypeTopic, topic, []string{"retention.ms"})
		if err == nil && len(t.Configs) == 1 && t.Configs[0].Value != nil && *t.Configs[0].Value == own {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := describeBoth("altered"); err != nil {
		return err
	}
	three, bad := "3", "abc"
	if err := alter("static_key", node, map[string]*string{"node.id": &three}); err != nil {
		return err
	}
	if err := alter("bad_value", node, map[string]*string{"log.retention.ms": &bad}); err != nil {
		return err
	}
	if err := alter("remove_broker", node, map[string]*string{"log.retention.ms": nil, "compression.type": nil}); err != nil {
		return err
	}
	return alter("remove_default", "", map[string]*string{"log.cleaner.min.cleanable.ratio": nil, "log.retention.ms": nil})
}

// logAppendTimeBitStep: a producer batch claiming LogAppendTime, to a CreateTime topic and
// to a LogAppendTime topic.
func logAppendTimeBitStep(ctx context.Context, cl *kgo.Client, adm *kadm.Client, obs Observations, create createFunc, suffix string) error {
	k := func(s string) []byte { return []byte(s) }
	batch := encodeBatch(time.Now().UnixMilli(), []rawRecord{{key: k("a"), value: k("1")}}, false)
	// Attributes bit 3 is the timestamp type; the CRC covers the attributes.
	attributes := binary.BigEndian.Uint16(batch[21:23]) | 0x08
	binary.BigEndian.PutUint16(batch[21:23], attributes)
	binary.BigEndian.PutUint32(batch[17:21], crc32.Checksum(batch[21:], crc32.MakeTable(crc32.Castagnoli)))
	logAppend := "LogAppendTime"
	for _, kind := range []struct {
		name    string
		configs map[string]*string
	}{{"create_time", nil}, {"log_append_time", map[string]*string{"message.timestamp.type": &logAppend}}} {
		name := "differential-lat-" + kind.name + "-" + suffix
		if _, err := create(name, partitions, kind.configs); err != nil {
			return fmt.Errorf("create %s topic: %w", kind.name, err)
		}
		tgt, err := waitForLeaders(ctx, cl, adm, name)
		if err != nil {
			return err
		}
		r, err := produceSettled(ctx, tgt, append([]byte(nil), batch...))
		if err != nil {
			return fmt.Errorf("produce to the %s topic: %w", kind.name, err)
		}
		observeProduceErrors(obs, "log_append_time_bit."+kind.name, name, r)
	}
	return nil
}
