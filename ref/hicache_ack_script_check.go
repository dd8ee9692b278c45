package ref

import (
	"fmt"
	"slices"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for the hicache.ack_script op (docs/spec/radix-acks.md §3): the script and each step, checked before any step runs.

var ackOps = []string{spec.AckCreate, spec.AckNode, spec.AckEvictDevice, spec.AckLock, spec.AckUnlock, spec.AckReserve, spec.AckLayerStep,
	spec.AckWriteBackup, spec.AckWriteNonCP, spec.AckEventsComplete, spec.AckWritingCheck, spec.AckRollback, spec.AckRollbackPrepared,
	spec.AckHas, spec.AckAppend, spec.AckInjectDuplicate, spec.AckReset}

// validateAckScript rejects a script that cannot run at all, naming
// steps[i].field: no create first (ErrScriptOrder), an unknown op
// (ErrBadEnum), a create with ranks < 1 (ErrBadCPSize), an invalid rank
// configuration or a group whose host and layer tables exceed lim, an
// owned list whose length is not the group size (ErrLengthMismatch) or
// with a negative or too large count (ErrNegative, errOwnedPages), an unknown fail_at
// (ErrBadEnum), or a rank outside [0, R) (ErrBadCPRank); and, checked
// after each step, a trace whose per-rank entries — the group's ranks summed
// over the steps so far, 16 bytes each — exceed lim (ErrTooLarge at the
// ranks of the create in effect).
func validateAckScript(lim spec.Limits, in spec.HiCacheAckScriptInput) error {
	if len(in.Steps) == 0 || in.Steps[0].Op != spec.AckCreate {
		op := ""
		if len(in.Steps) > 0 {
			op = in.Steps[0].Op
		}
		return spec.Reject(spec.ErrScriptOrder, "steps[0].op", op, `"create"`)
	}
	ranks, regs := 0, 0
	for _, s := range in.Steps {
		if s.Op == spec.AckReserve || s.Op == spec.AckWriteBackup {
			regs++
		}
	}
	// Every step's result holds a ready prefix and a duplicate count per
	// rank of the group (and the step runs on every rank), so the trace is
	// Σ_steps ranks entries: bounded like an output, at the create whose
	// ranks multiply the steps after it.
	var entries int64
	created, maxEntries := 0, lim.OutputBound()/16
	for i, s := range in.Steps {
		if !slices.Contains(ackOps, s.Op) {
			return spec.Reject(spec.ErrBadEnum, spec.Idx("steps", i)+".op", s.Op, "one of create, node, evict_device, lock, unlock, reserve, layer_step, write_backup, write_noncp, events_complete, writing_check, rollback, rollback_prepared, has, append_ack, inject_duplicate, reset")
		}
		if err := validateAckStep(lim, s, i, ranks, regs); err != nil {
			return err
		}
		if s.Op == spec.AckCreate {
			ranks, created = s.Ranks, i
		}
		// A create's ranks passed its own bound (ranks·8 bytes within
		// lim), and entries stays within lim/16 + ranks: no overflow. The
		// field is formatted only for the rejection.
		if entries += int64(ranks); entries > maxEntries {
			return lim.CheckOutput(spec.Idx("steps", created)+".ranks", entries, 16)
		}
	}
	return nil
}

// validateAckStep checks step i; its field paths are only formatted for
// a rejection, so a long valid script costs no string building.
func validateAckStep(lim spec.Limits, s spec.AckStep, i, ranks, regs int) error {
	at := func() string { return spec.Idx("steps", i) }
	switch s.Op {
	case spec.AckCreate:
		if s.Ranks < 1 {
			return spec.Reject(spec.ErrBadCPSize, at()+".ranks", s.Ranks, ">= 1")
		}
		if err := ackStepConfig(s).Validate(); err != nil {
			return prefixField(err, at()+".")
		}
		// Each rank holds host_capacity slots and each registration L
		// layer flags; bound both before any rank is built.
		// Formed unchecked, layers·(registrations+1) wrapped (2^61 layers ×
		// 8 flag sets = 2^64 = 0) below the bound and the first reservation
		// allocated the layer flags from the raw number.
		// Validate made every operand non-negative.
		if spec.MulOverflows(int64(s.Layers), int64(regs+1)) {
			return spec.Reject(spec.ErrOverflow, at()+".layers", s.Layers, fmt.Sprintf("layers*(registrations+1) = layers*%d in int64", regs+1))
		}
		flags := int64(s.Layers) * int64(regs+1)
		if spec.AddOverflows(int64(s.HostCapacity), flags) || spec.MulOverflows(int64(s.Ranks), int64(s.HostCapacity)+flags) {
			return spec.Reject(spec.ErrOverflow, at()+".host_capacity", s.HostCapacity, "ranks*(host_capacity+layers*registrations) in int64")
		}
		return lim.CheckOutput(at()+".host_capacity", int64(s.Ranks)*(int64(s.HostCapacity)+flags), 8)
	case spec.AckReserve, spec.AckWriteBackup:
		if len(s.Owned) != ranks {
			return spec.Reject(spec.ErrLengthMismatch, at()+".owned", len(s.Owned), fmt.Sprintf("== ranks (%d)", ranks))
		}
		// Owned counts are checked for the whole group before any rank
		// runs the step, so a bad count cannot make the ranks diverge.
		for r, o := range s.Owned {
			if o < 0 || o > spec.MaxOwnedPages {
				return CheckOwnedPages(spec.Idx(at()+".owned", r), o)
			}
		}
		if s.FailAt.Validate("") != nil {
			return s.FailAt.Validate(at() + ".fail_at")
		}
	case spec.AckEventsComplete:
		if s.Rank != nil && (*s.Rank < 0 || *s.Rank >= ranks) {
			return spec.Reject(spec.ErrBadCPRank, at()+".rank", *s.Rank, fmt.Sprintf("in [0, ranks=%d)", ranks))
		}
	}
	return nil
}
