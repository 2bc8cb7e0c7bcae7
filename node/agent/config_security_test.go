package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSecurityFlags(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := ParseFlags([]string{"--node-name", "n1", "--root-dir", dir, "--nats-url", "nats://x:4222", "--nats-user", "node",
		"--nats-password-file", pw, "--allow-exec=false"})
	if err != nil {
		t.Fatal(err)
	}
	if c.NATS.Password != "s3cret" || c.AllowExec || !c.AllowLogs {
		t.Errorf("password %q allowExec %v allowLogs %v, want s3cret false true", c.NATS.Password, c.AllowExec, c.AllowLogs)
	}
	c, err = ParseFlags([]string{"--node-name", "n1", "--root-dir", dir, "--enable-debugging-handlers=false",
		"--nats-tls-cert", "c.pem", "--nats-tls-key", "k.pem"})
	if err != nil {
		t.Fatal(err)
	}
	if c.AllowExec || c.AllowLogs {
		t.Error("--enable-debugging-handlers=false left exec or logs on")
	}
	if c.NATS.EmbeddedTLSCert != "c.pem" || c.NATS.TLSCert != "" {
		t.Errorf("without --nats-url the TLS pair is the embedded server's: %+v", c.NATS)
	}

	env := map[string]string{"ACTORLET_NATS_TOKEN": "tok"}
	c = DefaultConfig()
	if err := c.resolveSecrets(func(k string) string { return env[k] }); err != nil || c.NATS.Token != "tok" {
		t.Errorf("token from the environment: %q, %v", c.NATS.Token, err)
	}

	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, maxSecretFileBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseFlags([]string{"--node-name", "n1", "--root-dir", dir, "--nats-token-file", big}); err == nil || !strings.Contains(err.Error(), "nats-token-file") {
		t.Errorf("oversized token file: %v, want an error naming --nats-token-file", err)
	}
	if _, err := ParseFlags([]string{"--node-name", "n1", "--root-dir", dir, "--nats-password-file", filepath.Join(dir, "none")}); err == nil || !strings.Contains(err.Error(), "nats-password-file") {
		t.Errorf("missing password file: %v", err)
	}
}
