package kuberuntime

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/test/testutil"
)

// What another local user can reach of a pod's files, under umask 0000
// (the worst an agent can be started with): nothing. Before, every
// directory under <root>/pods was 0755 (0777 under umask 0000), a Secret
// volume file at its default mode 0644 was readable by any user, the
// termination-message file was 0666 and another user planted a file in a
// root pod's emptyDir. Now <PodsDir> and every directory of a pod are
// 0750 (the agent's user, as /var/lib/kubelet/pods), an emptyDir and a
// termination-message file belong to the container's user when the spec
// names it, and the only world-writable entries left (those two when the
// user is the image's, unknown here, as the kubelet makes them) sit below
// those directories.
func TestIntegrationPodFilesUnreachableByOtherUsers(t *testing.T) {
	other := testutil.OtherUser(t)
	testutil.Umask(t, 0)
	e := newProcEnv(t)
	testutil.OpenToOthers(t, filepath.Dir(e.m.opts.PodsDir))
	const secret = "s3cr3t-pw-4711"
	objs := &mapObjects{cms: map[string]*v1.ConfigMap{}, secrets: map[string]*v1.Secret{
		"default/db": {ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"}, Data: map[string][]byte{"password": []byte(secret)}},
	}}
	e.m.opts.Objects = objs
	root := int64(0)
	for _, tc := range []struct {
		name  string
		runAs *int64
	}{{"root-pod", &root}, {"image-user-pod", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			pod := shPod(tc.name, map[string]string{"app": "exec sleep 300"}, "app")
			pod.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: tc.runAs}
			pod.Spec.Volumes = []v1.Volume{
				{Name: "creds", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "db"}}}, // defaultMode 0644
				{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			}
			c := &pod.Spec.Containers[0]
			c.VolumeMounts = []v1.VolumeMount{{Name: "creds", MountPath: "/etc/creds"}, {Name: "scratch", MountPath: "/scratch"},
				{Name: "scratch", MountPath: "/scratch-sub", SubPath: "a/b"}}
			c.TerminationMessagePath = v1.TerminationMessagePathDefault
			e.syncUntil(t, pod, func(s v1.PodStatus) error {
				if s.Phase != v1.PodRunning {
					return fmt.Errorf("phase %s %+v", s.Phase, s.ContainerStatuses)
				}
				return nil
			})
			secretFile := filepath.Join(e.m.projectedPath(pod, "creds"), "password")
			if got := testutil.ReadFile(t, secretFile); got != secret {
				t.Fatalf("secret file = %q", got)
			}
			scratch := e.m.emptyDirPath(pod, "scratch")
			terms, _ := filepath.Glob(filepath.Join(e.m.opts.PodsDir, string(pod.UID), "containers", "app", "*"))
			if len(terms) != 1 {
				t.Fatalf("termination message files: %v", terms)
			}

			// As another user: nothing is readable, listable or writable.
			for _, try := range [][]string{
				{"cat", secretFile},
				{"ls", e.m.opts.PodsDir},
				{"ls", filepath.Join(e.m.opts.PodsDir, string(pod.UID))},
				{"sh", "-c", "echo planted > " + filepath.Join(scratch, "planted")},
				{"sh", "-c", "echo planted > " + filepath.Join(scratch, "a", "b", "planted")},
				{"sh", "-c", "echo planted > " + terms[0]},
			} {
				out, err := testutil.RunAs(t, other, try[0], try[1:]...)
				if err == nil || strings.Contains(out, secret) {
					t.Errorf("another user ran %q: err %v, output %q", try, err, out)
				}
			}
			if _, err := os.Stat(filepath.Join(scratch, "planted")); err == nil {
				t.Error("another user planted a file in the pod's emptyDir")
			}

			// No world-writable entry but the two the kubelet shares with an
			// unknown container user, every directory on the way 0750.
			shared := map[string]bool{}
			if tc.runAs == nil {
				shared[scratch], shared[filepath.Join(scratch, "a")], shared[filepath.Join(scratch, "a", "b")], shared[terms[0]] = true, true, true, true
			}
			for _, d := range []string{e.m.opts.PodsDir, filepath.Join(e.m.opts.PodsDir, string(pod.UID)),
				filepath.Join(e.m.opts.PodsDir, string(pod.UID), "volumes"), filepath.Join(e.m.opts.PodsDir, string(pod.UID), "volumes", "projected"),
				filepath.Join(e.m.opts.PodsDir, string(pod.UID), "volumes", "emptydir"), filepath.Join(e.m.opts.PodsDir, string(pod.UID), "containers"),
				filepath.Dir(terms[0])} {
				if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != podDirMode {
					t.Errorf("%s: mode %v (%v), want %v", d, fi.Mode().Perm(), err, podDirMode)
				}
			}
			err := filepath.WalkDir(filepath.Join(e.m.opts.PodsDir, string(pod.UID)), func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.Type()&fs.ModeSymlink != 0 {
					return err
				}
				fi, err := d.Info()
				if err != nil {
					return err
				}
				if fi.Mode().Perm()&0o002 != 0 && !shared[p] {
					t.Errorf("%s is world-writable: %v", p, fi.Mode())
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if tc.runAs != nil {
				if fi, _ := os.Stat(scratch); fi.Mode().Perm() != ownedDirMode {
					t.Errorf("a root pod's emptyDir: %v, want %v", fi.Mode().Perm(), ownedDirMode)
				}
				if fi, _ := os.Stat(terms[0]); fi.Mode().Perm() != ownedFileMode {
					t.Errorf("a root pod's termination message file: %v, want %v", fi.Mode().Perm(), ownedFileMode)
				}
			}
		})
	}
}

// A subPath is created inside its emptyDir only: a symlink a container
// left there (pointing at /etc, say) is refused, never followed.
func TestSubPathRefusesSymlinks(t *testing.T) {
	testutil.Umask(t, 0)
	base, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(base, "a")); err != nil {
		t.Fatal(err)
	}
	if err := mkdirInside(base, "a/b", 0, false); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("mkdirInside through a symlink: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "b")); err == nil {
		t.Fatal("created a directory through the symlink")
	}
	if err := mkdirInside(base, "x/y", int64(os.Geteuid()), true); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(base, "x", "y")); err != nil || fi.Mode().Perm() != ownedDirMode {
		t.Errorf("x/y: %v %v, want %v whatever the umask", fi, err, ownedDirMode)
	}
}
