package wire

import "testing"

func TestParseDesiredKey(t *testing.T) {
	tests := []struct {
		key     string
		want    DesiredKey
		wantErr bool
	}{
		{key: "node.mynode.default.web", want: DesiredKey{Node: "mynode", Namespace: "default", Name: "web"}},
		{key: DesiredNodeKey("n1.example.com", "kube-system", "web.v2"), want: DesiredKey{Node: "n1.example.com", Namespace: "kube-system", Name: "web.v2"}},
		{key: "fleet.default.agent", want: DesiredKey{Fleet: true, Namespace: "default", Name: "agent"}},
		{key: "node.mynode.default", wantErr: true},
		{key: "node.mynode.default.web.extra", wantErr: true},
		{key: "fleet.default", wantErr: true},
		{key: "pods.default.web", wantErr: true},
		{key: "node..default.web", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			got, err := ParseDesiredKey(tt.key)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParseDesiredKey(%q) = %+v, want error", tt.key, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseDesiredKey(%q) = %+v, %v; want %+v", tt.key, got, err, tt.want)
			}
			if got.String() != tt.key {
				t.Errorf("String() = %q, want %q", got.String(), tt.key)
			}
		})
	}
}
