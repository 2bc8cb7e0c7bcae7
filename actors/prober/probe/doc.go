// Package probe holds the container probe handlers: exec (through the
// runtime's ExecSync), httpGet, tcpSocket and grpc (grpc.health.v1). They are
// plain functions with no actor machinery; the prober's worker actors run
// them in goroutines.
//
// Every handler returns (result, message, err):
//   - Success or Failure with a message describing what was seen (command
//     output, response body, connection error) when the probe ran;
//   - Unknown with a non-nil err when the probe could not be run at all
//     (bad spec, a runtime error that is not a command exit), so the caller
//     can throw the result away, as the kubelet does.
package probe
