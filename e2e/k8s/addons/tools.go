//go:build tools

// Package tools pins the add-on commands that e2e/k8s/install builds from this module:
// CoreDNS through ./coredns (its coremain and the plugins the testbed uses) and Prometheus.
package tools

import (
	_ "github.com/coredns/coredns/coremain"
	_ "github.com/prometheus/prometheus/cmd/prometheus"
)
