// Package chaos is a Jepsen-style test of the promise that NATS delivers
// the desired state: a 3-server cluster of real nats-server processes
// (authenticated as docs/security.md sets a bus up, every route and
// client link through a proxy the test controls), agents running as real
// processes on the process runtime, an operator that keeps creating,
// updating and deleting node and fleet pods, and a seeded schedule of
// faults (server SIGKILL, SIGTERM + restart, minority and majority
// partitions, agent kill -9, slow links). A checker watches the container
// processes and the status entries all the time and at the end; see
// TestChaos and docs/benchmarks.md.
package chaos
