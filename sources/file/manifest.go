package file

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/validation"
	"github.com/actorlet/actorlet/messages/wire"
)

// isManifest says whether a directory entry name is a pod manifest: a
// .yaml, .yml or .json file that is not hidden and not an editor's temporary
// or backup file.
func isManifest(name string) bool {
	if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "#") || strings.HasSuffix(name, "~") {
		return false
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// readManifest reads a manifest, at most one byte over
// validation.MaxPodBytes: a huge file is never loaded whole, and the byte
// over the limit makes decoding fail with the limit's name.
func readManifest(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, validation.MaxPodBytes+1))
}

// staticPod decodes one manifest and gives it a static pod's identity on
// nodeName, as the kubelet does:
//
//   - name <name>-<nodeName>, namespace "default" when unset;
//   - UID the hash of the file content and node name (unless the file sets
//     one), so a changed file is a new pod instance;
//   - annotations config.source=file, config.hash=UID, config.mirror=UID,
//     and actorlet.io/static-manifest=path (the file to remove to stop it);
//   - spec.nodeName set to the node.
func staticPod(data []byte, nodeName, path string) (*v1.Pod, error) {
	pod, err := validation.DecodePod(data)
	if err != nil {
		return nil, err
	}
	if pod.Name == "" {
		return nil, errors.New("metadata.name: required")
	}
	pod.Name = pod.Name + "-" + strings.ToLower(nodeName)
	if pod.UID == "" {
		pod.UID = contentUID(data, nodeName)
	}
	pod.Spec.NodeName = nodeName
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[messages.ConfigSourceAnnotation] = messages.SourceFile
	pod.Annotations[messages.ConfigHashAnnotation] = string(pod.UID)
	pod.Annotations[messages.ConfigMirrorAnnotation] = string(pod.UID)
	if path != "" {
		pod.Annotations[wire.StaticManifestAnnotation] = path
	}
	// A static pod tolerates every NoExecute taint: the node runs it
	// whatever the control plane thinks of the node.
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, v1.Toleration{
		Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute,
	})
	validation.SetDefaults(pod)
	if err := validation.ValidatePod(pod); err != nil {
		return nil, err
	}
	return pod, nil
}

// contentUID hashes a manifest's bytes and the node name into a UID.
func contentUID(data []byte, nodeName string) types.UID {
	h := sha256.New()
	h.Write(data)
	fmt.Fprintf(h, "\x00host:%s", nodeName)
	return types.UID(hex.EncodeToString(h.Sum(nil))[:32])
}
