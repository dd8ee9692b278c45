// Package ref is kvtwin's executable specification: plain, obviously-correct
// implementations of the algorithms in docs/spec, written to read like the
// spec text. It also owns the types both twins share (inputs, outputs,
// sentinel errors, Limits). Every fast or CUDA twin must produce the same
// canonical bytes as the function here on every input, errors included.
package ref
