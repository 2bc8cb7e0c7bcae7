// Package hostile feeds one agent (process runtime, real nats-server) what
// a careless or hostile user would: random bytes and deep nesting on the
// desired bucket and the command subjects, env bombs, huge outputs,
// oversized statuses, floods of commands. Each test asserts that the agent
// stays up, that its RSS stays bounded and that ordinary pods keep
// progressing around the bad input.
package hostile
