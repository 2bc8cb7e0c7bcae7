package procruntime

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

func TestAttachFrames(t *testing.T) {
	var b bytes.Buffer
	if err := writeFrame(&b, frameStdin, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	typ, p, err := readFrame(&b, nil)
	if err != nil || typ != frameStdin || string(p) != "hello" {
		t.Errorf("round trip: %d %q %v", typ, p, err)
	}
	// A hostile length is refused before anything is allocated for it.
	var h [5]byte
	h[0] = frameStdin
	binary.BigEndian.PutUint32(h[1:], 1<<31)
	if _, _, err := readFrame(bytes.NewReader(h[:]), nil); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("frame of 2 GiB: %v, want a limit error", err)
	}
	// A truncated frame is an error, not a short read.
	if _, _, err := readFrame(bytes.NewReader([]byte{frameStdout, 0, 0, 0, 9, 'x'}), nil); err == nil {
		t.Error("truncated frame accepted")
	}
}

func TestAttachSocketPathFitsSockaddr(t *testing.T) {
	id := strings.Repeat("a", 64)
	short := attachSocketPath("/var/lib/actorlet/runtime", id)
	if !strings.HasPrefix(short, "/var/lib/actorlet/runtime/attach/") {
		t.Errorf("short root: %s", short)
	}
	long := attachSocketPath("/"+strings.Repeat("d", 200), id)
	if len(long) >= 108 || long == attachSocketPath("/"+strings.Repeat("e", 200), id) {
		t.Errorf("long root: %q (%d bytes), must fit and differ per root", long, len(long))
	}
}

func TestParseIsolation(t *testing.T) {
	for in, want := range map[string]Isolation{
		"none":                          {},
		"namespaces":                    {Namespaces: true},
		"cgroups":                       {Cgroups: true},
		"namespaces,cgroups":            {Namespaces: true, Cgroups: true},
		"namespaces,cgroups,filesystem": {Namespaces: true, Cgroups: true, Filesystem: true},
	} {
		if got, err := ParseIsolation(in); err != nil || got != want {
			t.Errorf("ParseIsolation(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseIsolation("everything"); err == nil {
		t.Error("ParseIsolation(everything) accepted")
	}
	if _, err := ParseIsolation("cgroups,filesystem"); err == nil || !strings.Contains(err.Error(), "filesystem needs namespaces") {
		t.Errorf("ParseIsolation(cgroups,filesystem) = %v, want a refusal: a view needs the pod's namespaces", err)
	}
}
