package kuberuntime

import (
	"context"
	"fmt"
	"strings"

	"github.com/distribution/reference"
	v1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/cri/pullsecrets"
)

const (
	// maxPullSecrets bounds the imagePullSecrets of a pod that are read.
	maxPullSecrets = 64
	// maxPullCredentials bounds the credentials one pull tries.
	maxPullCredentials = 16
)

// pullKeyring reads the pod's imagePullSecrets into a keyring, as the
// kubelet's getPullSecretsForPod: a Secret that is missing, or (unlike the
// kubelet, which fails the pull on malformed JSON) one that is not a
// readable pull secret, is left out with a Warning event
// FailedToRetrieveImagePullSecret naming it and why, and the pull goes on
// with the others. nil when the pod names none.
func (m *Manager) pullKeyring(pod *v1.Pod) *pullsecrets.Keyring {
	if len(pod.Spec.ImagePullSecrets) == 0 {
		return nil
	}
	keyring := &pullsecrets.Keyring{}
	var failed []string
	for i, ref := range pod.Spec.ImagePullSecrets {
		if ref.Name == "" {
			continue // API validation lets empty names through; the kubelet skips them quietly
		}
		if i >= maxPullSecrets {
			failed = append(failed, fmt.Sprintf("imagePullSecrets[%d:]: only the first %d are read", i, maxPullSecrets))
			break
		}
		objs, err := m.objectsOrErr()
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", ref.Name, err))
			continue
		}
		secret, err := objs.Secret(pod.Namespace, ref.Name)
		if err != nil {
			klog.InfoS("Unable to retrieve pull secret, the image pull may not succeed", "pod", klog.KObj(pod), "secret", klog.KRef(pod.Namespace, ref.Name), "err", err)
			failed = append(failed, ref.Name)
			continue
		}
		cfg, err := pullsecrets.ParseSecret(secret)
		if err != nil {
			klog.InfoS("Unable to read pull secret, the image pull may not succeed", "pod", klog.KObj(pod), "secret", klog.KRef(pod.Namespace, ref.Name), "err", err)
			failed = append(failed, fmt.Sprintf("%s: %v", ref.Name, err))
			continue
		}
		keyring.Add(cfg)
	}
	if len(failed) > 0 {
		m.event(pod, v1.EventTypeWarning, "FailedToRetrieveImagePullSecret",
			"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(failed, ", "))
	}
	return keyring
}

// pullImage pulls spec with the credentials keyring holds for its
// repository, each in turn until one works (the kubelet's order: the most
// specific registry key first); without any, anonymously, with the
// runtime's own credentials. The credentials are never logged.
func (m *Manager) pullImage(ctx context.Context, pod *v1.Pod, spec *runtimeapi.ImageSpec, sandboxCfg *runtimeapi.PodSandboxConfig) (string, error) {
	keyring := m.pullKeyring(pod)
	if keyring == nil {
		return m.rt.PullImage(ctx, spec, nil, sandboxCfg)
	}
	named, err := reference.ParseNormalizedNamed(spec.Image)
	if err != nil {
		return "", fmt.Errorf("image name %q: %w", spec.Image, err)
	}
	creds := keyring.Lookup(named.Name())
	if len(creds) == 0 {
		return m.rt.PullImage(ctx, spec, nil, sandboxCfg)
	}
	if len(creds) > maxPullCredentials {
		klog.InfoS("Pull secrets hold more matching credentials than a pull tries", "pod", klog.KObj(pod), "image", spec.Image, "matching", len(creds), "tried", maxPullCredentials)
		creds = creds[:maxPullCredentials]
	}
	var errs []error
	for _, c := range creds {
		ref, err := m.rt.PullImage(ctx, spec, c.AuthConfig(), sandboxCfg)
		if err == nil {
			return ref, nil
		}
		klog.V(4).InfoS("Pull with a pull secret's credential failed", "pod", klog.KObj(pod), "image", spec.Image, "registryKey", c.Key, "err", err)
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return "", utilerrors.NewAggregate(errs)
}
