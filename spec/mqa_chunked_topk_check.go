package spec

// ErrShape: a top-k input whose shapes disagree (§8.5: ks > ke, ke > Kt,
// topk <= 0, an offset list shorter than the rows; also ragged logits,
// bound lists of the wrong length and chunk rows below 1).
var ErrShape = NewSentinel("shape", "top-k input shapes disagree")
