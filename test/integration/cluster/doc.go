// Package cluster runs a fleet of in-process agents (in-memory CRI runtime)
// against a real 3-server JetStream cluster and fails servers under it:
// the stream leader during an apply, the server a node is connected to, and
// a majority (quorum lost). See docs/fleet.md.
package cluster
