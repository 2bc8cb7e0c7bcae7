package cri_test

import (
	"github.com/actorlet/actorlet/cri"
	critesting "k8s.io/cri-api/pkg/apis/testing"
)

// The upstream fakes must keep satisfying our interfaces: they are what the
// error-injection tests run against.
var (
	_ cri.RuntimeService = &critesting.FakeRuntimeService{}
	_ cri.ImageService   = &critesting.FakeImageService{}
)
