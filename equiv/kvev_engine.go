package equiv

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/spec"
)

// The fleet's engine models (docs/spec/kv-events.md §1.4, §2.1-§2.6): what
// each engine really caches, by pool, and the events it publishes about
// it, in its producer version's encoding: vLLM's multi-block runs,
// interior evictions, duplicate copies and tokenless offloads, SGLang's
// one page per store, leaf evictions and signed hashes, groups and LoRA
// namespaces, and the stores §2.3 refuses.

// kvNamespaces are the LoRA namespaces a store may carry (§2.2): none,
// an adapter name, a lora_id.
type kvLora struct {
	name *string
	id   *int64
}

func (l kvLora) ns() string {
	switch {
	case l.name != nil && *l.name != "":
		return *l.name
	case l.id != nil:
		return fmt.Sprintf("#%d", *l.id)
	}
	return ""
}

func (f *kvFleet) lora(p *kvPub) kvLora {
	switch uniform(f.t, 8, "lora") {
	case 0:
		return kvLora{id: new(int64(3))}
	case 1:
		if p.prof == profVLLMFull || p.prof == profVLLMMap {
			return kvLora{name: new("sql-lora")}
		}
	}
	return kvLora{}
}

// chain is a request's block hashes, vLLM-style: each a digest of its
// parent's digest, its tokens, namespace and salt (§1.5: vLLM sends the
// digest's last 8 bytes, SGLang its first 8 as int64).
func (e *kvEng) chain(tokens []uint32, ns string, salt string) (hashes []uint64, digests [][]byte) {
	var parent []byte
	for i := 0; (i+1)*e.ps <= len(tokens); i++ {
		h := sha256.New()
		h.Write(parent)
		h.Write([]byte{e.salt})
		h.Write([]byte(ns + "\x00" + salt + "\x00"))
		for _, tok := range tokens[i*e.ps : (i+1)*e.ps] {
			h.Write(binary.LittleEndian.AppendUint32(nil, tok))
		}
		d := h.Sum(nil)
		v := binary.BigEndian.Uint64(d[24:])
		if e.shape == hashSigned {
			v = binary.BigEndian.Uint64(d[:8])
		}
		hashes, digests, parent = append(hashes, v), append(digests, d), d
	}
	return hashes, digests
}

func (e *kvEng) hashVal(h uint64, digest []byte) *mpVal {
	return hashVal(h, e.shape, digest)
}

// sortedKeys lists e's blocks of tier deterministically.
func (e *kvEng) sortedKeys(tier string) []kvBlockKey {
	var ks []kvBlockKey
	for k := range e.blocks {
		if k.tier == tier {
			ks = append(ks, k)
		}
	}
	slices.SortFunc(ks, func(a, b kvBlockKey) int {
		if a.group != b.group {
			return int(a.group - b.group)
		}
		switch {
		case a.hash < b.hash:
			return -1
		case a.hash > b.hash:
			return 1
		}
		return 0
	})
	return ks
}

// events draws the events of one engine operation of p's engine e.
func (f *kvFleet) events(p *kvPub, e *kvEng) []*mpVal {
	t := f.t
	switch op := uniform(t, 100, "engine_op"); {
	case op < 50:
		return f.store(p, e)
	case op < 75:
		if evs := f.remove(p, e, "GPU"); evs != nil {
			return evs
		}
		return f.store(p, e)
	case op < 83:
		if !profMedium(p.prof) || profSGLang(p.prof) {
			return f.store(p, e)
		}
		if rapid.Bool().Draw(t, "tier_remove") {
			if evs := f.remove(p, e, rapid.SampledFrom(kvOtherTiers).Draw(t, "remove_tier")); evs != nil {
				return evs
			}
		}
		return f.cpuStore(p, e)
	case op < 88:
		e.blocks = map[kvBlockKey]*kvBlock{}
		return []*mpVal{f.render(p, evBody{tag: spec.EventCleared}, nil)}
	case op < 91:
		return []*mpVal{f.render(p, evBody{tag: "BlockEvicted", trailing: []*mpVal{mpA(mpU(1))}}, nil)}
	}
	return f.refused(p, e)
}

// storeBody is a BlockStored's fields (§1.4) in p's layout.
func (f *kvFleet) storeBody(p *kvPub, e *kvEng, hashes []*mpVal, parent *mpVal, tokens []uint32, bs int, lora kvLora, medium string, group int64) evBody {
	toks := make([]*mpVal, len(tokens))
	for i, tok := range tokens {
		toks[i] = mpU(uint64(tok))
	}
	vals := make([]*mpVal, 12)
	vals[1], vals[2], vals[3], vals[4] = mpA(hashes...), parent, mpA(toks...), mpU(uint64(bs))
	vals[5] = optOrNil(lora.id, mpI)
	if profMedium(p.prof) {
		vals[6] = f.mediumVal(medium)
	}
	if !profSGLang(p.prof) && p.prof != profVLLMOld && p.prof != profVLLMMedium {
		vals[7] = optOrNil(lora.name, mpS)
		vals[9] = mpI(group)
		if group == 0 && oneIn(f.t, 3, "group_nil") {
			vals[9] = nil
		}
		if oneIn(f.t, 4, "spec_kind") {
			vals[10] = mpS("full_attention")
		}
		if oneIn(f.t, 4, "extra_keys") {
			ek := make([]*mpVal, len(hashes))
			for i := range ek {
				ek[i] = mpNil()
			}
			vals[8] = mpA(ek...)
		}
	}
	return evBody{tag: spec.EventStored, vals: vals, required: 7}
}

func (f *kvFleet) mediumVal(tier string) *mpVal {
	if tier == "GPU" {
		switch uniform(f.t, 6, "gpu_spelling") {
		case 0:
			return nil
		case 1:
			return mpS("gpu")
		}
	}
	if tier == "CPU" && oneIn(f.t, 3, "cpu_lower") {
		return mpS("cpu")
	}
	return mpS(tier)
}

// render writes one event in p's form (sometimes the other one: a mixed
// fleet, §1.4), with the array length of p's producer version.
func (f *kvFleet) render(p *kvPub, b evBody, names []string) *mpVal {
	t := f.t
	mapForm := p.prof == profVLLMMap || p.prof == profSGLMap
	if oneIn(t, 20, "other_form") {
		mapForm = !mapForm
	}
	if mapForm {
		if b.tag == spec.EventRemoved {
			b.required = 2
		}
		if p.prof == profSGLMap && b.tag == spec.EventStored {
			b.extraKV = append(b.extraKV, mpS("cache_salt"), mpNil(), mpS("session_id"), mpS("s-1"))
		}
		return b.mapForm(names)
	}
	n := 1
	switch b.tag {
	case spec.EventStored:
		switch p.prof {
		case profVLLMOld, profSGLOld:
			n = 6
		case profVLLMMedium, profSGLArray:
			n = 7
			if p.prof == profSGLArray && oneIn(t, 3, "salted") {
				b.vals[7] = mpM(mpS("cache_salt"), mpS("salt-1"))
				n = 8
			}
		default:
			n = 8
			for i := 8; i < 12; i++ {
				if b.vals[i] != nil {
					n = i + 1
				}
			}
			n = max(n, rapid.IntRange(8, 12).Draw(t, "stored_len"))
		}
	case spec.EventRemoved:
		switch p.prof {
		case profVLLMOld, profSGLOld:
			n = 2
		default:
			n = 3
			if b.vals[3] != nil {
				n = 4
			}
		}
	case spec.EventCleared:
	default:
		n = 1
	}
	if len(b.vals) < n {
		b.vals = append(b.vals, make([]*mpVal, n-len(b.vals))...)
	}
	return b.arrayForm(n)
}

// store is a request's newly full blocks: one event for vLLM (parent: the
// block before the run), one per page for SGLang; sometimes vLLM stores
// blocks it already holds again (a second physical copy, §2.5), or a
// cache_salt request gives the same tokens other hashes (A4).
func (f *kvFleet) store(p *kvPub, e *kvEng) []*mpVal {
	t := f.t
	tokens := f.prompt()
	lora := f.lora(p)
	var group int64
	if profGroups(p.prof) && oneIn(t, 4, "group1") {
		group = 1
	}
	salt := ""
	if oneIn(t, 8, "cache_salt") {
		salt = "s1"
	}
	ns := lora.ns()
	hashes, digests := e.chain(tokens, ns, salt)
	if len(hashes) == 0 {
		return nil
	}
	// Mostly the GPU; sometimes another tier directly, with its tokens
	// sometimes not the GPU's (tiers that disagree on a hash's page make
	// the tokenless lookup order of §2.3 step 6 observable).
	tier := "GPU"
	if profMedium(p.prof) && !profSGLang(p.prof) && oneIn(t, 8, "tier_store") {
		tier = rapid.SampledFrom(kvOtherTiers[:2]).Draw(t, "store_tier")
		if oneIn(t, 3, "tier_tokens_differ") {
			tokens = slices.Clone(tokens)
			tokens[len(tokens)-1] += 10
		}
	}
	k0 := 0
	for k0 < len(hashes) && e.blocks[kvBlockKey{group, tier, hashes[k0]}] != nil {
		k0++
	}
	sgl := profSGLang(p.prof)
	if !sgl && (k0 == len(hashes) || oneIn(t, 6, "duplicate")) {
		k0 = rapid.IntRange(0, max(0, min(k0, len(hashes)-1))).Draw(t, "dup_from")
	}
	if k0 == len(hashes) {
		return nil
	}
	m := rapid.IntRange(k0+1, len(hashes)).Draw(t, "store_to")
	if k0 > 0 && oneIn(t, 8, "namespace_switch") {
		// The run continues a prefix of another namespace: its pages are in
		// the run's namespace under a parent page of the prefix's (A4's
		// prefix hashes chain "whatever their namespace").
		lora = kvLora{id: new(int64(7))}
		if ns == "#7" {
			lora = kvLora{}
		}
		ns = lora.ns()
		h2, d2 := e.chain(tokens, ns, salt)
		hashes, digests = slices.Clone(hashes), slices.Clone(digests)
		copy(hashes[k0:], h2[k0:])
		copy(digests[k0:], d2[k0:])
	}
	var evs []*mpVal
	emit := func(from, to int) {
		hv := make([]*mpVal, 0, to-from)
		for i := from; i < to; i++ {
			hv = append(hv, e.hashVal(hashes[i], digests[i]))
			k := kvBlockKey{group, tier, hashes[i]}
			b := e.blocks[k]
			if b == nil {
				b = &kvBlock{tokens: tokens[i*e.ps : (i+1)*e.ps], ns: ns}
				if i > 0 {
					b.parent, b.hasParent = hashes[i-1], true
				}
				e.blocks[k] = b
			}
			b.count++
		}
		var parent *mpVal
		if from > 0 {
			parent = e.hashVal(hashes[from-1], digests[from-1])
		}
		body := f.storeBody(p, e, hv, parent, tokens[from*e.ps:to*e.ps], e.ps, lora, tier, group)
		evs = append(evs, f.render(p, body, storedNames))
	}
	if sgl {
		for i := k0; i < m; i++ {
			emit(i, i+1)
		}
	} else {
		emit(k0, m)
	}
	return evs
}

// remove evicts blocks of tier: any blocks for vLLM (interior ones
// included, §2.4), a leaf for SGLang.
func (f *kvFleet) remove(p *kvPub, e *kvEng, tier string) []*mpVal {
	t := f.t
	keys := e.sortedKeys(tier)
	if profSGLang(p.prof) {
		var leaves []kvBlockKey
		for _, k := range keys {
			leaf := true
			for _, o := range keys {
				if b := e.blocks[o]; b.hasParent && b.parent == k.hash && o.group == k.group {
					leaf = false
					break
				}
			}
			if leaf {
				leaves = append(leaves, k)
			}
		}
		keys = leaves
	}
	if len(keys) == 0 {
		return nil
	}
	n := 1
	if !profSGLang(p.prof) {
		n = rapid.IntRange(1, min(3, len(keys))).Draw(t, "remove_n")
	}
	var hv []*mpVal
	group := int64(-1)
	for range n {
		k := rapid.SampledFrom(keys).Draw(t, "victim")
		if group >= 0 && k.group != group {
			continue // one event names one pool
		}
		group = k.group
		hv = append(hv, e.hashVal(k.hash, nil))
		if b := e.blocks[k]; b != nil {
			if b.count--; b.count <= 0 {
				delete(e.blocks, k)
			}
		}
	}
	if oneIn(t, 12, "unknown_removal") {
		hv = append(hv, e.hashVal(rapid.Uint64().Draw(t, "unknown_hash"), nil))
	}
	vals := []*mpVal{nil, mpA(hv...), nil, nil}
	if profMedium(p.prof) {
		vals[2] = f.mediumVal(tier)
	}
	if profGroups(p.prof) && (group != 0 || rapid.Bool().Draw(t, "removed_group0")) {
		vals[3] = mpI(group)
	}
	return []*mpVal{f.render(p, evBody{tag: spec.EventRemoved, vals: vals, required: 2}, removedNames)}
}

// cpuStore is vLLM's offload: a tokenless store of GPU blocks into the
// CPU tier (§2.3 step 6) — a request's blocks from its first one, or one
// block whose ancestors the CPU pool then holds as holes — sometimes of a
// hash no tier has (an orphan that is not stale).
func (f *kvFleet) cpuStore(p *kvPub, e *kvEng) []*mpVal {
	t := f.t
	dest := rapid.SampledFrom(kvOtherTiers).Draw(t, "offload_tier")
	var keys []kvBlockKey
	for _, tier := range append([]string{"GPU"}, kvOtherTiers...) {
		if tier != dest {
			keys = append(keys, e.sortedKeys(tier)...)
		}
	}
	var hv []*mpVal
	var group int64
	if len(keys) > 0 {
		k := rapid.SampledFrom(keys).Draw(t, "offload")
		group = k.group
		path := []kvBlockKey{k}
		for b := e.blocks[k]; b != nil && b.hasParent && rapid.IntRange(0, 7).Draw(t, "offload_parent") > 0; {
			pk := kvBlockKey{k.group, k.tier, b.parent}
			if b = e.blocks[pk]; b != nil {
				path = append(path, pk)
			}
		}
		slices.Reverse(path)
		var toks []uint32
		for _, k := range path {
			toks = append(toks, e.blocks[k].tokens...)
		}
		f.offloaded, f.offTier = append(f.offloaded, toks), append(f.offTier, dest)
		for _, k := range path {
			hv = append(hv, e.hashVal(k.hash, nil))
			ck := kvBlockKey{k.group, dest, k.hash}
			if e.blocks[ck] == nil {
				b := *e.blocks[k]
				b.count = 0
				e.blocks[ck] = &b
			}
			e.blocks[ck].count++
		}
	}
	if len(hv) == 0 || oneIn(t, 10, "cpu_orphan_too") {
		hv = append(hv, e.hashVal(rapid.Uint64().Draw(t, "cpu_orphan"), nil))
	}
	body := f.storeBody(p, e, hv, nil, nil, e.ps, kvLora{}, dest, group)
	return []*mpVal{f.render(p, body, storedNames)}
}

// kvOtherTiers are the tiers besides the GPU (the first two also take
// full stores); scores ask for them upper- or lower-cased.
var kvOtherTiers = []string{"CPU", "DISK", "CPU", "NVME"}

// refused is an event §2.3 refuses whole: a token count that is not n·bs,
// a block size other than the pool's, or a hash bound to another page.
func (f *kvFleet) refused(p *kvPub, e *kvEng) []*mpVal {
	t := f.t
	tokens := f.prompt()
	hashes, digests := e.chain(tokens, "", "")
	if len(hashes) == 0 {
		return nil
	}
	hv := []*mpVal{e.hashVal(hashes[0], digests[0])}
	bs := e.ps
	toks := tokens[:e.ps]
	switch rapid.IntRange(0, 2).Draw(t, "refusal") {
	case 0: // one token more than one block holds
		toks = append(slices.Clone(tokens[:e.ps]), 9)
	case 1:
		bs = e.ps * 2
		toks = append(slices.Clone(tokens[:e.ps]), tokens[:e.ps]...)
	default:
		if keys := e.sortedKeys("GPU"); len(keys) > 0 {
			k := rapid.SampledFrom(keys).Draw(t, "conflict_with")
			hv = []*mpVal{e.hashVal(k.hash, nil)}
			toks = []uint32{}
			for range e.ps {
				toks = append(toks, 99)
			}
		}
	}
	body := f.storeBody(p, e, hv, nil, toks, bs, kvLora{}, "GPU", 0)
	return []*mpVal{f.render(p, body, storedNames)}
}

// kvGarbageEvent is an event the decoder refuses (§1.4).
func kvGarbageEvent(t *rapid.T) *mpVal {
	return rapid.SampledFrom([]*mpVal{
		mpA(mpS(spec.EventRemoved), mpA()),
		mpA(mpS(spec.EventStored), mpA(mpU(1)), mpNil(), mpA(mpI(-1)), mpU(1)),
		mpU(7),
		mpM(mpS("block_hashes"), mpA(mpU(1))),
	}).Draw(t, "garbage_event")
}
