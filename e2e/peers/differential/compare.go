package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
)

// normalize renders every observation as canonical JSON text, so values read back from a
// file compare equal to values observed live.
func normalize(obs Observations) map[string]string {
	out := make(map[string]string, len(obs))
	for k, v := range obs {
		data, err := json.Marshal(v)
		if err != nil {
			data = []byte(fmt.Sprintf("%q", fmt.Sprint(v)))
		}
		var generic any
		if json.Unmarshal(data, &generic) == nil {
			data, _ = json.Marshal(generic)
		}
		out[k] = string(data)
	}
	return out
}

var backticked = regexp.MustCompile("`([^`]+)`")

// knownDifferences reads the keys (glob patterns) listed in KNOWN-DIFFERENCES.md: list items
// that open with one or more backticked keys followed by a colon.
func knownDifferences(file string) ([]string, error) {
	if file == "" {
		_, self, _, ok := runtime.Caller(0)
		if !ok {
			return nil, nil
		}
		file = filepath.Join(filepath.Dir(self), "..", "KNOWN-DIFFERENCES.md")
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("known differences: %w", err)
	}
	defer f.Close()
	var patterns []string
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		// A list item "- `key`, `other.key`: reason" lists every backticked key before the colon.
		line := strings.TrimSpace(scanner.Text())
		end := strings.Index(line, "`:")
		if !strings.HasPrefix(line, "- `") || end < 0 {
			continue
		}
		for _, m := range backticked.FindAllStringSubmatch(line[:end+1], -1) {
			patterns = append(patterns, m[1])
		}
	}
	return patterns, scanner.Err()
}

func isKnown(key string, patterns []string) string {
	for _, p := range patterns {
		if ok, _ := path.Match(p, key); ok || p == key {
			return p
		}
	}
	return ""
}

// report prints every key that differs and fails when one is not a known difference.
func report(reference, candidate map[string]string, knownFile string) error {
	patterns, err := knownDifferences(knownFile)
	if err != nil {
		return err
	}
	keys := map[string]bool{}
	for k := range reference {
		keys[k] = true
	}
	for k := range candidate {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	same, known, unknown := 0, 0, 0
	used := map[string]bool{}
	for _, k := range sorted {
		a, aok := reference[k]
		b, bok := candidate[k]
		if aok && bok && a == b {
			same++
			continue
		}
		if !aok {
			a = "(absent)"
		}
		if !bok {
			b = "(absent)"
		}
		tag := "DIFFERENT"
		if p := isKnown(k, patterns); p != "" {
			tag = "known    "
			known++
			used[p] = true
		} else {
			unknown++
		}
		fmt.Printf("%s %s\n    kafka: %s\n    oxbow: %s\n", tag, k, clip(a), clip(b))
	}
	for _, p := range patterns {
		if !used[p] {
			fmt.Printf("note: known difference `%s` no longer differs; remove it from KNOWN-DIFFERENCES.md\n", p)
		}
	}
	fmt.Printf("differential: %d observations: %d same, %d known differences, %d unexplained\n",
		len(sorted), same, known, unknown)
	if unknown > 0 {
		return fmt.Errorf("%d unexplained difference(s): fix them or list them in KNOWN-DIFFERENCES.md", unknown)
	}
	return nil
}

func clip(s string) string {
	if len(s) > 600 {
		return s[:600] + "..."
	}
	return s
}
