package kuberuntime

import (
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// isNotFound reports whether err says the object is gone: a gRPC NotFound,
// or the upstream fakes' "not found" text.
func isNotFound(err error) bool {
	if err == nil {
		return false
	}
	if s, ok := status.FromError(err); ok && s.Code() == codes.NotFound {
		return true
	}
	return strings.Contains(err.Error(), "not found")
}
