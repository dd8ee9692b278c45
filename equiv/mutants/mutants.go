// Package mutants is kvtwin's bug zoo: each historic bug the engineering
// notes describe, re-introduced into a copy of the fast twin. The
// differential suite must kill every one (TestMutantsAreKilled), and each
// has a named regression fixture holding its minimal distinguishing input.
package mutants

import (
	"slices"
	"strings"

	"github.com/kvtwin/kvtwin/equiv"
)

// MaxCases is how many generated cases a mutant may survive before the
// suite is judged too weak to catch it.
const MaxCases = 1000

// All returns every mutant, grouped by op in catalog (name) order.
func All() []equiv.Killable {
	zoo := []equiv.Killable{
		LPFStorageAccepted(),
		CachedGateBeforeLoadBack(),
		CPGatesOnEmptyBatch(),
		CPNoLegacyLift(),
		CPUserLimitUncapped(),
		CPLimitNotDefaulted(),
		LockRecheckSkipped(),
		BenchL2HitsAsL1(),
		FlagsFromFloat32(),
		ChunkPageStartZero(),
		FinishRequiresAllLayers(),
		EnqueueWithoutDedup(),
		RegisterOverwritesRoom(),
		FinishPerInfo(),
		OneContextPerRoom(),
		GroupLengthMismatch(),
		VItemLenForK(),
		PrebuiltSliceFromZero(),
		StateLayersPairedByCount(),
		IndexBytesUseAllLayers(),
		RadixKeySlicesCopy(),
		RadixStoredKeyViews(),
		BigramPairsTokenWithItself(),
		BigramHashPackedLE64(),
		OwnerCountsRecounted(),
		SplitKeepsOwnerCounts(),
		OwnerClosedFormGoMod(),
		DescriptorRebuiltPerLayer(),
		DescriptorReusedAcrossBatches(),
		SilentFallback(),
		AllLayerWait(),
		AckFunnelBypass(),
		RollbackLeavesOrphanAck(),
		RollbackLeavesLayerState(),
		ConsumerForgetsCompleted(),
		BlindPopUnknownAck(),
		ZeroOwnedRankReturnsEarly(),
		WritingCheckStrandsDuplicates(),
		ZigzagConcatenation(),
		ValidMaskSuffix(),
		LastTokenComputeLength(),
		RerangeValidOffsets(),
		MoESuffixCount(),
		StoreSuffixCount(),
		RestoreSuffixCount(),
		PagePlanBeforeEligibility(),
		GlobalPageInverse(),
		DraftCPLocalFromLength(),
		DraftV2GlobalHidden(),
		FullRequestAccounting(),
		EstimatorIgnoresChunkCap(),
		EstimateMQATermMissing(),
		EstimateFullRequestQK(),
		EstimateBothCapsRowWins(),
		EstimateRank0Only(),
		ChunkOffsetsNotRowAddressed(),
		PatternLengthUnchecked(),
		PrefetchUngated(),
		SharedLayerMissingPrevTopk(),
		HiCacheIndexBytesEveryLayer(),
		PatternCharsetCForFull(),
		OffsetZeroInjected(),
		FlagsReplaceJSON(),
		EnvBridgedAfterImport(),
		LegacyOnlyNVRTC(),
		DenseWalk(),
		ManifestTrustedWithoutLiveness(),
		FullMaterializeStaleCurrent(),
		ContractMismatchAccepted(),
		NoSaturation(),
		NaNLost(),
		ReciprocalMultiply(),
		SchedulerUpstreamWording(),
		ExceedsItself(),
		BatchNoAbort(),
		GenericValueErrorFirst(),
		StreamTypeFromStatus(),
		HTTPStatusOnly(),
		PreflightExtraChunk(),
		ParaDefaultUngated(),
		StringImageURLRejected(),
		GLMArgsStripped(),
		GLMUsageNoDetails(),
	}
	slices.SortStableFunc(zoo, func(a, b equiv.Killable) int { return strings.Compare(a.Op(), b.Op()) })
	return zoo
}
