package wire

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"
)

// TestDescribeJSONIsCamelCase: the pod actor's and probes' state goes on
// the wire in pods.describe with camelCase names and words for its states,
// as docs/protocol.md documents, never Go field names or enum numbers.
func TestDescribeJSONIsCamelCase(t *testing.T) {
	grace := int64(3)
	for _, v := range []any{
		PodWorker{Found: true, UID: "u", FullName: "ns/n", WorkType: "sync", PendingUpdate: "kill", RestartRequested: true, GracePeriod: &grace, LastSyncError: "e"},
		ProbeWorker{ContainerName: "c", ContainerID: "id", Kind: "readiness", Result: "Success", Message: "m"},
	} {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		for k := range m {
			if unicode.IsUpper(rune(k[0])) {
				t.Errorf("%T: key %q is not camelCase (JSON %s)", v, k, data)
			}
		}
	}
	data, _ := json.Marshal(PodWorker{WorkType: "terminating", PendingUpdate: "kill"})
	if !strings.Contains(string(data), `"workType":"terminating"`) || !strings.Contains(string(data), `"pendingUpdate":"kill"`) {
		t.Errorf("PodWorker JSON = %s, want workType and pendingUpdate", data)
	}
}
