// Command coredns is CoreDNS (github.com/coredns/coredns) with only the plugins the e2e
// testbed's cluster DNS uses, the way CoreDNS documents custom builds: its own coremain,
// its own plugins, and a directive list in CoreDNS's execution order. Leaving out the
// cloud back-ends (route53, azure, clouddns, ...) keeps the build a few minutes long.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/template"
)

func init() {
	// Same relative order as CoreDNS's plugin.cfg.
	dnsserver.Directives = []string{
		"bind", "ready", "health", "prometheus", "errors", "log", "cache", "template", "kubernetes",
	}
}

func main() {
	coremain.Run()
}
