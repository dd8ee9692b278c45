// Package replay drives a radix prefix cache (docs/spec/radix-acks.md §1)
// with a real request trace. The trace is the Mooncake FAST'25 conversation
// trace (kvcache-ai/Mooncake, FAST25-release/traces, Apache-2.0), one JSON
// object a line with an arrival timestamp, the prompt and output lengths, and
// one hash id per 512-token prompt block.
//
// The trace carries no text, so the replay chooses what the tree is keyed by
// (Mode):
//
//   - ModeTokens expands every hash id into 512 deterministic token ids
//     (BlockToken) and keys the tree by the prompt's tokens at a page size P,
//     as an engine's prefix cache (SGLang's RadixCache) does.
//   - ModeBlocks keys the tree by the hash ids themselves, one unit per
//     block at page size 1: the shape KV-aware routers index (Dynamo's radix
//     tree, llm-d's block index).
//
// Run replays the requests in arrival order through a tree built by an
// injected spec.NewRadixTreeFunc (catalog.RadixTree picks one), modelling an engine with a bounded KV pool
// (see Run for the exact per-request steps), and returns a Report whose
// deterministic counters (hits, evictions, block operations) are separate
// from its wall-clock Timing, so two trees can be compared exactly.
package replay
