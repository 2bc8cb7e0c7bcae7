package kuberuntime

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/actorlet/actorlet/test/testutil"
)

// mapObjects is an in-memory ConfigMap and Secret source (the agent's is
// the bus store, tested in sources/objects).
type mapObjects struct {
	mu      sync.Mutex
	cms     map[string]*v1.ConfigMap
	secrets map[string]*v1.Secret
}

func (o *mapObjects) ConfigMap(ns, name string) (*v1.ConfigMap, error) {
	return lookupObject(o, o.cms, "configmaps", ns, name)
}

func (o *mapObjects) Secret(ns, name string) (*v1.Secret, error) {
	return lookupObject(o, o.secrets, "secrets", ns, name)
}

// lookupObject returns ns/name of m, or the API's NotFound error for
// resource.
func lookupObject[T any](o *mapObjects, m map[string]*T, resource, ns, name string) (*T, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if obj, ok := m[ns+"/"+name]; ok {
		return obj, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
}

func (o *mapObjects) setConfigMap(cm *v1.ConfigMap) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cms[cm.Namespace+"/"+cm.Name] = cm
}

// TestIntegrationConfigMapAndSecret runs a pod on the process runtime whose
// env and volumes come from a ConfigMap and a Secret: configMapKeyRef,
// secretKeyRef, optional refs, envFrom with a prefix (an invalid name is
// skipped with an event), configMap volume with items and modes, secret
// volume, projected volume. A ConfigMap update reaches the volume on the
// next sync without restarting the container; env keeps its value.
func TestIntegrationConfigMapAndSecret(t *testing.T) {
	e := newProcEnv(t)
	objs := &mapObjects{cms: map[string]*v1.ConfigMap{}, secrets: map[string]*v1.Secret{}}
	e.m.opts.Objects = objs
	objs.setConfigMap(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"},
		Data: map[string]string{"greeting": "hello", "app.properties": "mode=blue\n", "1st": "x"}})
	objs.secrets["default/db"] = &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"},
		Data: map[string][]byte{"password": []byte("pw-123"), "user": []byte("admin")}}
	out := filepath.Join(t.TempDir(), "env")
	yes := true
	mode := int32(0o600)
	pod := shPod("cfg", map[string]string{"app": fmt.Sprintf(`echo "$GREETING|$DB_PASSWORD|$CFG_greeting|${MISSING-unset}|$USER_FROM_SECRET" > %s; exec sleep 300`, out)}, "app")
	c := &pod.Spec.Containers[0]
	c.Env = []v1.EnvVar{
		{Name: "GREETING", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "app"}, Key: "greeting"}}},
		{Name: "DB_PASSWORD", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "db"}, Key: "password"}}},
		{Name: "MISSING", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}, Key: "k", Optional: &yes}}},
	}
	c.EnvFrom = []v1.EnvFromSource{
		{Prefix: "CFG_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "app"}}},
		{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "app"}}}, // "1st" is no variable name
		{Prefix: "USER_FROM_", SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Optional: &yes}},
	}
	c.Env = append(c.Env, v1.EnvVar{Name: "USER_FROM_SECRET", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "db"}, Key: "user"}}})
	pod.Spec.Volumes = []v1.Volume{
		{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "app"},
			Items: []v1.KeyToPath{{Key: "app.properties", Path: "conf/app.properties"}, {Key: "greeting", Path: "greeting", Mode: &mode}}}}},
		{Name: "creds", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "db", DefaultMode: &mode}}},
		{Name: "all", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "app"}, Items: []v1.KeyToPath{{Key: "greeting", Path: "g"}}}},
			{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "db"}, Items: []v1.KeyToPath{{Key: "user", Path: "u"}}}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
		}}}},
	}
	c.VolumeMounts = []v1.VolumeMount{{Name: "config", MountPath: "/etc/config"}, {Name: "creds", MountPath: "/etc/creds", ReadOnly: true}, {Name: "all", MountPath: "/etc/all"}}

	before := e.syncUntil(t, pod, func(s v1.PodStatus) error {
		if s.Phase != v1.PodRunning {
			return fmt.Errorf("phase %s %+v", s.Phase, s.ContainerStatuses)
		}
		if _, err := os.Stat(out); err != nil {
			return err
		}
		return nil
	})
	if got := strings.TrimSpace(testutil.ReadFile(t, out)); got != "hello|pw-123|hello|unset|admin" {
		t.Errorf("env = %q", got)
	}
	if !e.rec.Has("InvalidEnvironmentVariableNames") {
		t.Error("no event for the skipped envFrom key 1st")
	}
	cfg, creds, all := e.m.projectedPath(pod, "config"), e.m.projectedPath(pod, "creds"), e.m.projectedPath(pod, "all")
	for path, want := range map[string]string{
		filepath.Join(cfg, "conf", "app.properties"): "mode=blue\n", filepath.Join(cfg, "greeting"): "hello",
		filepath.Join(creds, "password"): "pw-123", filepath.Join(all, "g"): "hello", filepath.Join(all, "u"): "admin", filepath.Join(all, "name"): "cfg",
	} {
		if got := testutil.ReadFile(t, path); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	if fi, _ := os.Stat(filepath.Join(creds, "user")); fi == nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("secret file mode: %v", fi)
	}
	if _, err := os.Stat(filepath.Join(cfg, "1st")); !os.IsNotExist(err) {
		t.Errorf("a key not in items was projected: %v", err)
	}

	// An update reaches the volume on the next sync; the container stays.
	objs.setConfigMap(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"},
		Data: map[string]string{"greeting": "bonjour", "app.properties": "mode=green\n"}})
	e.sync(t, pod)
	if got := testutil.ReadFile(t, filepath.Join(cfg, "conf", "app.properties")); got != "mode=green\n" {
		t.Errorf("after the update: %q", got)
	}
	_, after := e.status(t, pod)
	if after.ContainerStatuses[0].ContainerID != before.ContainerStatuses[0].ContainerID || after.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("the container was restarted by a ConfigMap change")
	}
	if got := strings.TrimSpace(testutil.ReadFile(t, out)); !strings.HasPrefix(got, "hello|") {
		t.Errorf("env changed without a restart: %q", got)
	}
}

// A missing ConfigMap or Secret (not optional) keeps the container from
// starting with CreateContainerConfigError naming the object, never a value.
func TestIntegrationMissingObject(t *testing.T) {
	e := newProcEnv(t)
	e.m.opts.Objects = &mapObjects{cms: map[string]*v1.ConfigMap{}, secrets: map[string]*v1.Secret{}}
	pod := shPod("missing", map[string]string{"app": "exec sleep 300"}, "app")
	pod.Spec.Containers[0].Env = []v1.EnvVar{{Name: "P", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "db"}, Key: "password"}}}}
	api := e.syncUntil(t, pod, func(s v1.PodStatus) error {
		if w := s.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "CreateContainerConfigError" {
			return fmt.Errorf("state %+v", s.ContainerStatuses[0].State)
		}
		return nil
	})
	if msg := api.ContainerStatuses[0].State.Waiting.Message; !strings.Contains(msg, `secret "db" not found`) {
		t.Errorf("message = %q", msg)
	}
}
