package wire

// StaticAnnotation marks the published status of a static (file) pod, as a
// mirror pod is marked in Kubernetes.
const StaticAnnotation = "actorlet.io/static"

// StaticManifestAnnotation carries, on a static pod and its status, the
// path of the manifest file it runs from on its node: the file to remove
// to stop it (a static pod cannot be deleted through the bus).
const StaticManifestAnnotation = "actorlet.io/static-manifest"
