// Package fleet is the bus-level integration suite: several actorlet agents
// run in the test process against one real nats-server, each on its own
// embedded process runtime, and the real actorletctl binary drives them the
// way an operator would (apply, get, describe, logs, exec, restart, evict,
// events, delete), alongside raw writes to the JetStream buckets.
//
// Everything lives in the _test.go files; this file only names the package.
package fleet
