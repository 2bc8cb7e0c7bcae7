// Package pullsecrets turns a pod's imagePullSecrets into the registry
// credentials of CRI PullImage, as the kubelet's credential keyring
// (pkg/credentialprovider) does:
//
//   - kubernetes.io/dockerconfigjson Secrets (".dockerconfigjson":
//     {"auths": {registry: entry}}) and kubernetes.io/dockercfg Secrets
//     (".dockercfg": {registry: entry}); an entry is username/password, or
//     "auth": base64("user:pass"), which wins.
//   - A registry key is a host with an optional port and path, with or
//     without a scheme; "/v1/" and "/v2/" paths mean the host alone. Host
//     parts may be globs ("*.example.com"), matched part by part; the port
//     must be equal and the key's path a prefix of the image's path.
//   - Keys are tried most specific first (reverse lexical order, so
//     "quay.io/team" before "quay.io"), every matching credential is
//     returned in that order, and an image of Docker Hub falls back to the
//     "index.docker.io" key.
//
// Credentials are secret: nothing here logs them, and their String forms
// name only the registry key.
package pullsecrets

import (
	"net"
	"net/url"
	"path/filepath"
	"sort"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// defaultRegistryHost is Docker Hub's key, used for Hub images no other
// key matches.
const defaultRegistryHost = "index.docker.io"

// Keyring holds registry credentials by registry key.
type Keyring struct {
	index []string // keys, most specific first
	creds map[string][]Credential
}

// Credential is one registry login.
type Credential struct {
	// Key is the registry key it was found under (host[:port][/path]).
	Key      string
	Username string
	Password string
}

// String names the credential without its secret parts.
func (c Credential) String() string { return "credential for " + c.Key }

// AuthConfig is the credential as CRI PullImage takes it (the kubelet
// passes username and password only).
func (c Credential) AuthConfig() *runtimeapi.AuthConfig {
	return &runtimeapi.AuthConfig{Username: c.Username, Password: c.Password}
}

// Add adds a docker config's entries. Entries whose key is not a URL are
// skipped, as the kubelet skips them.
func (k *Keyring) Add(cfg DockerConfig) {
	if k.creds == nil {
		k.creds = map[string][]Credential{}
	}
	// Map order is random: add the keys of one config in a fixed order so
	// two credentials under one key keep a stable order.
	locs := make([]string, 0, len(cfg))
	for loc := range cfg {
		locs = append(locs, loc)
	}
	sort.Strings(locs)
	for _, loc := range locs {
		key, ok := registryKey(loc)
		if !ok {
			continue
		}
		e := cfg[loc]
		if _, seen := k.creds[key]; !seen {
			k.index = append(k.index, key)
		}
		k.creds[key] = append(k.creds[key], Credential{Key: key, Username: e.Username, Password: e.Password})
	}
	sort.Sort(sort.Reverse(sort.StringSlice(k.index)))
}

// registryKey is a config key as the keyring indexes it: host[:port] and
// the path, without scheme, "/v1/" or "/v2/".
func registryKey(loc string) (string, bool) {
	value := loc
	if !strings.HasPrefix(value, "https://") && !strings.HasPrefix(value, "http://") {
		value = "https://" + value
	}
	parsed, err := url.Parse(value)
	if err != nil || parsed.Host == "" {
		return "", false
	}
	path := parsed.Path
	if strings.HasPrefix(path, "/v2/") || strings.HasPrefix(path, "/v1/") {
		path = path[3:]
	}
	if path != "" && path != "/" {
		return parsed.Host + path, true
	}
	return parsed.Host, true
}

// Lookup returns the credentials for an image repository (its name without
// tag or digest, normalised: "docker.io/library/busybox"), most specific
// registry key first; none when no key matches.
func (k *Keyring) Lookup(repo string) []Credential {
	if k == nil {
		return nil
	}
	var out []Credential
	for _, key := range k.index {
		if urlsMatch(key, repo) {
			out = append(out, k.creds[key]...)
		}
	}
	if len(out) > 0 {
		return out
	}
	if isDefaultRegistryMatch(repo) {
		return append(out, k.creds[defaultRegistryHost]...)
	}
	return nil
}

// isDefaultRegistryMatch reports whether an image is pulled from Docker
// Hub: no registry host in its first component ("library/ubuntu",
// "ubuntu"), or docker.io / index.docker.io.
func isDefaultRegistryMatch(image string) bool {
	first, _, found := strings.Cut(image, "/")
	if first == "" {
		return false
	}
	if !found || first == "docker.io" || first == defaultRegistryHost {
		return true
	}
	return !strings.ContainsAny(first, ".:")
}

// schemeless parses a URL given without scheme.
func schemeless(s string) (*url.URL, bool) {
	u, err := url.Parse("https://" + s)
	if err != nil {
		return nil, false
	}
	return u, true
}

func splitHost(u *url.URL) ([]string, string) {
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		host, port = u.Host, ""
	}
	return strings.Split(host, "."), port
}

// urlsMatch reports whether target matches glob: the same port, the same
// number of host parts each matching its glob part, and glob's path a
// prefix of target's.
func urlsMatch(glob, target string) bool {
	g, ok1 := schemeless(glob)
	t, ok2 := schemeless(target)
	if !ok1 || !ok2 {
		return false
	}
	gParts, gPort := splitHost(g)
	tParts, tPort := splitHost(t)
	if gPort != tPort || len(gParts) != len(tParts) || !strings.HasPrefix(t.Path, g.Path) {
		return false
	}
	for i, gp := range gParts {
		if ok, err := filepath.Match(gp, tParts[i]); err != nil || !ok {
			return false
		}
	}
	return true
}
