package ref

// The radix.script op (docs/spec/radix-acks.md §1.9 P5): a list of steps against one
// tree, returning the trace of results and the final observable tree, so
// the stateful tree gets fixtures and an HTTP endpoint like every pure op.

// Script step kinds.
const (
	// StepCreate replaces the tree with a new, empty one (page_size, eagle, disable, policy).
	StepCreate = "create"
	// StepInsert inserts key → value (value omitted: simulation mode).
	StepInsert = "insert"
	// StepMatch matches key.
	StepMatch = "match"
	// StepLock increments the lock refs on node's path.
	StepLock = "lock"
	// StepUnlock decrements the lock refs on node's path.
	StepUnlock = "unlock"
	// StepEvict evicts at least num_tokens units, or all that are evictable.
	StepEvict = "evict"
	// StepPlanEvict plans (and unless dry_run executes) the owner-lane
	// eviction of a load-back: cp_size (0: the tree's), need, free, and
	// node, the load's locked node (docs/spec/radix-acks.md §4.4).
	StepPlanEvict = "plan_evict"
	// StepScore is a router's read-only score of key: PrefixLenHashed of
	// the key's prefix-hash chain, or with exact the token-comparing
	// PrefixLen (docs/spec/radix-acks.md §1.14).
	StepScore = "score"
)

// ErrScriptOrder: a script whose first step does not create the tree.
var ErrScriptOrder = NewSentinel("script_order", "the first step must create the tree")

// RadixStep is one step of a radix script. Which fields apply depends on Op.
type RadixStep struct {
	// Op is create, insert, match, lock, unlock or evict.
	Op string `json:"op"`
	// PageSize is the new tree's page size (create).
	PageSize int `json:"page_size,omitzero"`
	// Eagle keys the new tree by bigrams (create).
	Eagle bool `json:"eagle,omitzero"`
	// Disable creates a disabled cache (create).
	Disable bool `json:"disable,omitzero"`
	// Policy is the new tree's eviction policy (create).
	Policy EvictPolicy `json:"policy,omitzero"`
	// CPSize is the new tree's CP size, 0 for off (create), or the plan's N,
	// 0 for the tree's (plan_evict).
	CPSize int `json:"cp_size,omitzero"`
	// CPDraftSize is the new tree's second CP size (create).
	CPDraftSize int `json:"cp_draft_size,omitzero"`
	// Key are the token ids, each in [0, 2^32) (insert, match).
	Key []int64 `json:"key,omitzero"`
	// Value are the slots (insert); omitted is simulation mode.
	Value []SlotIdx `json:"value,omitzero"`
	// Extra is the key's extra namespace; omitted is unset (insert, match).
	Extra *string `json:"extra,omitzero"`
	// Salt is the key's cache salt; omitted is unset (insert, match).
	Salt *string `json:"salt,omitzero"`
	// Priority is the insert priority (insert).
	Priority int `json:"priority,omitzero"`
	// Node is the node id (lock, unlock), or the load's locked node
	// (plan_evict; 0, the root, excludes nothing).
	Node NodeID `json:"node,omitzero"`
	// NumTokens is the number of units to evict (evict).
	NumTokens int `json:"num_tokens,omitzero"`
	// Need are the pages per lane the load needs (plan_evict).
	Need []int `json:"need,omitzero"`
	// Free are the free device pages per lane (plan_evict).
	Free []int `json:"free,omitzero"`
	// DryRun plans without evicting (plan_evict).
	DryRun bool `json:"dry_run,omitzero"`
	// Exact scores by comparing every page's units instead of the pages'
	// prefix hashes (score).
	Exact bool `json:"exact,omitzero"`
}

// RadixScriptInput is the input of radix.script.
type RadixScriptInput struct {
	// Steps run in order; the first must be a create.
	Steps []RadixStep `json:"steps"`
}

// RadixStepResult is the result of one step: exactly one of the result
// fields, or Error when the tree rejected the step (and did not change),
// plus the tree's sizes after the step.
type RadixStepResult struct {
	// Op echoes the step's op.
	Op string `json:"op"`
	// PrefixLen is an insert's already-present prefix length.
	PrefixLen *int `json:"prefix_len,omitempty"`
	// Match is a match's result.
	Match *MatchResult `json:"match,omitempty"`
	// Delta is a lock's or unlock's size delta.
	Delta *int `json:"delta,omitempty"`
	// Evict is an evict's result.
	Evict *EvictResult `json:"evict,omitempty"`
	// Plan is a plan_evict's result.
	Plan *OwnerPlan `json:"plan,omitempty"`
	// Score is a score's cached prefix length in units.
	Score *int `json:"score,omitempty"`
	// Error is the canonical rejection of a step the tree refused.
	Error *ErrorObject `json:"error,omitempty"`
	// EvictableSize is the tree's evictable size after the step.
	EvictableSize int `json:"evictable_size"`
	// ProtectedSize is the tree's protected size after the step.
	ProtectedSize int `json:"protected_size"`
}

// RadixScriptOutput is the output of radix.script.
type RadixScriptOutput struct {
	// Trace has one result per step.
	Trace []RadixStepResult `json:"trace"`
	// Tree is the final observable state of the last created tree.
	Tree TreeState `json:"tree"`
}

// validateRadixScript rejects a script that cannot run at all: no create
// first (ErrScriptOrder), an unknown op (ErrBadEnum), an invalid create
// config or a token outside [0, 2^32) — each naming steps[i].field.
func validateRadixScript(in RadixScriptInput) error {
	if len(in.Steps) == 0 || in.Steps[0].Op != StepCreate {
		op := ""
		if len(in.Steps) > 0 {
			op = in.Steps[0].Op
		}
		return Reject(ErrScriptOrder, "steps[0].op", op, `"create"`)
	}
	for i, s := range in.Steps {
		at := Idx("steps", i)
		switch s.Op {
		case StepCreate:
			if err := stepConfig(s).Validate(); err != nil {
				return prefixField(err, at+".")
			}
		case StepInsert, StepMatch, StepScore:
			if err := CheckTokens(at+".key", s.Key); err != nil {
				return err
			}
		case StepLock, StepUnlock, StepEvict, StepPlanEvict:
		default:
			return Reject(ErrBadEnum, at+".op", s.Op, "one of create, insert, match, score, lock, unlock, evict, plan_evict")
		}
	}
	return nil
}

func stepConfig(s RadixStep) TreeConfig {
	return TreeConfig{PageSize: s.PageSize, Eagle: s.Eagle, Disable: s.Disable, Policy: s.Policy, CPSize: s.CPSize, CPDraftSize: s.CPDraftSize}
}

// prefixField returns err with its field path prefixed, for errors a tree
// reports about its own arguments ("key" → "steps[3].key").
func prefixField(err error, prefix string) error {
	if ie, ok := AsInputError(err); ok {
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
func RunRadixScript(lim Limits, in RadixScriptInput, newTree NewRadixTreeFunc) (RadixScriptOutput, error) {
	if err := validateRadixScript(in); err != nil {
		return RadixScriptOutput{}, err
	}
	var tree RadixTree
	out := RadixScriptOutput{Trace: make([]RadixStepResult, 0, len(in.Steps))}
	var units int64
	var buf []Unit
	for i, s := range in.Steps {
		if s.Op == StepCreate {
			t, err := newTree(stepConfig(s))
			if err != nil {
				return RadixScriptOutput{}, prefixField(err, Idx("steps", i)+".")
			}
			tree = t
		}
		var r RadixStepResult
		var n int64
		var err error
		r, n, buf, err = runStep(tree, s, buf)
		if err != nil {
			r = RadixStepResult{Error: new(ErrorObjectOf(prefixField(err, Idx("steps", i)+".")))}
		}
		if units += n; units > 0 {
			if err := lim.CheckOutput(Idx("steps", i), units, 8); err != nil {
				return RadixScriptOutput{}, err
			}
		}
		r.Op, r.EvictableSize, r.ProtectedSize = s.Op, tree.EvictableSize(), tree.ProtectedSize()
		out.Trace = append(out.Trace, r)
	}
	out.Tree = tree.State()
	if err := lim.CheckOutput("steps", units+int64(2*tree.TotalSize()), 8); err != nil {
		return RadixScriptOutput{}, err
	}
	return out, nil
}

// runStep runs one non-create step and returns its result and the number of
// slot entries it added to the trace. Every key is decoded into the one
// reused buffer buf, as a scheduler reuses its request buffers: a tree that
// kept a view of a caller's key instead of copying what it stores (§1.11
// B1.b) sees its stored keys change under it.
func runStep(tree RadixTree, s RadixStep, buf []Unit) (RadixStepResult, int64, []Unit, error) {
	var r RadixStepResult
	switch s.Op {
	case StepInsert, StepMatch, StepScore:
		buf = buf[:0]
		for _, t := range s.Key {
			buf = append(buf, Unit(t))
		}
		k := RadixKey{Units: buf, Extra: ExtraKeyOf(s.Extra, s.Salt)}
		if s.Op == StepScore {
			n, err := ScoreKey(tree, k, s.Exact)
			r.Score = &n
			return r, 0, buf, err
		}
		if s.Op == StepMatch {
			m, err := tree.MatchPrefix(k)
			r.Match = &m
			return r, int64(len(m.Indices)), buf, err
		}
		n, err := tree.Insert(k, s.Value, s.Priority)
		r.PrefixLen = &n
		return r, 0, buf, err
	case StepLock, StepUnlock:
		f := tree.IncLockRef
		if s.Op == StepUnlock {
			f = tree.DecLockRef
		}
		d, err := f(s.Node)
		r.Delta = &d
		return r, 0, buf, err
	case StepEvict:
		e, err := tree.Evict(s.NumTokens)
		r.Evict = &e
		return r, int64(e.Evicted), buf, err
	case StepPlanEvict:
		p, err := tree.EvictOwnerLanes(PlanRequestOf(s))
		r.Plan = &p
		return r, int64(p.Evicted), buf, err
	}
	return r, 0, buf, nil
}

// ScoreKey is a router's score of k on tree (docs/spec/radix-acks.md §1.14):
// the exact PrefixLen, or PrefixLenHashed of k's own prefix-hash chain.
func ScoreKey(tree RadixTree, k RadixKey, exact bool) (int, error) {
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
func PlanRequestOf(s RadixStep) OwnerPlanRequest {
	return OwnerPlanRequest{CPSize: s.CPSize, Need: s.Need, Free: s.Free, Locked: s.Node, DryRun: s.DryRun}
}

// RadixScript is the reference twin of radix.script (docs/spec/radix-acks.md §1):
// the script run on reference trees.
func RadixScript(lim Limits, in RadixScriptInput) (RadixScriptOutput, error) {
	return RunRadixScript(lim, in, NewRadixTree)
}
