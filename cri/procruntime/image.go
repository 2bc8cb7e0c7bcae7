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

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Images are names only: nothing is downloaded. A "pull" keeps a record so
// that the kubelet's pull policies, ImageStatus and image listing behave;
// the image ID is "sha256:" + sha256(name).

// imageRecord is images/<hex>.json.
type imageRecord struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	PulledAt int64  `json:"pulledAt"`
}

func imageID(name string) string {
	sum := sha256.Sum256([]byte(name))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (r *Runtime) imagePath(id string) string {
	return filepath.Join(r.opts.RootDir, imagesDir, strings.TrimPrefix(id, "sha256:")+".json")
}

func (r *Runtime) loadImages() error {
	entries, err := os.ReadDir(filepath.Join(r.opts.RootDir, imagesDir))
	if err != nil {
		return fmt.Errorf("procruntime: load images: %w", err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		var img imageRecord
		if err := readJSON(filepath.Join(r.opts.RootDir, imagesDir, e.Name()), &img); err != nil {
			return fmt.Errorf("procruntime: load images: %w", err)
		}
		r.images[img.ID] = &img
	}
	return nil
}

// findImageLocked finds an image by name or ID (nil if absent).
func (r *Runtime) findImageLocked(ref string) *imageRecord {
	if img, ok := r.images[ref]; ok {
		return img
	}
	if img, ok := r.images[imageID(ref)]; ok {
		return img
	}
	if img, ok := r.images["sha256:"+ref]; ok {
		return img
	}
	return nil
}

func toImage(img *imageRecord) *runtimeapi.Image {
	return &runtimeapi.Image{
		Id:       img.ID,
		RepoTags: []string{img.Name},
		Spec:     &runtimeapi.ImageSpec{Image: img.Name},
	}
}

// PullImage records the image.
func (r *Runtime) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	name := req.GetImage().GetImage()
	if name == "" {
		return nil, status.Error(codes.InvalidArgument, "image.image: must not be empty")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if img := r.findImageLocked(name); img != nil {
		return &runtimeapi.PullImageResponse{ImageRef: img.ID}, nil
	}
	img := &imageRecord{ID: imageID(name), Name: name, PulledAt: time.Now().UnixNano()}
	if err := writeJSON(r.imagePath(img.ID), img); err != nil {
		return nil, status.Errorf(codes.Internal, "pull image %q: %v", name, err)
	}
	r.images[img.ID] = img
	return &runtimeapi.PullImageResponse{ImageRef: img.ID}, nil
}

// ImageStatus reports the image, or an empty response if it is absent.
func (r *Runtime) ImageStatus(ctx context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	if req.GetImage().GetImage() == "" {
		return nil, status.Error(codes.InvalidArgument, "image.image: must not be empty")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	img := r.findImageLocked(req.GetImage().GetImage())
	if img == nil {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	return &runtimeapi.ImageStatusResponse{Image: toImage(img)}, nil
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
	sort.Slice(out, func(i, j int) bool { return out[i].RepoTags[0] < out[j].RepoTags[0] })
	return &runtimeapi.ListImagesResponse{Images: out}, nil
}

// RemoveImage forgets the image; an absent image is fine.
func (r *Runtime) RemoveImage(ctx context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	if req.GetImage().GetImage() == "" {
		return nil, status.Error(codes.InvalidArgument, "image.image: must not be empty")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	img := r.findImageLocked(req.GetImage().GetImage())
	if img == nil {
		return &runtimeapi.RemoveImageResponse{}, nil
	}
	if err := os.Remove(r.imagePath(img.ID)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "remove image %q: %v", img.Name, err)
	}
	delete(r.images, img.ID)
	return &runtimeapi.RemoveImageResponse{}, nil
}
