// Package commands is the operator's request/reply door into one node: a
// nats micro service (wire.CommandServiceName, metadata node=<name>) with one
// endpoint per verb on wire.CommandSubject(node, verb). The requests,
// replies, errors and the typed Client actorletctl calls it with are in
// messages/wire.
//
// The service is bound to the small Node interface. ActorNode implements it
// on top of the agent's actors (status, supervisor, prober) and the CRI
// runtime, so a command never blocks an actor: each request runs in its own
// goroutine and asks the actors with futures.
//
//	actorletctl ──request──▶ actorlet.node.<node>.<verb> ──▶ Service ──▶ Node
//	            ◀──reply────                                        (ActorNode → actors, CRI)
//
// Log follow streams chunks back to an inbox the client names in the
// request; every chunk is a request the client acknowledges, so a client that
// went away is noticed (no responders) and the follow stops.
//
// Errors travel as micro errors with HTTP-like codes: 400 bad request (the
// description names the field), 404 unknown pod or container, 500 runtime
// error, 504 timeout. docs/protocol.md, section "Operator commands", is the
// user-facing description of every request and response.
package commands
