// Package remote is the durable pod source: desired pods an operator writes
// into the JetStream KV bucket wire.DesiredBucket, watched under this node's
// keys (node.<node>.>) and the fleet keys (fleet.>).
//
// The watch loop:
//
//	Start ──► watch ──► initial values ──► first time: one SET (even empty: the source is ready)
//	            ▲                      └─► later: diff against what was delivered → ADD/UPDATE/DELETE/REMOVE
//	            │                                  │
//	            │                                  ▼
//	            └──── reconnect / watcher closed ◄─ changes: new key → ADD, changed → UPDATE,
//	                  (re-watch, back-off)          deletionTimestamp → DELETE, key deleted/purged → REMOVE
//
// Re-watching after a reconnect and diffing the fresh snapshot against the
// pods already delivered makes the source catch up with whatever happened
// while the node was cut off, including deletions it never saw.
//
// Invalid entries are rejected one by one (log, FailedValidation event and
// status entry, OnInvalid) and never stop the watch. Status entries are
// written, cleared and pruned through Config.Statuses, their one owner; the
// source deletes only desired keys (Finalize, which the status owner calls
// when a deleted pod has terminated). A pod of the first snapshot whose
// status entry (from before this run) is terminal for its UID is delivered
// with that status (the API server's copy of it), so its worker starts
// terminal and an agent restart never runs it again.
package remote
