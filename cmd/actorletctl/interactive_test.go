package main

import (
	"reflect"
	"testing"
)

func TestExpandShortFlags(t *testing.T) {
	got := expandShortFlags([]string{"web", "-it", "-c", "app", "--", "sh", "-it"})
	want := []string{"web", "-i", "-t", "-c", "app", "--", "sh", "-it"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("expandShortFlags = %q, want %q", got, want)
	}
}

func TestParsePortPair(t *testing.T) {
	for in, want := range map[string]forwardedPort{
		"8080:80": {8080, 80}, "80": {80, 80}, ":80": {0, 80}, "0:65535": {0, 65535},
	} {
		if got, err := parsePortPair(in); err != nil || got != want {
			t.Errorf("parsePortPair(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "80:", "0", "70000", "8080:0", "-1:80", "99999:80", "a:80", "1:2:3"} {
		if _, err := parsePortPair(bad); err == nil {
			t.Errorf("parsePortPair(%q) accepted", bad)
		}
	}
}
