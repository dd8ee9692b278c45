package ref

import "github.com/kvtwin/kvtwin/spec"

// The radix.script op (docs/spec/radix-acks.md §1.9 P5): a list of steps against one
// tree, returning the trace of results and the final observable tree, so
// the stateful tree gets fixtures and an HTTP endpoint like every pure op.

// validateRadixScript rejects a script that cannot run at all: no create
// first (ErrScriptOrder), an unknown op (ErrBadEnum), an invalid create
// config or a token outside [0, 2^32) — each naming steps[i].field.
func validateRadixScript(in spec.RadixScriptInput) error {
	if len(in.Steps) == 0 || in.Steps[0].Op != spec.StepCreate {
		op := ""
		if len(in.Steps) > 0 {
			op = in.Steps[0].Op
		}
		return spec.Reject(spec.ErrScriptOrder, "steps[0].op", op, `"create"`)
	}
	for i, s := range in.Steps {
		at := spec.Idx("steps", i)
		switch s.Op {
		case spec.StepCreate:
			if err := stepConfig(s).Validate(); err != nil {
				return prefixField(err, at+".")
			}
		case spec.StepInsert, spec.StepMatch, spec.StepScore:
			if err := CheckTokens(at+".key", s.Key); err != nil {
				return err
			}
		case spec.StepLock, spec.StepUnlock, spec.StepEvict, spec.StepPlanEvict:
		default:
			return spec.Reject(spec.ErrBadEnum, at+".op", s.Op, "one of create, insert, match, score, lock, unlock, evict, plan_evict")
		}
	}
	return nil
}

func stepConfig(s spec.RadixStep) spec.TreeConfig {
	return spec.TreeConfig{PageSize: s.PageSize, Eagle: s.Eagle, Disable: s.Disable, Policy: s.Policy, CPSize: s.CPSize, CPDraftSize: s.CPDraftSize}
}

// prefixField returns err with its field path prefixed, for errors a tree
// reports about its own arguments ("key" → "steps[3].key").
func prefixField(err error, prefix string) error {
	if ie, ok := spec.AsInputError(err); ok {
		c := *ie
		c.Field = prefix + c.Field
		return &c
	}
	return err
}

// RunRadixScript runs a validated script on trees built by newTree. Both
// twins of radix.script call it with their own tree, so the step semantics
// are written once and the trees are what differs. The trace's slot lists
// are bounded by lim (a script of many matches on a large tree would
// otherwise grow its output quadratically).
func RunRadixScript(lim spec.Limits, in spec.RadixScriptInput, newTree spec.NewRadixTreeFunc) (spec.RadixScriptOutput, error) {
	if err := validateRadixScript(in); err != nil {
		return spec.RadixScriptOutput{}, err
	}
	var tree spec.RadixTree
	out := spec.RadixScriptOutput{Trace: make([]spec.RadixStepResult, 0, len(in.Steps))}
	var units int64
	var buf []spec.Unit
	for i, s := range in.Steps {
		if s.Op == spec.StepCreate {
			t, err := newTree(stepConfig(s))
			if err != nil {
				return spec.RadixScriptOutput{}, prefixField(err, spec.Idx("steps", i)+".")
			}
			tree = t
		}
		var r spec.RadixStepResult
		var n int64
		var err error
		r, n, buf, err = runStep(tree, s, buf)
		if err != nil {
			r = spec.RadixStepResult{Error: new(spec.ErrorObjectOf(prefixField(err, spec.Idx("steps", i)+".")))}
		}
		if units += n; units > 0 {
			if err := lim.CheckOutput(spec.Idx("steps", i), units, 8); err != nil {
				return spec.RadixScriptOutput{}, err
			}
		}
		r.Op, r.EvictableSize, r.ProtectedSize = s.Op, tree.EvictableSize(), tree.ProtectedSize()
		out.Trace = append(out.Trace, r)
	}
	out.Tree = tree.State()
	if err := lim.CheckOutput("steps", units+int64(2*tree.TotalSize()), 8); err != nil {
		return spec.RadixScriptOutput{}, err
	}
	return out, nil
}

// runStep runs one non-create step and returns its result and the number of
// slot entries it added to the trace. Every key is decoded into the one
// reused buffer buf, as a scheduler reuses its request buffers: a tree that
// kept a view of a caller's key instead of copying what it stores (§1.11
// B1.b) sees its stored keys change under it.
func runStep(tree spec.RadixTree, s spec.RadixStep, buf []spec.Unit) (spec.RadixStepResult, int64, []spec.Unit, error) {
	var r spec.RadixStepResult
	switch s.Op {
	case spec.StepInsert, spec.StepMatch, spec.StepScore:
		buf = buf[:0]
		for _, t := range s.Key {
			buf = append(buf, spec.Unit(t))
		}
		k := spec.RadixKey{Units: buf, Extra: spec.ExtraKeyOf(s.Extra, s.Salt)}
		if s.Op == spec.StepScore {
			n, err := ScoreKey(tree, k, s.Exact)
			r.Score = &n
			return r, 0, buf, err
		}
		if s.Op == spec.StepMatch {
			m, err := tree.MatchPrefix(k)
			r.Match = &m
			return r, int64(len(m.Indices)), buf, err
		}
		n, err := tree.Insert(k, s.Value, s.Priority)
		r.PrefixLen = &n
		return r, 0, buf, err
	case spec.StepLock, spec.StepUnlock:
		f := tree.IncLockRef
		if s.Op == spec.StepUnlock {
			f = tree.DecLockRef
		}
		d, err := f(s.Node)
		r.Delta = &d
		return r, 0, buf, err
	case spec.StepEvict:
		e, err := tree.Evict(s.NumTokens)
		r.Evict = &e
		return r, int64(e.Evicted), buf, err
	case spec.StepPlanEvict:
		p, err := tree.EvictOwnerLanes(PlanRequestOf(s))
		r.Plan = &p
		return r, int64(p.Evicted), buf, err
	}
	return r, 0, buf, nil
}

// ScoreKey is a router's score of k on tree (docs/spec/radix-acks.md §1.14):
// the exact PrefixLen, or PrefixLenHashed of k's own prefix-hash chain.
func ScoreKey(tree spec.RadixTree, k spec.RadixKey, exact bool) (int, error) {
	if exact {
		return tree.PrefixLen(k)
	}
	hashes, err := tree.PrefixHashes(k)
	if err != nil {
		return 0, err
	}
	return tree.PrefixLenHashed(k, hashes)
}

// PlanRequestOf is the owner-lane plan request of a plan_evict step.
func PlanRequestOf(s spec.RadixStep) spec.OwnerPlanRequest {
	return spec.OwnerPlanRequest{CPSize: s.CPSize, Need: s.Need, Free: s.Free, Locked: s.Node, DryRun: s.DryRun}
}

// RadixScript is the reference twin of radix.script (docs/spec/radix-acks.md §1):
// the script run on reference trees.
func RadixScript(lim spec.Limits, in spec.RadixScriptInput) (spec.RadixScriptOutput, error) {
	return RunRadixScript(lim, in, NewRadixTree)
}
