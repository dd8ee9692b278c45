package mutants

import (
	"log/slog"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// faultyPerLayerScript runs transfer.per_layer_script on fast managers with
// the given faults.
func faultyPerLayerScript(f fault.Transfer) func(spec.Limits, spec.TransferPerLayerScriptInput) (spec.TransferPerLayerScriptOutput, error) {
	// fast.NewPerLayerManager with the faults: a deterministic manager.
	newManager := func(cfg spec.PerLayerConfig, engine spec.Engine, events spec.EventFactory, logger *slog.Logger) (spec.PerLayerManager, error) {
		return fault.Installed().NewPerLayerManager(cfg, engine, events, logger, f)
	}
	return func(lim spec.Limits, in spec.TransferPerLayerScriptInput) (spec.TransferPerLayerScriptOutput, error) {
		return ref.RunTransferPerLayerScript(lim, in, newManager)
	}
}

func perLayerMutant(id, section, about string, f fault.Transfer) equiv.Killable {
	return &equiv.Mutant[spec.TransferPerLayerScriptInput, spec.TransferPerLayerScriptOutput]{
		Spec:     equiv.TransferPerLayerScript(),
		ID:       id,
		Section:  section,
		About:    about,
		Fn:       faultyPerLayerScript(f),
		Scenario: "equiv/testdata/per_layer_" + id + ".txt",
	}
}

// FinishRequiresAllLayers is docs/spec/transfer.md §4.7 B1: completion waited for
// all N layers, so every finish timed out (processed=78/79) and the MTP
// layer, which never fires the hook, was never copied.
func FinishRequiresAllLayers() equiv.Killable {
	return perLayerMutant("finish-requires-all-layers", "transfer.md §4.7 B1",
		"finish waits for all N layers instead of the count enqueued and has no sync fallback: TIMEOUT processed=78/79, the MTP layer is never sent",
		fault.Transfer{FinishRequiresAll: true})
}

// EnqueueWithoutDedup is docs/spec/transfer.md §4.7 B2: every hook fire counted, so
// an active context's target grew by H per forward and finishes timed out
// (TTFT p99 116 s).
func EnqueueWithoutDedup() equiv.Killable {
	return perLayerMutant("enqueue-without-dedup", "transfer.md §4.7 B2",
		"NoteEnqueued counts every hook fire: the completion target grows by H per forward past N and finish times out",
		fault.Transfer{NoEnqueueDedup: true})
}

// RegisterOverwritesRoom is docs/spec/transfer.md §4.7 B3: re-registering an active
// chunk rebuilt it and overwrote the registered context, which leaked with
// its batches (registered=917 for ~100 requests).
func RegisterOverwritesRoom() equiv.Killable {
	return perLayerMutant("register-overwrites-room", "transfer.md §4.7 B3",
		"Register of an active (room, chunk) rebuilds and overwrites the context: the orphan's batches are never waited",
		fault.Transfer{RegisterOverwrites: true})
}

// FinishPerInfo is docs/spec/transfer.md §4.7 B5: with several non-dummy infos one
// context was registered and then finished once per info, over-popping
// the room's deque while the other infos got no KV.
func FinishPerInfo() equiv.Killable {
	return perLayerMutant("finish-per-info", "transfer.md §4.7 B5",
		"Register accepts several non-dummy infos: one context serves (and is finished for) every info, the others get no KV",
		fault.Transfer{RegisterAnyInfos: true})
}

// OneContextPerRoom is docs/spec/transfer.md §4.7 B6: one context per room, so
// chunk N+1 registering while chunk N was unfinished replaced it and the
// finish of chunk N finished chunk N+1's context.
func OneContextPerRoom() equiv.Killable {
	return perLayerMutant("one-context-per-room", "transfer.md §4.7 B6",
		"a room holds one context: the next chunk's registration replaces it and finish pops it whatever its key",
		fault.Transfer{OneContextPerRoom: true})
}
