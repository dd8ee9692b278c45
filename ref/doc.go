// Package ref is kvtwin's executable specification: the reference twin of
// every algorithm in docs/spec. Its functions are plain, obviously-correct
// implementations written to read like the spec text, over the standard
// library (and XXH3, the spec's own hash) and package spec, which declares
// what they read and write (inputs, outputs, sentinel errors, Limits). Every
// fast or CUDA twin must produce the same canonical bytes as the function
// here on every input, errors included.
//
// # The algorithms
//
// One function per op of the catalog, func(spec.Limits, In) (Out, error), by
// spec file and section; docs/ops.md lists each op's files in every package.
//
//   - CP layout (cp-layout.md): CPSplit §1, CPValidRows §2, CPDraftInput §2.4
//     and §7.5, CPRerange §3, CPCompactValid and CPRestorePadded §4,
//     CPCanSplit §5, CPPageDescriptors and CPRemapLocs §6.1.
//   - FP8 KV rows (cp-layout.md §7): FP8QuantizeRow, FP8QuantizeIndexK,
//     FP8MaterializePages, FP8StorePages, FP8StoreValidRows,
//     FP8ComposeCurrent, FP8DequantTopK.
//   - NSA indexer (cp-layout.md §8, §9): MQAChunkRows, MQAChunkedTopK,
//     NSAIndexPlan.
//   - Transfer (transfer.md): TransferFilterCPRank §1,
//     TransferGroupContiguous §2, TransferLayerBlocks §3,
//     TransferPerLayerScript §4, TransferPrebuiltSlice §5,
//     TransferStateLayerPairing §6, LayoutHostOffsets §7.1, LayoutConvert
//     §7.2, SamplingPack §8.
//   - Radix prefix cache and HiCache (radix-acks.md): RadixScript §1,
//     RadixBigramKey §2.1, RadixPageHashes §2.4, HiCacheAckScript §3,
//     HiCacheOwnerCounts §4.3, HiCacheLoadScript §5.2,
//     HiCacheLayerDoneScript §5.3.
//   - KV events (kv-events.md): KVEvDecode §1, KVEvApply §2, KVEvSnapshot §2.10 (A12: RestoreKVEvIndex).
//   - Admission (admission-serving.md): AdmissionRound §A1, AdmissionScript
//     §A1.7, AdmissionEstimate A2, AdmissionBench §A3.
//   - Serving (admission-serving.md): ServingValidateInputLength S1.2,
//     ServingErrorBody and ServingStreamErrorChunk S1.3,
//     ServingChatNormalize S2.2, ServingUsage S2.6, ServingGLMToolArgs S2.8,
//     DeepGEMMWarmupPlan §S3, ConfigIndexTopKOverrides §S4.
//
// # Stateful algorithms
//
// A script op drives objects that live across calls. Each is an interface
// of package spec with one constructor type, so the script runs any twin's
// objects and compares nothing but them; ref's constructors build the
// reference objects: RadixTree (NewRadixTree),
// AckQueue (NewAckQueue), Loader (NewLoader), LayerDoneCounter
// (NewLayerDoneCounter), PerLayerManager (NewPerLayerManager, over an Engine
// and an EventFactory; MemEngine and FakeEvents are transfer.md's in-memory
// engine and events) and KVEvIndex (NewKVEvIndex).
//
// # The rest of the API
//
//   - Validation the twins share: an op's whole-input validator is its
//     Validate…; a Check… is one piece of an op's validation (the scalars,
//     one row, one step) that another twin calls from inside its own single
//     pass, so that it reports the same first error; the …Error functions
//     are the words of the errors a twin builds itself. Each names its op
//     and spec section.
//   - The data these functions read and write (each op's input and output
//     structs, sentinels, Limits, the bounds and defaults the spec fixes)
//     is package spec's; see its documentation.
//
// Everything else is unexported: what only ref calls is not part of the
// contract, and what only ref's own tests pin is re-exported to them in
// export_test.go.
package ref
