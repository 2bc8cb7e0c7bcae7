// Package actorcore is the integration suite of the actor core: real agents
// (node/agent) on the embedded process runtime over real gRPC, an
// in-process nats-server, and real processes, driven and observed only as an
// operator would — desired pods written to the actorlet_desired bucket,
// status read from actorlet_status, events from the ACTORLET_EVENTS stream,
// and the node's command service.
//
// The suite covers the kubelet behaviours the actor rewrite must keep:
// CrashLoopBackOff with growing delays, liveness restarts, readiness flips,
// graceful deletion with preStop and grace period, a churn of 200 pods that
// leaves no process or actor behind, supervision of a panicking pod actor,
// and adoption of running pods by a restarted agent.
//
// Run it with: go test -race -count=1 ./test/integration/actorcore/...
package actorcore
