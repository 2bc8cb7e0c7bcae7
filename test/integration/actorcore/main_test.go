package actorcore

import (
	"flag"
	"io"
	"os"
	"testing"

	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/cri/procruntime"
)

// TestMain runs container shims (the process runtime re-executes this test
// binary for each container) and keeps klog quiet: with 200 pods the agent
// logs a lot. With -v and ACTORLET_IT_KLOG=<level> klog writes to stderr at
// that verbosity.
func TestMain(m *testing.M) {
	procruntime.MaybeRunShim()
	flag.Parse()
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	if level := os.Getenv("ACTORLET_IT_KLOG"); testing.Verbose() && level != "" {
		_ = fs.Set("v", level)
	} else {
		_ = fs.Set("logtostderr", "false")
		_ = fs.Set("stderrthreshold", "FATAL")
		klog.SetOutput(io.Discard)
	}
	os.Exit(m.Run())
}
