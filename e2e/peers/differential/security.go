package main

// The security scenario (issue 33): the same SCRAM users, ACLs and client quotas made on
// Apache Kafka and on Oxbow, both started with the same security settings (a PLAINTEXT
// listener whose ANONYMOUS principal is the super user, a SASL_PLAINTEXT listener with
// SCRAM, Kafka's StandardAuthorizer), then what each principal is answered: SCRAM
// credential and ACL admin codes (valid and invalid entries), authentication failures,
// Metadata filtering and authorized operations (KIP-430), and the authorization code of
// every API a client without the right ACL calls. Throttling under a quota is compared as
// "throttled or not": Oxbow's throttle times come from a token bucket, not Kafka's sampled
// rate (docs/security.md, "Client quotas").

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Kafka's ACL codes (org.apache.kafka.common.acl / resource).
const (
	resTopic, resGroup, resCluster                 = 2, 3, 4
	patLiteral, patPrefixed, patMatch              = 3, 4, 2
	opAny, opAll, opRead, opWrite, opCreate        = 1, 2, 3, 4, 5
	opDescribe                                     = 8
	permAny, permDeny, permAllow                   = 1, 2, 3
	passwordAlice, passwordBob, passwordWrongGuess = "alice-secret", "bob-secret", "guess"
	securityTimeout                                = 15 * time.Second
	quotaBytesPerSecond                            = 1024
	securityTopicsPrefix, securityGroupAllowed     = "orders-", "g-alice"
	securityGroupOther, securityForbidden          = "g-other", "payments"
	securitySecret, securityOpen                   = "orders-secret", "orders-a"
)

type secureClient struct {
	cl  *kgo.Client
	adm *kadm.Client
}

func newSecureClient(bootstrap string, opts ...kgo.Opt) (*secureClient, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(bootstrap),
		kgo.RequestRetries(0),
		kgo.RetryTimeout(2 * time.Second),
		kgo.ProducerLinger(0),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}, opts...)...)
	if err != nil {
		return nil, err
	}
	return &secureClient{cl: cl, adm: kadm.NewClient(cl)}, nil
}

func scramAs(user, password string, sha512 bool) kgo.Opt {
	auth := scram.Auth{User: user, Pass: password}
	if sha512 {
		return kgo.SASL(auth.AsSha512Mechanism())
	}
	return kgo.SASL(auth.AsSha256Mechanism())
}

// seedRequest sends one request to the seed broker (the only one) and returns its answer.
func (c *secureClient) seedRequest(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, securityTimeout)
	defer cancel()
	return c.cl.Request(ctx, req)
}

func runSecurityScenario(ctx context.Context, adminBootstrap, saslBootstrap string) (Observations, error) {
	obs := Observations{}
	admin, err := newSecureClient(adminBootstrap)
	if err != nil {
		return nil, err
	}
	defer admin.cl.Close()

	// 1. SCRAM credentials: two users, and entries Kafka refuses.
	upserts := []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: passwordAlice},
		{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: passwordBob},
	}
	altered, err := admin.adm.AlterUserSCRAMs(ctx, nil, upserts)
	if err != nil {
		return nil, fmt.Errorf("AlterUserScramCredentials: %w", err)
	}
	for user, result := range altered {
		obs["security.scram.alter."+user] = errorCode(result.Err)
	}
	// What a client library would not send: iteration counts out of range, an empty name, the
	// deletion of a credential that does not exist (raw, as kadm checks these itself).
	invalid := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	for _, u := range []struct {
		name       string
		mechanism  int8
		iterations int32
	}{{"weak", 1, 10}, {"heavy", 2, 20000}, {"", 1, 4096}, {"unknown-mechanism", 3, 4096}} {
		up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		up.Name, up.Mechanism, up.Iterations = u.name, u.mechanism, u.iterations
		up.Salt, up.SaltedPassword = []byte("0123456789abcdef"), make([]byte, 32)
		invalid.Upsertions = append(invalid.Upsertions, up)
	}
	gone := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	gone.Name, gone.Mechanism = "nobody", 1
	invalid.Deletions = append(invalid.Deletions, gone)
	if resp, err := admin.seedRequest(ctx, invalid); err != nil {
		obs["security.scram.alter_invalid"] = errorCode(err)
	} else {
		for _, r := range resp.(*kmsg.AlterUserSCRAMCredentialsResponse).Results {
			obs["security.scram.alter_invalid."+r.User] = int(r.ErrorCode)
		}
	}
	described, err := admin.adm.DescribeUserSCRAMs(ctx, "alice", "bob", "nobody")
	if err != nil {
		return nil, fmt.Errorf("DescribeUserScramCredentials: %w", err)
	}
	for user, result := range described {
		var infos []string
		for _, info := range result.CredInfos {
			infos = append(infos, fmt.Sprintf("%s/%d", info.Mechanism, info.Iterations))
		}
		sort.Strings(infos)
		obs["security.scram.describe."+user] = map[string]any{"error": errorCode(result.Err), "credentials": infos}
	}

	// 2. Topics, made by the super user.
	for _, name := range []string{securityOpen, securitySecret, securityForbidden} {
		created, err := admin.adm.CreateTopic(ctx, 1, 1, nil, name)
		if err == nil {
			err = created.Err
		}
		obs["security.create_topic."+name] = errorCode(err)
	}

	// 3. ACLs: valid entries, then the ones CreateAcls refuses.
	entry := func(resourceType int8, name string, pattern int8, principal string, operation, permission int8) kmsg.CreateACLsRequestCreation {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType = kmsg.ACLResourceType(resourceType)
		c.ResourceName = name
		c.ResourcePatternType = kmsg.ACLResourcePatternType(pattern)
		c.Principal = principal
		c.Host = "*"
		c.Operation = kmsg.ACLOperation(operation)
		c.PermissionType = kmsg.ACLPermissionType(permission)
		return c
	}
	creations := map[string]kmsg.CreateACLsRequestCreation{
		"alice_write_orders_prefixed": entry(resTopic, securityTopicsPrefix, patPrefixed, "User:alice", opWrite, permAllow),
		"alice_read_orders_prefixed":  entry(resTopic, securityTopicsPrefix, patPrefixed, "User:alice", opRead, permAllow),
		"alice_deny_read_secret":      entry(resTopic, securitySecret, patLiteral, "User:alice", opRead, permDeny),
		"alice_read_group":            entry(resGroup, securityGroupAllowed, patLiteral, "User:alice", opRead, permAllow),
		"bob_describe_open":           entry(resTopic, securityOpen, patLiteral, "User:bob", opDescribe, permAllow),
		"invalid_match_pattern":       entry(resTopic, "x", patMatch, "User:alice", opRead, permAllow),
		"invalid_any_operation":       entry(resTopic, "x", patLiteral, "User:alice", opAny, permAllow),
		"invalid_any_permission":      entry(resTopic, "x", patLiteral, "User:alice", opRead, permAny),
		"invalid_principal":           entry(resTopic, "x", patLiteral, "alice", opRead, permAllow),
		"invalid_cluster_name":        entry(resCluster, "not-kafka-cluster", patLiteral, "User:alice", opAll, permAllow),
		"invalid_empty_name":          entry(resTopic, "", patLiteral, "User:alice", opRead, permAllow),
	}
	names := make([]string, 0, len(creations))
	for name := range creations {
		names = append(names, name)
	}
	sort.Strings(names)
	// The valid entries go in one request; each invalid one in a request of its own (Kafka's
	// controller fails a whole request on some invalid entries).
	var valid []string
	for _, name := range names {
		if strings.HasPrefix(name, "invalid_") {
			createACLs(ctx, obs, admin, []string{name}, creations)
		} else {
			valid = append(valid, name)
		}
	}
	createACLs(ctx, obs, admin, valid, creations)
	// ACLs reach the brokers through the metadata log: wait until alice's four are listed.
	aclsOfAlice := func() bool {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType = 1, 1
		req.Principal = kmsg.StringPtr("User:alice")
		req.Operation, req.PermissionType = opAny, permAny
		resp, err := admin.seedRequest(ctx, req)
		if err != nil {
			return false
		}
		count := 0
		for _, r := range resp.(*kmsg.DescribeACLsResponse).Resources {
			count += len(r.ACLs)
		}
		return count >= 4
	}
	waitUntil(aclsOfAlice)
	describe := func(resourceType int8, name *string, pattern int8, principal *string) any {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType = kmsg.ACLResourceType(resourceType)
		req.ResourceName = name
		req.ResourcePatternType = kmsg.ACLResourcePatternType(pattern)
		req.Principal = principal
		req.Operation = kmsg.ACLOperation(opAny)
		req.PermissionType = kmsg.ACLPermissionType(permAny)
		resp, err := admin.seedRequest(ctx, req)
		if err != nil {
			return errorCode(err)
		}
		described := resp.(*kmsg.DescribeACLsResponse)
		var bindings []string
		for _, r := range described.Resources {
			for _, a := range r.ACLs {
				bindings = append(bindings, fmt.Sprintf("%d:%s:%d %s@%s %d/%d", r.ResourceType, r.ResourceName,
					r.ResourcePatternType, a.Principal, a.Host, a.Operation, a.PermissionType))
			}
		}
		sort.Strings(bindings)
		return map[string]any{"error": int(described.ErrorCode), "bindings": bindings}
	}
	alice, secret := "User:alice", securitySecret
	obs["security.describe_acls.alice"] = describe(1, nil, 1, &alice)
	obs["security.describe_acls.match_secret"] = describe(resTopic, &secret, patMatch, nil)

	// 4. Authentication on the SASL listener.
	authenticate := func(opt kgo.Opt) any {
		c, err := newSecureClient(saslBootstrap, opt)
		if err != nil {
			return "client: " + err.Error()
		}
		defer c.cl.Close()
		_, err = c.seedRequest(ctx, kmsg.NewPtrMetadataRequest())
		return errorCode(err)
	}
	obs["security.auth.alice_sha512"] = authenticate(scramAs("alice", passwordAlice, true))
	obs["security.auth.alice_wrong_password"] = authenticate(scramAs("alice", passwordWrongGuess, true))
	obs["security.auth.unknown_user"] = authenticate(scramAs("mallory", passwordAlice, true))
	obs["security.auth.bob_without_sha512_credential"] = authenticate(scramAs("bob", passwordBob, true))

	// 5. What alice is answered.
	asAlice, err := newSecureClient(saslBootstrap, scramAs("alice", passwordAlice, true))
	if err != nil {
		return nil, err
	}
	defer asAlice.cl.Close()
	observeAuthorization(ctx, obs, "alice", asAlice)

	asBob, err := newSecureClient(saslBootstrap, scramAs("bob", passwordBob, false))
	if err != nil {
		return nil, err
	}
	defer asBob.cl.Close()
	obs["security.bob.metadata.visible"] = visibleTopics(ctx, asBob)
	obs["security.bob.produce."+securityOpen] = produceOne(ctx, asBob, securityOpen, 100)

	// 6. Client quotas: valid and refused alterations, then a producer over its quota.
	observeQuotas(ctx, obs, admin, asAlice)
	return obs, nil
}

// visibleTopics: the topics a Metadata request for all topics names (the scenario's own
// topics only; the main scenario's have random names no one but the super user may see).
func visibleTopics(ctx context.Context, c *secureClient) any {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = nil
	resp, err := c.seedRequest(ctx, req)
	if err != nil {
		return errorCode(err)
	}
	var names []string
	for _, t := range resp.(*kmsg.MetadataResponse).Topics {
		if t.Topic != nil {
			names = append(names, *t.Topic)
		}
	}
	sort.Strings(names)
	return names
}

func produceOne(ctx context.Context, c *secureClient, topic string, size int) any {
	ctx, cancel := context.WithTimeout(ctx, securityTimeout)
	defer cancel()
	return errorCode(c.cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(strings.Repeat("v", size))}).FirstErr())
}

func observeAuthorization(ctx context.Context, obs Observations, who string, c *secureClient) {
	key := func(what string) string { return "security." + who + "." + what }
	obs[key("metadata.visible")] = visibleTopics(ctx, c)

	// Named topics: allowed, denied, and one that does not exist (auto-creation off).
	named := kmsg.NewPtrMetadataRequest()
	for _, name := range []string{securityOpen, securityForbidden, "orders-missing", "unknown-elsewhere"} {
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(name)
		named.Topics = append(named.Topics, t)
	}
	named.AllowAutoTopicCreation = false
	named.IncludeTopicAuthorizedOperations = true
	if resp, err := c.seedRequest(ctx, named); err != nil {
		obs[key("metadata.named")] = errorCode(err)
	} else {
		for _, t := range resp.(*kmsg.MetadataResponse).Topics {
			obs[key("metadata.named."+*t.Topic)] = map[string]any{
				"error": int(t.ErrorCode), "authorized_operations": t.AuthorizedOperations,
			}
		}
	}

	for _, topic := range []string{securityOpen, securitySecret, securityForbidden} {
		obs[key("produce."+topic)] = produceOne(ctx, c, topic, 100)
	}
	for _, topic := range []string{securityOpen, securitySecret} {
		obs[key("fetch."+topic)] = consumeError(ctx, c, topic)
	}

	created, err := c.adm.CreateTopic(ctx, 1, 1, nil, "orders-new")
	if err == nil {
		err = created.Err
	}
	obs[key("create_topic.orders-new")] = errorCode(err)
	deleted, err := c.adm.DeleteTopic(ctx, securityOpen)
	if err == nil {
		err = deleted.Err
	}
	obs[key("delete_topic."+securityOpen)] = errorCode(err)

	configs := kmsg.NewPtrDescribeConfigsRequest()
	resource := kmsg.NewDescribeConfigsRequestResource()
	resource.ResourceType = kmsg.ConfigResourceTypeTopic
	resource.ResourceName = securityOpen
	configs.Resources = append(configs.Resources, resource)
	if resp, err := c.seedRequest(ctx, configs); err != nil {
		obs[key("describe_configs."+securityOpen)] = errorCode(err)
	} else {
		obs[key("describe_configs."+securityOpen)] = int(resp.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode)
	}

	for _, group := range []string{securityGroupAllowed, securityGroupOther} {
		obs[key("find_coordinator."+group)] = findCoordinator(ctx, c, group)
		commit := kadm.Offsets{}
		commit.Add(kadm.Offset{Topic: securityOpen, Partition: 0, At: 0, LeaderEpoch: -1})
		obs[key("offset_commit."+group)] = whileCoordinatorMoves(func() any {
			committed, err := c.adm.CommitOffsets(ctx, group, commit)
			if err == nil {
				err = committed.Error()
			}
			return errorCode(err)
		})
	}

	cluster := kmsg.NewPtrDescribeClusterRequest()
	cluster.IncludeClusterAuthorizedOperations = true
	if resp, err := c.seedRequest(ctx, cluster); err != nil {
		obs[key("describe_cluster")] = errorCode(err)
	} else {
		r := resp.(*kmsg.DescribeClusterResponse)
		obs[key("describe_cluster")] = map[string]any{"error": int(r.ErrorCode), "authorized_operations": r.ClusterAuthorizedOperations}
	}

	// Idempotent producers need IDEMPOTENT_WRITE on the cluster or WRITE on some topic.
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionTimeoutMillis = -1
	init.ProducerID = -1
	init.ProducerEpoch = -1
	if resp, err := c.seedRequest(ctx, init); err != nil {
		obs[key("init_producer_id")] = errorCode(err)
	} else {
		obs[key("init_producer_id")] = int(resp.(*kmsg.InitProducerIDResponse).ErrorCode)
	}

	// Cluster-level admin APIs.
	acls := kmsg.NewPtrDescribeACLsRequest()
	acls.ResourceType, acls.ResourcePatternType = 1, 1
	acls.Operation, acls.PermissionType = opAny, permAny
	if resp, err := c.seedRequest(ctx, acls); err != nil {
		obs[key("describe_acls")] = errorCode(err)
	} else {
		obs[key("describe_acls")] = int(resp.(*kmsg.DescribeACLsResponse).ErrorCode)
	}
	scram := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	up.Name, up.Mechanism, up.Iterations = "eve", 1, 4096
	up.Salt, up.SaltedPassword = []byte("0123456789abcdef"), make([]byte, 32)
	scram.Upsertions = append(scram.Upsertions, up)
	if resp, err := c.seedRequest(ctx, scram); err != nil {
		obs[key("alter_scram")] = errorCode(err)
	} else {
		obs[key("alter_scram")] = int(resp.(*kmsg.AlterUserSCRAMCredentialsResponse).Results[0].ErrorCode)
	}
	quotas := kmsg.NewPtrDescribeClientQuotasRequest()
	if resp, err := c.seedRequest(ctx, quotas); err != nil {
		obs[key("describe_client_quotas")] = errorCode(err)
	} else {
		obs[key("describe_client_quotas")] = int(resp.(*kmsg.DescribeClientQuotasResponse).ErrorCode)
	}
}

// consumeError: the error a consumer of `topic` (partition 0, from the start) polls first.
func consumeError(ctx context.Context, c *secureClient, topic string) any {
	opts := []kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}})}
	consumer, err := kgo.NewClient(append(append([]kgo.Opt{}, c.cl.Opts()...), opts...)...)
	if err != nil {
		return "client: " + err.Error()
	}
	defer consumer.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		fetches := consumer.PollFetches(ctx)
		if err := fetches.Err0(); err != nil {
			if ctx.Err() != nil {
				return "timeout"
			}
			return errorCode(err)
		}
		if fetches.NumRecords() > 0 {
			return 0
		}
	}
}

func observeQuotas(ctx context.Context, obs Observations, admin, asAlice *secureClient) {
	alter := func(name string, entity []kmsg.AlterClientQuotasRequestEntryEntity, key string, value float64) {
		req := kmsg.NewPtrAlterClientQuotasRequest()
		e := kmsg.NewAlterClientQuotasRequestEntry()
		e.Entity = entity
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key, op.Value = key, value
		e.Ops = append(e.Ops, op)
		req.Entries = append(req.Entries, e)
		resp, err := admin.seedRequest(ctx, req)
		if err != nil {
			obs["security.quotas.alter."+name] = errorCode(err)
			return
		}
		obs["security.quotas.alter."+name] = int(resp.(*kmsg.AlterClientQuotasResponse).Entries[0].ErrorCode)
	}
	user := func(name string) []kmsg.AlterClientQuotasRequestEntryEntity {
		e := kmsg.NewAlterClientQuotasRequestEntryEntity()
		e.Type, e.Name = "user", kmsg.StringPtr(name)
		return []kmsg.AlterClientQuotasRequestEntryEntity{e}
	}
	ip := kmsg.NewAlterClientQuotasRequestEntryEntity()
	ip.Type, ip.Name = "ip", kmsg.StringPtr("10.0.0.1")
	alter("user_producer_rate", user("alice"), "producer_byte_rate", quotaBytesPerSecond)
	alter("negative_rate", user("bob"), "consumer_byte_rate", -5)
	alter("unknown_key", user("bob"), "bytes_per_fortnight", 10)
	alter("fractional_byte_rate", user("bob"), "producer_byte_rate", 10.5)
	alter("request_percentage", user("bob"), "request_percentage", 50.5)
	// The quota reaches the brokers through the metadata log: wait until it is described.
	waitUntil(func() bool {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		c := kmsg.NewDescribeClientQuotasRequestComponent()
		c.EntityType, c.MatchType, c.Match = "user", 0, kmsg.StringPtr("alice")
		req.Components = append(req.Components, c)
		resp, err := admin.seedRequest(ctx, req)
		return err == nil && len(resp.(*kmsg.DescribeClientQuotasResponse).Entries) > 0
	})

	describe := kmsg.NewPtrDescribeClientQuotasRequest()
	component := kmsg.NewDescribeClientQuotasRequestComponent()
	component.EntityType, component.MatchType = "user", 1 // any user-named entity
	describe.Components = append(describe.Components, component)
	if resp, err := admin.seedRequest(ctx, describe); err != nil {
		obs["security.quotas.describe"] = errorCode(err)
	} else {
		var entries []string
		for _, e := range resp.(*kmsg.DescribeClientQuotasResponse).Entries {
			var parts []string
			for _, entity := range e.Entity {
				name := "<default>"
				if entity.Name != nil {
					name = *entity.Name
				}
				parts = append(parts, entity.Type+"="+name)
			}
			for _, v := range e.Values {
				parts = append(parts, fmt.Sprintf("%s:%g", v.Key, v.Value))
			}
			sort.Strings(parts)
			entries = append(entries, strings.Join(parts, ","))
		}
		sort.Strings(entries)
		obs["security.quotas.describe"] = entries
	}

	// Alice writes ten times her quota in one request: the answer must carry a throttle.
	throttled := false
	for i := 0; i < 3 && !throttled; i++ {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 10000
		t := kmsg.NewProduceRequestTopic()
		t.Topic = securityOpen
		p := kmsg.NewProduceRequestTopicPartition()
		p.Partition = 0
		p.Records = recordBatch(10 * quotaBytesPerSecond)
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		resp, err := asAlice.seedRequest(ctx, req)
		if err != nil {
			obs["security.quotas.produce_throttled"] = errorCode(err)
			return
		}
		throttled = resp.(*kmsg.ProduceResponse).ThrottleMillis > 0
	}
	obs["security.quotas.produce_throttled"] = throttled
}

// recordBatch: one uncompressed v2 batch holding one record with a value of `size` bytes.
func recordBatch(size int) []byte {
	return encodeBatch(time.Now().UnixMilli(), []rawRecord{{value: []byte(strings.Repeat("q", size))}}, false)
}

func createACLs(ctx context.Context, obs Observations, admin *secureClient, names []string, creations map[string]kmsg.CreateACLsRequestCreation) {
	create := kmsg.NewPtrCreateACLsRequest()
	for _, name := range names {
		create.Creations = append(create.Creations, creations[name])
	}
	resp, err := admin.seedRequest(ctx, create)
	for i, name := range names {
		switch {
		case err != nil:
			obs["security.create_acls."+name] = errorCode(err)
		case i < len(resp.(*kmsg.CreateACLsResponse).Results):
			obs["security.create_acls."+name] = int(resp.(*kmsg.CreateACLsResponse).Results[i].ErrorCode)
		}
	}
}

// findCoordinator: FindCoordinator's code for `group`, once the coordinator is up (Kafka
// creates __consumer_offsets at the first request and answers COORDINATOR_NOT_AVAILABLE
// until then).
func findCoordinator(ctx context.Context, c *secureClient, group string) any {
	for attempt := 0; ; attempt++ {
		find := kmsg.NewPtrFindCoordinatorRequest()
		find.CoordinatorKey = group
		find.CoordinatorKeys = []string{group}
		resp, err := c.seedRequest(ctx, find)
		if err != nil {
			return errorCode(err)
		}
		r := resp.(*kmsg.FindCoordinatorResponse)
		code := r.ErrorCode
		if len(r.Coordinators) > 0 {
			code = r.Coordinators[0].ErrorCode
		}
		if (code != 15 && code != 14) || attempt == 40 {
			return int(code)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// whileCoordinatorMoves repeats `call` while it answers that the group coordinator is
// loading, not available or elsewhere (Kafka while __consumer_offsets is being created).
func whileCoordinatorMoves(call func() any) any {
	for attempt := 0; ; attempt++ {
		code := call()
		if (code != 14 && code != 15 && code != 16) || attempt == 40 {
			return code
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitUntil polls `done` every 100 ms for at most 15 s (what it waits for then shows up as a
// difference in the observations, not as a hang).
func waitUntil(done func() bool) {
	for deadline := time.Now().Add(15 * time.Second); !done() && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
}
