//go:build tools

// Package tools pins the add-on commands that e2e/k8s/install builds.
package tools

import (
	_ "github.com/coredns/coredns/coremain"
)
