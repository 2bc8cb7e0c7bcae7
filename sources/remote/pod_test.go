package remote

import (
	"regexp"
	"testing"
)

func TestUIDIsStableAndNamespaced(t *testing.T) {
	a := &Source{cfg: Config{NodeName: "n1"}}
	b := &Source{cfg: Config{NodeName: "n2"}}
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	u1, u2 := a.uidFor("fleet.default.web"), a.uidFor("fleet.default.web")
	if u1 != u2 || !uuid.MatchString(string(u1)) {
		t.Fatalf("uidFor = %q then %q, want one stable version-5 UUID", u1, u2)
	}
	if u1 == a.uidFor("fleet.default.web2") || u1 == b.uidFor("fleet.default.web") {
		t.Error("different keys or nodes share a UID")
	}
}
