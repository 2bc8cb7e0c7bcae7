package status

import (
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

func equalStatus(a, b v1.PodStatus) bool { return apiequality.Semantic.DeepEqual(a, b) }
