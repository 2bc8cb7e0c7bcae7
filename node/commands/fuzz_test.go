package commands

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/actorlet/actorlet/messages/wire"
)

// FuzzCommandRequest sends any body to any verb of a real command service
// (real NATS): every request gets an answer (never a timeout: the service
// neither hangs nor crashes), a failure is a coded error with a
// description, and bad input is a 4xx, never a 500. Seeds: the hostile
// requests of the service, limits and placement tests. `make fuzz` runs it
// briefly; explore with `go test -run=^$ -fuzz=FuzzCommandRequest ./node/commands/`.
func FuzzCommandRequest(f *testing.F) {
	nc := runNATS(f)
	logPath := filepath.Join(f.TempDir(), "0.log")
	if err := os.WriteFile(logPath, []byte(sampleLog), 0o600); err != nil {
		f.Fatal(err)
	}
	node := &placementNode{fakeNode: fakeNode{
		logs: map[string]string{"default/web/app": logPath, "default/web/app/previous": logPath},
		exec: func(cmd []string, _ time.Duration) ([]byte, []byte, int, error) {
			return []byte(strings.Join(cmd, " ")), nil, 0, nil
		},
	}}
	node.setPods(testPod("default", "web", "uid-web", "app", "side"))
	startService(f, nc, node, ServiceOptions{})
	verbIndex := func(v string) uint8 { return uint8(slices.Index(wire.Verbs, v)) }
	for _, s := range []struct {
		verb string
		body string
	}{
		{wire.VerbPodsList, `{}`}, {wire.VerbPodsList, `{"limit":-1,"continue":"\u0000"}`}, {wire.VerbPodsList, ``},
		{wire.VerbPodsGet, `{"name":"web"}`}, {wire.VerbPodsGet, `{"namespace":"../x","name":""}`}, {wire.VerbPodsGet, `[]`},
		{wire.VerbPodsDescribe, `{"name":"web"}`}, {wire.VerbPodsDescribe, `null`},
		{wire.VerbLogs, `{"name":"web","container":"app","tailLines":2,"timestamps":true}`},
		{wire.VerbLogs, `{"name":"web","tailLines":-5}`}, {wire.VerbLogs, `{"name":"web","container":"app","follow":true}`},
		{wire.VerbLogs, `{"name":"web","container":"app","previous":true,"tailLines":9223372036854775807}`},
		{wire.VerbExec, `{"name":"web","container":"app","command":["id"]}`}, {wire.VerbExec, `{"name":"web","command":[]}`},
		{wire.VerbExec, `{"name":"web","container":"app","command":["x"],"timeoutSeconds":9223372036854775807}`},
		{wire.VerbExec, `{"name":"web","container":"app","command":["x"],"timeoutSeconds":-1}`},
		{wire.VerbRestart, `{"name":"web","container":"nope"}`},
		{wire.VerbEvict, `{"name":"web","gracePeriodSeconds":-1}`}, {wire.VerbEvict, `{"name":"web","gracePeriodSeconds":18446744074,"reason":"` + strings.Repeat("r", 5000) + `"}`},
		{wire.VerbPlacement, `{"labels":{"a":"b"},"taints":[{"key":"k","effect":"NoExecute"}]}`},
		{wire.VerbPlacement, `{"taints":[{"key":"k","effect":"Bogus"}],"labels":{"bad key!":"x"}}`},
		{wire.VerbStreamExec, `{"name":"web","container":"app","command":["sh"],"tty":true,"width":65535,"height":0}`},
		{wire.VerbStreamAttach, `{"name":"web","container":"app"}`}, {wire.VerbStreamPortForward, `{"name":"web","ports":[0,65536,-1]}`},
		{wire.VerbExec, "{\"name\":\"web\",\"command\":[\"\xff\"]"}, {wire.VerbPodsGet, strings.Repeat("[", 10000)},
	} {
		f.Add(verbIndex(s.verb), []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, verb uint8, body []byte) {
		v := wire.Verbs[int(verb)%len(wire.Verbs)]
		if v == wire.VerbPlacement {
			defer node.SetPlacement(nil, nil, nil)
		}
		msg, err := nc.Request(wire.CommandSubject("n1", v), body, 10*time.Second)
		if err != nil {
			t.Fatalf("%s %q: %v (want an answer, never a timeout)", v, body, err)
		}
		code, desc := msg.Header.Get(micro.ErrorCodeHeader), msg.Header.Get(micro.ErrorHeader)
		switch code {
		case "":
		case fmt.Sprint(wire.CodeInternal):
			t.Fatalf("%s %q: 500 %s (bad input must be a 4xx)", v, body, desc)
		default:
			if desc == "" || len(code) != 3 || code[0] != '4' && code[0] != '5' {
				t.Fatalf("%s %q: error code %q description %q", v, body, code, desc)
			}
		}
	})
}
