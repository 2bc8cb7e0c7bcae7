// Package validation turns bytes an operator wrote into a Pod the agent can
// trust: DecodePod parses JSON or YAML strictly, SetDefaults fills in what
// the API server would, and ValidatePod lists every field problem with its
// path. Sources call them in that order: decode, default, validate.
package validation
