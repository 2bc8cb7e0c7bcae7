package commands

import (
	"fmt"
	"strings"

	"github.com/actorlet/actorlet/messages/wire"
)

// Forbidden is a 403 (wire.CodeForbidden) naming the verb and the node
// setting that refuses it (ServiceOptions.DenyExec / DenyLogs), whatever
// the bus allowed.
func Forbidden(verb, setting string) *wire.Error {
	return wire.Forbidden(verb, setting)
}

// checkReply refuses a request whose reply subject is not a requester's
// inbox. Every real request has one; a message JetStream redelivered to a
// command subject (a pull request, an API reply or a consumer aimed at it
// by another client) carries a $JS.… reply or none, and so do messages a
// server generates. Such messages are dropped before any handler runs: a
// node acts only on requests a requester can hear the answer to.
func checkReply(reply string) error {
	switch {
	case reply == "":
		return wire.BadRequest("reply", "a command must be a request with a reply subject")
	case strings.HasPrefix(reply, "$"):
		return wire.BadRequest("reply", fmt.Sprintf("reply subject %q is a system subject, not an inbox", reply))
	case strings.HasPrefix(reply, "actorlet."), strings.Contains(reply, "*"), strings.Contains(reply, ">"):
		return wire.BadRequest("reply", fmt.Sprintf("reply subject %q is not an inbox", reply))
	}
	return nil
}
