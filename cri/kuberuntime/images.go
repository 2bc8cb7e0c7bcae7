package kuberuntime

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// pullPolicy is the container's policy, defaulted as the API server does:
// Always for :latest or untagged images, else IfNotPresent.
func pullPolicy(c *v1.Container) v1.PullPolicy {
	if c.ImagePullPolicy != "" {
		return c.ImagePullPolicy
	}
	if imageTag(c.Image) == "latest" || (imageTag(c.Image) == "" && !strings.Contains(c.Image, "@")) {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}

// imageTag returns the tag of ref ("" if none; digests are not tags).
func imageTag(ref string) string {
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	slash := strings.LastIndex(ref, "/")
	if colon := strings.LastIndex(ref, ":"); colon > slash {
		return ref[colon+1:]
	}
	return ""
}

// ensureImage makes c's image present per its pull policy and returns the
// image reference to create the container with. Failures are kind errors
// (ErrImagePull, ErrImagePullBackOff, ErrImageNeverPull, ErrInvalidImageName).
func (m *Manager) ensureImage(ctx context.Context, pod *v1.Pod, c *v1.Container, sandboxCfg *runtimeapi.PodSandboxConfig) (string, error) {
	if strings.TrimSpace(c.Image) == "" {
		return "", newKindError(ErrInvalidImageName, "container %q image: must not be empty", c.Name)
	}
	spec := &runtimeapi.ImageSpec{Image: c.Image, UserSpecifiedImage: c.Image}
	st, err := m.images.get(ctx, c.Image, func() (*runtimeapi.ImageStatusResponse, error) {
		return m.rt.ImageStatus(ctx, spec, false)
	})
	if err != nil {
		return "", wrapKind(ErrImagePull, err, "image status of %q", c.Image)
	}
	present := st.GetImage() != nil
	ref := st.GetImage().GetId()
	if ref == "" {
		ref = c.Image
	}

	policy := pullPolicy(c)
	switch {
	case policy == v1.PullNever && !present:
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)
		m.event(pod, v1.EventTypeWarning, "ErrImageNeverPull", "%s", msg)
		return "", newKindError(ErrImageNeverPull, "%s", msg)
	case policy == v1.PullNever, policy == v1.PullIfNotPresent && present:
		m.event(pod, v1.EventTypeNormal, "Pulled", "Container image %q already present on machine", c.Image)
		return ref, nil
	}

	key := backOffKey{uid: pod.UID, name: c.Image}
	if in, until := m.imageBackOff.inBackOffSinceUpdate(key); in {
		msg := fmt.Sprintf("Back-off pulling image %q", c.Image)
		m.event(pod, v1.EventTypeNormal, "BackOff", "%s", msg)
		return "", newBackOffError(ErrImagePullBackOff, until, "%s", msg)
	}
	m.event(pod, v1.EventTypeNormal, "Pulling", "Pulling image %q", c.Image)
	start := m.opts.Clock.Now()
	pulled, err := m.pullImage(ctx, pod, spec, sandboxCfg)
	m.images.forget(c.Image) // whatever the outcome, the image may have changed
	if err != nil {
		m.imageBackOff.next(key, m.opts.Clock.Now())
		m.event(pod, v1.EventTypeWarning, "Failed", "Failed to pull image %q: %v", c.Image, err)
		klog.V(2).InfoS("Image pull failed", "pod", klog.KObj(pod), "image", c.Image, "err", err)
		return "", wrapKind(ErrImagePull, err, "pull image %q", c.Image)
	}
	m.imageBackOff.reset(key)
	m.event(pod, v1.EventTypeNormal, "Pulled", "Successfully pulled image %q in %s", c.Image, m.opts.Clock.Since(start))
	if pulled == "" {
		pulled = ref
	}
	return pulled, nil
}
