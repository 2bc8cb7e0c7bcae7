package pullsecrets

import (
	"encoding/base64"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestLookup(t *testing.T) {
	k := &Keyring{}
	k.Add(DockerConfig{
		"quay.io":                      {Username: "quay"},
		"quay.io/team":                 {Username: "quay-team"},
		"https://index.docker.io/v1/":  {Username: "hub"},
		"*.gcr.io":                     {Username: "gcr-wild"},
		"http://localhost:5000/v2/":    {Username: "local"},
		"registry.example.com:443/a/b": {Username: "deep"},
		"bad key %zz":                  {Username: "skipped"},
	})
	k.Add(DockerConfig{"quay.io": {Username: "quay-2"}})
	cases := []struct {
		repo string
		want string // usernames in order
	}{
		{"quay.io/team/app", "quay-team,quay,quay-2"},
		{"quay.io/teamster/app", "quay-team,quay,quay-2"}, // a path prefix is a string prefix, as the kubelet's
		{"quay.io/other/app", "quay,quay-2"},
		{"docker.io/library/busybox", "hub"},
		{"library/busybox", "hub"},
		{"busybox", "hub"},
		{"index.docker.io/library/busybox", "hub"},
		{"eu.gcr.io/p/app", "gcr-wild"},
		{"gcr.io/p/app", ""},
		{"a.eu.gcr.io/p/app", ""},
		{"localhost:5000/app", "local"},
		{"localhost/app", "hub"}, // the kubelet's Hub test: no '.' or ':' in the first part
		{"localhost:5001/app", ""},
		{"registry.example.com:443/a/b/c", "deep"},
		{"registry.example.com:443/a/c", ""},
		{"registry.example.com/a/b/c", ""},
		{"ghcr.io/x/y", ""},
	}
	for _, tc := range cases {
		var got []string
		for _, c := range k.Lookup(tc.repo) {
			got = append(got, c.Username)
		}
		if strings.Join(got, ",") != tc.want {
			t.Errorf("Lookup(%q) = %q, want %q", tc.repo, strings.Join(got, ","), tc.want)
		}
	}
	if got := (*Keyring)(nil).Lookup("busybox"); got != nil {
		t.Errorf("nil keyring: %v", got)
	}
}

func TestParseSecret(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	secret := func(typ v1.SecretType, key, data string) *v1.Secret {
		return &v1.Secret{Type: typ, Data: map[string][]byte{key: []byte(data)}}
	}
	cases := []struct {
		name    string
		secret  *v1.Secret
		want    DockerConfig
		wantErr string
	}{
		{name: "dockerconfigjson auth", secret: secret(v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey, `{"auths":{"r.io":{"auth":"`+b64("u:p:with:colons")+`"}}}`),
			want: DockerConfig{"r.io": {Username: "u", Password: "p:with:colons"}}},
		{name: "auth unpadded", secret: secret(v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey, `{"auths":{"r.io":{"auth":"`+strings.TrimRight(b64("u:pw"), "=")+`"}}}`),
			want: DockerConfig{"r.io": {Username: "u", Password: "pw"}}},
		{name: "auth wins over username", secret: secret(v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey, `{"auths":{"r.io":{"username":"x","password":"y","auth":"`+b64("u:p")+`"}}}`),
			want: DockerConfig{"r.io": {Username: "u", Password: "p"}}},
		{name: "dockercfg", secret: secret(v1.SecretTypeDockercfg, v1.DockerConfigKey, `{"r.io":{"username":"u","password":"p","email":"e@x"}}`),
			want: DockerConfig{"r.io": {Username: "u", Password: "p"}}},
		{name: "wrong type", secret: secret(v1.SecretTypeOpaque, v1.DockerConfigJsonKey, `{}`), wantErr: `type "Opaque": a pull secret is of type`},
		{name: "missing key", secret: secret(v1.SecretTypeDockerConfigJson, v1.DockerConfigKey, `{}`), wantErr: "key .dockerconfigjson missing or empty"},
		{name: "bad JSON", secret: secret(v1.SecretTypeDockercfg, v1.DockerConfigKey, `{"r.io": {"password": "s3cret"`), wantErr: ".dockercfg: invalid JSON"},
		{name: "wrong field type", secret: secret(v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey, `{"auths":{"r.io":{"password": 5}}}`), wantErr: `password": want string`},
		{name: "auth not base64", secret: secret(v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey, `{"auths":{"r.io":{"auth":"s3cret!!"}}}`), wantErr: "auth: not base64"},
		{name: "auth without colon", secret: secret(v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey, `{"auths":{"r.io":{"auth":"`+b64("s3cret")+`"}}}`), wantErr: "auth: must be base64(username:password)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSecret(tc.secret)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("the error carries the secret's value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, w := range tc.want {
				if got[k] != w {
					t.Errorf("%s: got %+v, want %+v", k, got[k], w)
				}
			}
		})
	}
}

// FuzzParseSecret: no input panics, and an error never carries the input.
func FuzzParseSecret(f *testing.F) {
	f.Add([]byte(`{"auths":{"r.io":{"auth":"dTpw"}}}`))
	f.Add([]byte(`{"auths":{"r.io":{"auth":"zzzz-SECRET"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &v1.Secret{Type: v1.SecretTypeDockerConfigJson, Data: map[string][]byte{v1.DockerConfigJsonKey: data}}
		cfg, err := ParseSecret(s)
		if err != nil && len(data) > 8 && strings.Contains(err.Error(), string(data)) {
			t.Fatalf("error carries the input: %v", err)
		}
		k := &Keyring{}
		k.Add(cfg)
		_ = k.Lookup("r.io/x")
	})
}
