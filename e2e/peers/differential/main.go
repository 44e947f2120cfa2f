// Command differential plays one scenario against Apache Kafka and against Oxbow and
// compares what a client observes: assigned offsets, error codes, returned records, list-
// offsets answers, config values, committed group offsets. Every difference must be fixed or
// listed in e2e/peers/KNOWN-DIFFERENCES.md (a line "- `observation.key`: reason"; `*` matches
// within a key).
//
//	differential -kafka 127.0.0.1:9092 -oxbow 127.0.0.1:9192 [-known FILE] [-out DIR]
//	differential -bootstrap 127.0.0.1:9092                  (one broker: observations as JSON)
//	differential -compare kafka.json oxbow.json [-known FILE]
//
// The scenario (scenario.go): create a topic (and again, and with 0 partitions), produce
// keyed batches with headers and explicit timestamps, list offsets (earliest, latest, max
// timestamp, by time), consume from earliest / a timestamp / latest, describe configs,
// commit and fetch group offsets, delete records (and fetch below the new log start),
// produce to an unknown partition, over the size limit and with a bad CRC, produce keyless
// records to a compacted topic and records with out-of-range timestamps (KIP-467 record
// errors), produce lz4 to a compression.type=zstd topic (stored codec, values read back),
// create topics with invalid compression and timestamp configs, ask metadata for an
// unknown topic, and feed a compacted topic a seeded sequence of batches (codecs, tombstones,
// a batch whose newest record of a key is in its middle), then read it back once cleaned
// (compaction.go). Transactions (transactions.go, raw requests pinned to transaction
// version 1 as older clients speak it): commits and aborts as readers see them at both
// isolation levels (last stable offset, aborted transactions, control batches), an open
// transaction holding the last stable offset, offsets committed in transactions
// (require_stable), refused EndTxn / AddPartitionsToTxn / InitProducerId requests each
// followed by a transaction that still commits, a transaction aborted by its timeout,
// Describe/ListTransactions, DescribeProducers, and a transactional write to a partition
// the transaction never added; then transaction version 2 as Kafka 4 clients speak it
// (txnv2.go): the transaction.version feature, partitions and offsets added by Produce
// v12 / TxnOffsetCommit v5, EndTxn v5's epoch bumps, its retries and refusals, a zombie's
// late write, an aborted and a timed-out transaction. With -kafka-secure/-oxbow-secure, a second pair of brokers
// with the same security settings plays the security scenario (security.go): SCRAM
// credentials, ACLs, authentication failures, what each principal is answered, client
// quotas.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	bootstrap := flag.String("bootstrap", "", "run the scenario against one broker and print its observations")
	kafka := flag.String("kafka", "", "Apache Kafka's bootstrap address")
	oxbow := flag.String("oxbow", "", "Oxbow's bootstrap address")
	compare := flag.Bool("compare", false, "compare two observation files given as arguments")
	known := flag.String("known", "", "KNOWN-DIFFERENCES.md (default: beside this program's source)")
	out := flag.String("out", "", "directory to write kafka.json and oxbow.json into")
	kafkaSecure := flag.String("kafka-secure", "", "a secured Kafka for the security scenario: ADMIN_HOST:PORT,SASL_HOST:PORT")
	oxbowSecure := flag.String("oxbow-secure", "", "a secured Oxbow for the security scenario: ADMIN_HOST:PORT,SASL_HOST:PORT")
	flag.Parse()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var err error
	switch {
	case *bootstrap != "":
		err = printObservations(ctx, *bootstrap)
	case *compare:
		if flag.NArg() != 2 {
			err = fmt.Errorf("-compare needs two files: kafka.json oxbow.json")
			break
		}
		err = compareFiles(flag.Arg(0), flag.Arg(1), *known)
	case *kafka != "" && *oxbow != "":
		err = runBoth(ctx, *kafka, *oxbow, *kafkaSecure, *oxbowSecure, *known, *out)
	default:
		flag.Usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "differential: %v\n", err)
		os.Exit(1)
	}
}

func printObservations(ctx context.Context, bootstrap string) error {
	obs, err := runScenario(ctx, bootstrap)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(obs)
}

func runBoth(ctx context.Context, kafka, oxbow, kafkaSecure, oxbowSecure, known, out string) error {
	reference, err := runScenario(ctx, kafka)
	if err != nil {
		return fmt.Errorf("against Kafka (%s): %w", kafka, err)
	}
	candidate, err := runScenario(ctx, oxbow)
	if err != nil {
		return fmt.Errorf("against Oxbow (%s): %w", oxbow, err)
	}
	if kafkaSecure != "" && oxbowSecure != "" {
		for _, side := range []struct {
			name, addresses string
			into            Observations
		}{{"Kafka", kafkaSecure, reference}, {"Oxbow", oxbowSecure, candidate}} {
			admin, sasl, ok := strings.Cut(side.addresses, ",")
			if !ok {
				return fmt.Errorf("-%s-secure wants ADMIN,SASL addresses", strings.ToLower(side.name))
			}
			secured, err := runSecurityScenario(ctx, admin, sasl)
			if err != nil {
				return fmt.Errorf("security scenario against %s (%s): %w", side.name, side.addresses, err)
			}
			for k, v := range secured {
				side.into[k] = v
			}
		}
	}
	if out != "" {
		for name, obs := range map[string]Observations{"kafka.json": reference, "oxbow.json": candidate} {
			data, err := json.MarshalIndent(obs, "", "  ")
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(out, name), data, 0o644); err != nil {
				return err
			}
		}
	}
	return report(normalize(reference), normalize(candidate), known)
}

func compareFiles(kafkaFile, oxbowFile, known string) error {
	load := func(path string) (map[string]string, error) {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var obs Observations
		if err := json.Unmarshal(data, &obs); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return normalize(obs), nil
	}
	reference, err := load(kafkaFile)
	if err != nil {
		return err
	}
	candidate, err := load(oxbowFile)
	if err != nil {
		return err
	}
	return report(reference, candidate, known)
}
