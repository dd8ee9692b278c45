// Package fast holds kvtwin's production CPU implementations. Every function
// has the signature of its twin in package ref, takes and returns ref's types,
// and must produce byte-identical canonical output (errors included) on every
// input; the equiv package checks that on generated inputs.
package fast
