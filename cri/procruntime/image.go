package procruntime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/distribution/reference"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Images are names only: nothing is downloaded. A "pull" keeps a record so
// that the kubelet's pull policies, ImageStatus and image listing behave.
// References are normalised as containerd does (github.com/distribution/
// reference): "busybox", "busybox:latest" and
// "docker.io/library/busybox:latest" are one image, recorded under its
// normalised name; a digest reference ("busybox@sha256:…") is reported in
// RepoDigests, a tag in RepoTags. The image ID is "sha256:" + sha256 of the
// normalised reference; the size is what the record occupies on disk.

// imageRecord is images/<hex>.json.
type imageRecord struct {
	ID       string `json:"id"`
	Name     string `json:"name"` // normalised reference
	PulledAt int64  `json:"pulledAt"`
	Size     uint64 `json:"-"` // bytes on disk
}

// maxImageRef bounds an image reference (distribution's own limit on
// names is 255; a tag and a digest add to it).
const maxImageRef = 4096

// normalizeImage returns the normalised reference of an image name:
// "docker.io/library/busybox:latest" for "busybox",
// "docker.io/library/busybox@sha256:…" for a digest.
func normalizeImage(name string) (string, error) {
	if len(name) > maxImageRef {
		return "", fmt.Errorf("image reference of %d bytes: limit is %d", len(name), maxImageRef)
	}
	named, err := reference.ParseNormalizedNamed(name)
	if err != nil {
		return "", fmt.Errorf("parse image reference %q: %w", name, err)
	}
	if _, ok := named.(reference.Digested); ok {
		return named.String(), nil
	}
	return reference.TagNameOnly(named).String(), nil
}

func imageID(normalized string) string {
	sum := sha256.Sum256([]byte(normalized))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (r *Runtime) imagePath(id string) string {
	return filepath.Join(r.opts.RootDir, imagesDir, strings.TrimPrefix(id, "sha256:")+".json")
}

// loadImages reads the records; one kept under a name as typed (before
// normalisation) is moved to its normalised name.
func (r *Runtime) loadImages() error {
	entries, err := os.ReadDir(filepath.Join(r.opts.RootDir, imagesDir))
	if err != nil {
		return fmt.Errorf("procruntime: load images: %w", err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(r.opts.RootDir, imagesDir, e.Name())
		var img imageRecord
		if err := readJSON(path, &img); err != nil {
			return fmt.Errorf("procruntime: load images: %w", err)
		}
		if norm, err := normalizeImage(img.Name); err == nil && (norm != img.Name || imageID(norm) != img.ID) {
			old := img.ID
			img.Name, img.ID = norm, imageID(norm)
			if err := writeJSON(r.imagePath(img.ID), &img); err != nil {
				return fmt.Errorf("procruntime: load images: %w", err)
			}
			if old != img.ID {
				_ = os.Remove(path)
			}
		}
		img.Size = fileSize(r.imagePath(img.ID))
		r.images[img.ID] = &img
	}
	return nil
}

func fileSize(path string) uint64 {
	fi, err := os.Stat(path)
	if err != nil || fi.Size() <= 0 {
		return 1
	}
	return uint64(fi.Size())
}

// findImageLocked finds an image by reference, ID ("sha256:<hex>"), or
// hex ID or a unique prefix of it (nil if absent).
func (r *Runtime) findImageLocked(ref string) *imageRecord {
	if img, ok := r.images[ref]; ok {
		return img
	}
	if img, ok := r.images["sha256:"+ref]; ok {
		return img
	}
	if norm, err := normalizeImage(ref); err == nil {
		if img, ok := r.images[imageID(norm)]; ok {
			return img
		}
	}
	// A truncated ID, as crictl users type them.
	hexRef := strings.TrimPrefix(ref, "sha256:")
	if len(hexRef) >= 6 && strings.Trim(hexRef, "0123456789abcdef") == "" {
		var found *imageRecord
		for id, img := range r.images {
			if strings.HasPrefix(strings.TrimPrefix(id, "sha256:"), hexRef) {
				if found != nil {
					return nil
				}
				found = img
			}
		}
		return found
	}
	return nil
}

func toImage(img *imageRecord) *runtimeapi.Image {
	out := &runtimeapi.Image{
		Id:   img.ID,
		Size: img.Size,
		Spec: &runtimeapi.ImageSpec{Image: img.Name},
	}
	if strings.Contains(img.Name, "@") {
		out.RepoDigests = []string{img.Name}
	} else {
		out.RepoTags = []string{img.Name}
	}
	return out
}

// PullImage records the image.
func (r *Runtime) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	name := req.GetImage().GetImage()
	if name == "" {
		return nil, status.Error(codes.InvalidArgument, "image.image: must not be empty")
	}
	norm, err := normalizeImage(name)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "image.image: %v", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if img := r.images[imageID(norm)]; img != nil {
		return &runtimeapi.PullImageResponse{ImageRef: img.ID}, nil
	}
	img := &imageRecord{ID: imageID(norm), Name: norm, PulledAt: time.Now().UnixNano()}
	if err := writeJSON(r.imagePath(img.ID), img); err != nil {
		return nil, status.Errorf(codes.Internal, "pull image %q: %v", name, err)
	}
	img.Size = fileSize(r.imagePath(img.ID))
	r.images[img.ID] = img
	return &runtimeapi.PullImageResponse{ImageRef: img.ID}, nil
}

// ImageStatus reports the image, or an empty response if it is absent.
func (r *Runtime) ImageStatus(ctx context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	resp := &runtimeapi.ImageStatusResponse{}
	err := r.withImage(req.GetImage(), func(img *imageRecord) error {
		if img != nil {
			resp.Image = toImage(img)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// ListImages lists images, filtered by name or ID.
func (r *Runtime) ListImages(ctx context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	want := req.GetFilter().GetImage().GetImage()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*runtimeapi.Image
	if want != "" {
		if img := r.findImageLocked(want); img != nil {
			out = append(out, toImage(img))
		}
		return &runtimeapi.ListImagesResponse{Images: out}, nil
	}
	for _, img := range r.images {
		out = append(out, toImage(img))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Spec.Image < out[j].Spec.Image })
	return &runtimeapi.ListImagesResponse{Images: out}, nil
}

// RemoveImage forgets the image; an absent image is fine.
func (r *Runtime) RemoveImage(ctx context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	err := r.withImage(req.GetImage(), func(img *imageRecord) error {
		if img == nil {
			return nil
		}
		if err := os.Remove(r.imagePath(img.ID)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return status.Errorf(codes.Internal, "remove image %q: %v", img.Name, err)
		}
		delete(r.images, img.ID)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}

// withImage runs fn under mu with the pulled image spec names, nil if
// there is none; a spec naming no image is refused.
func (r *Runtime) withImage(spec *runtimeapi.ImageSpec, fn func(*imageRecord) error) error {
	if spec.GetImage() == "" {
		return status.Error(codes.InvalidArgument, "image.image: must not be empty")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return fn(r.findImageLocked(spec.GetImage()))
}

// containerImageLocked is the pulled image a container is created from;
// an image never pulled is refused, as containerd does.
func (r *Runtime) containerImageLocked(name string) (*imageRecord, error) {
	img := r.findImageLocked(name)
	if img == nil {
		return nil, status.Errorf(codes.NotFound, "config.image.image %q: image not found (pull it first)", name)
	}
	return img, nil
}
