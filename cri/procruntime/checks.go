package procruntime

import (
	"errors"
	"fmt"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Checks of a sandbox config's sysctls and DNS config (see isolation.go).

// maxSysctls bounds a pod's sysctls.
const maxSysctls = 64

// checkSysctls accepts only sysctls of the namespaces a sandbox owns
// (IPC: kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*; UTS:
// kernel.hostname, kernel.domainname): anything else would change the host
// (there is no network namespace, so no net.*).
func checkSysctls(sysctls map[string]string, namespaces bool, opts *runtimeapi.NamespaceOption) error {
	if len(sysctls) == 0 {
		return nil
	}
	if len(sysctls) > maxSysctls {
		return fmt.Errorf("config.linux.sysctls: %d entries, limit is %d", len(sysctls), maxSysctls)
	}
	if !namespaces {
		return errors.New("config.linux.sysctls: need the runtime's namespace isolation (root); they would change the host")
	}
	for k, v := range sysctls {
		ipc := strings.HasPrefix(k, "kernel.shm") || strings.HasPrefix(k, "kernel.msg") || k == "kernel.sem" || strings.HasPrefix(k, "fs.mqueue.")
		uts := k == "kernel.hostname" || k == "kernel.domainname"
		switch {
		case ipc && opts.GetIpc() == runtimeapi.NamespaceMode_NODE:
			return fmt.Errorf("config.linux.sysctls %q: the pod shares the host's IPC namespace", k)
		case !ipc && !uts:
			return fmt.Errorf("config.linux.sysctls %q: not in a namespace the process runtime gives a pod (IPC, UTS)", k)
		case strings.Contains(k, "/") || strings.Contains(k, "..") || len(v) > 4096:
			return fmt.Errorf("config.linux.sysctls %q: malformed", k)
		}
	}
	return nil
}

// maxDNSEntries and maxDNSEntry bound a pod's DNS config.
const (
	maxDNSEntries = 32
	maxDNSEntry   = 256
)

// checkDNS refuses a DNS config that is too large or would inject lines
// into resolv.conf.
func checkDNS(dns *runtimeapi.DNSConfig) error {
	for field, vals := range map[string][]string{"servers": dns.GetServers(), "searches": dns.GetSearches(), "options": dns.GetOptions()} {
		if len(vals) > maxDNSEntries {
			return fmt.Errorf("config.dns_config.%s: %d entries, limit is %d", field, len(vals), maxDNSEntries)
		}
		for _, v := range vals {
			if len(v) == 0 || len(v) > maxDNSEntry || strings.ContainsAny(v, " \t\r\n") {
				return fmt.Errorf("config.dns_config.%s %.40q: empty, longer than %d bytes or with whitespace", field, v, maxDNSEntry)
			}
		}
	}
	return nil
}

// resolvConf renders the pod's DNS config.
func resolvConf(dns *runtimeapi.DNSConfig) []byte {
	var b strings.Builder
	for _, s := range dns.GetServers() {
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}
	if len(dns.GetSearches()) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(dns.GetSearches(), " "))
	}
	if len(dns.GetOptions()) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(dns.GetOptions(), " "))
	}
	return []byte(b.String())
}
