package hostfs

import (
	"strings"
	"testing"
)

// TestStat: a real directory's filesystem has a size, free space within
// it and inodes; a missing path is an error naming it.
func TestStat(t *testing.T) {
	st, err := Stat(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if st.Capacity == 0 || st.Available > st.Capacity || st.InodesFree > st.Inodes {
		t.Errorf("implausible stats %+v", st)
	}
	if _, err := Stat("/nonexistent/actorlet-hostfs"); err == nil || !strings.Contains(err.Error(), "/nonexistent/actorlet-hostfs") {
		t.Errorf("error %v, want one naming the path", err)
	}
}
