// Command roundtrip is franz-go's round trip against any Kafka-compatible bootstrap address.
//
// It creates a topic (3 partitions, the broker's default replication factor), produces N keyed
// records with headers and random payloads with kgo's DEFAULT producer settings (idempotent,
// acks=all), consumes them back through a consumer group, checks each record byte for byte
// (key, value, header, partition, offset), commits, and checks the committed offsets.
//
// Optionally every client (admin, producer, consumer) connects over TLS, trusting one CA and
// verifying the broker's name (the host of the address dialed), and authenticates with SASL
// (SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN, franz-go's own mechanisms). With
// -expect-auth-failure it only connects, and succeeds only when the broker refuses the
// credentials with SASL_AUTHENTICATION_FAILED.
//
//	roundtrip -bootstrap 127.0.0.1:9092 [-messages 1000]
//	          [-tls-ca ca.crt] [-sasl-mechanism SCRAM-SHA-512 -sasl-user U -sasl-password P]
//	          [-expect-auth-failure]
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

type position struct {
	partition int32
	offset    int64
}

func main() {
	bootstrap := flag.String("bootstrap", "", "bootstrap address host:port")
	messages := flag.Int("messages", 1000, "records to round-trip")
	tlsCA := flag.String("tls-ca", "", "connect over TLS, trusting this CA (PEM)")
	mechanism := flag.String("sasl-mechanism", "", "SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN")
	user := flag.String("sasl-user", "", "SASL user name")
	password := flag.String("sasl-password", "", "SASL password")
	expectAuthFailure := flag.Bool("expect-auth-failure", false,
		"only connect; succeed only if the broker refuses the credentials (SASL_AUTHENTICATION_FAILED)")
	flag.Parse()
	if *bootstrap == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: roundtrip -bootstrap HOST:PORT [-messages N] [-tls-ca PATH] "+
			"[-sasl-mechanism M -sasl-user U -sasl-password P] [-expect-auth-failure]")
		os.Exit(2)
	}
	base, err := connectOptions(*bootstrap, *tlsCA, *mechanism, *user, *password)
	if err != nil {
		fmt.Fprintf(os.Stderr, "franz-go: %v\n", err)
		os.Exit(2)
	}
	if *expectAuthFailure {
		err = authFailure(*bootstrap, *mechanism, *user, base)
	} else {
		err = run(*bootstrap, *messages, base, security(*tlsCA, *mechanism, *user))
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "franz-go: FAIL: %v\n", err)
		os.Exit(1)
	}
}

// connectOptions are the options every client shares: the seed broker, and TLS and SASL when
// asked for. Without -tls-ca and -sasl-mechanism it is the seed broker alone, as before.
func connectOptions(bootstrap, tlsCA, mechanism, user, password string) ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(bootstrap)}
	if tlsCA != "" {
		pem, err := os.ReadFile(tlsCA)
		if err != nil {
			return nil, fmt.Errorf("read -tls-ca: %w", err)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("-tls-ca %s holds no PEM certificate", tlsCA)
		}
		// No ServerName: kgo sets it, per dial, to the host of the broker dialed (127.0.0.1
		// or localhost), which the certificate's subjectAltName must name.
		opts = append(opts, kgo.DialTLSConfig(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}))
	}
	var mech sasl.Mechanism
	switch mechanism {
	case "":
		if user != "" || password != "" {
			return nil, errors.New("-sasl-user and -sasl-password need -sasl-mechanism")
		}
		return opts, nil
	case "SCRAM-SHA-512":
		mech = scram.Auth{User: user, Pass: password}.AsSha512Mechanism()
	case "SCRAM-SHA-256":
		mech = scram.Auth{User: user, Pass: password}.AsSha256Mechanism()
	case "PLAIN":
		mech = plain.Auth{User: user, Pass: password}.AsMechanism()
	default:
		return nil, fmt.Errorf("-sasl-mechanism %q: expected SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN", mechanism)
	}
	if user == "" {
		return nil, fmt.Errorf("-sasl-mechanism %s needs -sasl-user", mechanism)
	}
	return append(opts, kgo.SASL(mech)), nil
}

// security describes the connection for the success line; empty for plaintext.
func security(tlsCA, mechanism, user string) string {
	var parts []string
	if tlsCA != "" {
		parts = append(parts, "TLS")
	}
	if mechanism != "" {
		parts = append(parts, "SASL "+mechanism+" as "+user)
	}
	if len(parts) == 0 {
		return ""
	}
	return " over " + strings.Join(parts, ", ")
}

// authFailure connects once and succeeds only if the broker refused the credentials with
// SASL_AUTHENTICATION_FAILED: not a timeout, a TLS error, or another error code.
func authFailure(bootstrap, mechanism, user string, base []kgo.Opt) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := kgo.NewClient(base...)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	defer client.Close()
	err = client.Ping(ctx)
	switch {
	case err == nil:
		return fmt.Errorf("%s as %s was accepted by %s; expected SASL_AUTHENTICATION_FAILED", mechanism, user, bootstrap)
	case !errors.Is(err, kerr.SaslAuthenticationFailed):
		return fmt.Errorf("%s as %s at %s failed, but not with SASL_AUTHENTICATION_FAILED: %w",
			mechanism, user, bootstrap, err)
	}
	fmt.Printf("franz-go: %s as %s refused by %s as expected: %v\n", mechanism, user, bootstrap, err)
	return nil
}

func run(bootstrap string, messages int, base []kgo.Opt, over string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	suffix := fmt.Sprintf("%08x", mrand.Uint32())
	topic := "franz-roundtrip-" + suffix
	group := "franz-roundtrip-group-" + suffix
	// with returns the shared options followed by a client's own.
	with := func(opts ...kgo.Opt) []kgo.Opt {
		return append(append([]kgo.Opt(nil), base...), opts...)
	}

	adminClient, err := kgo.NewClient(with()...)
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	defer adminClient.Close()
	admin := kadm.NewClient(adminClient)
	created, err := admin.CreateTopic(ctx, 3, -1, nil, topic)
	if err == nil {
		err = created.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}

	// Produce with kgo's defaults: idempotent, acks=all.
	producer, err := kgo.NewClient(with(kgo.DefaultProduceTopic(topic))...)
	if err != nil {
		return fmt.Errorf("producer: %w", err)
	}
	records := make([]*kgo.Record, messages)
	for i := range records {
		value := make([]byte, mrand.IntN(2048))
		_, _ = rand.Read(value)
		records[i] = &kgo.Record{
			Key:     []byte(fmt.Sprintf("key-%d", i%17)),
			Value:   value,
			Headers: []kgo.RecordHeader{{Key: "seq", Value: []byte(fmt.Sprintf("h-%d", i))}},
		}
	}
	if err := producer.ProduceSync(ctx, records...).FirstErr(); err != nil {
		producer.Close()
		return fmt.Errorf("produce: %w", err)
	}
	producer.Close()
	expected := make(map[position]*kgo.Record, messages)
	ends := map[int32]int64{}
	for _, r := range records {
		expected[position{r.Partition, r.Offset}] = r
		if r.Offset+1 > ends[r.Partition] {
			ends[r.Partition] = r.Offset + 1
		}
	}
	if len(expected) != messages {
		return errors.New("producer returned duplicate (partition, offset) pairs")
	}

	consumer, err := kgo.NewClient(with(
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
	)...)
	if err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	defer consumer.Close()
	received := 0
	for received < messages {
		fetches := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("timed out: received %d of %d records", received, messages)
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			return fmt.Errorf("fetch: %v", errs[0].Err)
		}
		for _, got := range fetches.Records() {
			at := position{got.Partition, got.Offset}
			want, ok := expected[at]
			if !ok {
				return fmt.Errorf("unexpected or duplicate record at %d/%d", at.partition, at.offset)
			}
			delete(expected, at)
			if !bytes.Equal(want.Key, got.Key) || !bytes.Equal(want.Value, got.Value) {
				return fmt.Errorf("key or value differs at %d/%d", at.partition, at.offset)
			}
			if len(got.Headers) != 1 || got.Headers[0].Key != "seq" ||
				!bytes.Equal(got.Headers[0].Value, want.Headers[0].Value) {
				return fmt.Errorf("headers differ at %d/%d", at.partition, at.offset)
			}
			received++
		}
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}

	committed, err := admin.FetchOffsets(ctx, group)
	if err != nil {
		return fmt.Errorf("fetch committed offsets: %w", err)
	}
	for partition, end := range ends {
		c, ok := committed.Lookup(topic, partition)
		if !ok || c.Err != nil || c.At != end {
			return fmt.Errorf("committed offset of %s-%d is %+v, expected %d", topic, partition, c, end)
		}
	}
	fmt.Printf("franz-go: %d records round-tripped byte-identical through %s%s (topic %s, group %s, idempotent producer, offsets committed)\n",
		messages, bootstrap, over, topic, group)
	return nil
}
