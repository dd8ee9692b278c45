// Package spec is the vocabulary of docs/spec that every twin speaks: the
// ops' inputs and outputs, sentinel errors, bounds and Limits.
//
// In full: every op's input and output types with their JSON, the sentinel
// errors and the *InputError that carries the field, the value and the
// bound, the bounds and defaults the spec fixes, Limits (the per-request
// bound on output and work) with the overflow-safe arithmetic every twin
// uses, and the interfaces of the stateful parts (RadixTree, AckQueue,
// Loader, LayerDoneCounter, PerLayerManager, KVEvIndex) with their
// constructor types.
//
// It computes nothing an op answers: package ref holds the reference
// algorithms, package fast the optimized twins, and both read and write
// these types, so an answer is one value whichever twin produced it, and
// its canonical bytes can be compared with bytes.Equal. What a type does
// beyond holding data is the validation of its own fields (Limits,
// KVEvConfig, TreeConfig, …) and the geometry the spec defines on it (a CP
// Layout's rows and lanes, a HostGeometry's offsets). A program that only
// talks to kvtwin (the adapter kit, the event subscriber, trace replay)
// imports this package and not the reference.
//
// # Inputs and outputs
//
// Each op's input and output structs are named for the op as its function
// is (TransferFilterCPRankInput, …Output); JSON is snake_case and each field
// is documented with its spec section. docs/ops.md lists each op's files in
// every package; an op's types sit in the file of the same base name here.
//
// # Errors
//
// Reject wraps a sentinel (Err…, an error kind of the spec; its Code is the
// JSON "code") with the field, the value and the bound in an *InputError.
// ErrorObjectOf is the error object a script step records.
package spec
