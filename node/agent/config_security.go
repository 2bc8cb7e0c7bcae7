package agent

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
)

// maxSecretFileBytes bounds a password or token file.
const maxSecretFileBytes = 64 * 1024

func registerSecurityFlags(fs *flag.FlagSet, cfg *Config) {
	fs.StringVar(&cfg.NATS.PasswordFile, "nats-password-file", cfg.NATS.PasswordFile, "file holding the NATS password (or env ACTORLET_NATS_PASSWORD)")
	fs.StringVar(&cfg.NATS.TokenFile, "nats-token-file", cfg.NATS.TokenFile, "file holding the NATS token (or env ACTORLET_NATS_TOKEN)")
	fs.BoolVar(&cfg.AllowExec, "allow-exec", cfg.AllowExec, "serve the exec command (false: refused with 403 at the node)")
	fs.BoolVar(&cfg.AllowLogs, "allow-logs", cfg.AllowLogs, "serve the logs command (false: refused with 403 at the node)")
	fs.BoolVar(&cfg.EnableDebuggingHandlers, "enable-debugging-handlers", cfg.EnableDebuggingHandlers, "false turns off exec and logs, as the kubelet's flag")
}

// resolveSecrets reads the password and token from their files or the
// environment when not given directly, and applies the command policy.
func (c *Config) resolveSecrets(getenv func(string) string) error {
	n := &c.NATS
	var err error
	if n.Password == "" {
		if n.Password, err = secret(n.PasswordFile, "ACTORLET_NATS_PASSWORD", "nats-password-file", getenv); err != nil {
			return err
		}
	}
	if n.Token == "" {
		if n.Token, err = secret(n.TokenFile, "ACTORLET_NATS_TOKEN", "nats-token-file", getenv); err != nil {
			return err
		}
	}
	if n.URL == "" {
		// Without an external server, the TLS pair is the embedded server's.
		n.EmbeddedTLSCert, n.EmbeddedTLSKey = n.TLSCert, n.TLSKey
		n.TLSCert, n.TLSKey = "", ""
	}
	if !c.EnableDebuggingHandlers {
		c.AllowExec, c.AllowLogs = false, false
	}
	return nil
}

func secret(file, env, flagName string, getenv func(string) string) (string, error) {
	if file == "" {
		return getenv(env), nil
	}
	f, err := os.Open(file)
	if err != nil {
		return "", fmt.Errorf("--%s: %w", flagName, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFileBytes+1))
	if err != nil {
		return "", fmt.Errorf("--%s: %w", flagName, err)
	}
	if len(b) > maxSecretFileBytes {
		return "", fmt.Errorf("--%s: %s is larger than %d bytes", flagName, file, maxSecretFileBytes)
	}
	return string(bytes.TrimSpace(b)), nil
}
