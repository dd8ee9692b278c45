package spec

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
