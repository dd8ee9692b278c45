package catalog

import (
	"fmt"
	"strings"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// ConfigIndexTopKOverrides registers config.index_topk_overrides (docs/spec/admission-serving.md §S4).
func ConfigIndexTopKOverrides() *Op[spec.ConfigIndexTopKOverridesInput, spec.ConfigIndexTopKOverridesOutput] {
	four := int64(4)
	return &Op[spec.ConfigIndexTopKOverridesInput, spec.ConfigIndexTopKOverridesOutput]{
		OpName:  "config.index_topk_overrides",
		SpecRef: "admission-serving.md §S4",
		Summary: "merge --nsa-index-topk-freq/-pattern/--nsa-index-skip-topk-offset into --json-model-override-args: in-place replace, append, offset 0 unset, conflicts warned",
		Ref:     ref.ConfigIndexTopKOverrides,
		Fast:    fast.ConfigIndexTopKOverrides,
		// §S4.4's second example: the rope_theta lexeme survives, both flags append.
		Sample: spec.ConfigIndexTopKOverridesInput{JSON: `{"rope_theta":8e6}`, Freq: &four, Offset: 3},
		Shapes: []Shape[spec.ConfigIndexTopKOverridesInput]{
			{Name: "launch-flags-small-override", Make: func() spec.ConfigIndexTopKOverridesInput {
				return spec.ConfigIndexTopKOverridesInput{JSON: `{"rope_theta": 8e6, "index_topk_freq": 2}`, Freq: &four, Offset: 3}
			}},
			{Name: "glm5-pattern-256-key-override", Make: glm5PatternOverride},
		},
	}
}

// glm5PatternOverride is a large launch-script override (256 keys with
// nested values and whitespace) merged with the 78-layer GLM-5 pattern and
// a freq flag that the pattern shadows.
func glm5PatternOverride() spec.ConfigIndexTopKOverridesInput {
	var b strings.Builder
	b.WriteString("{\n")
	for i := range 256 {
		fmt.Fprintf(&b, "  \"key_%03d\": {\"values\": [%d, %d.5, \"s%d\"], \"on\": true},\n", i, i, i, i)
	}
	b.WriteString("  \"index_topk_freq\": 2\n}")
	freq := int64(4)
	pattern := "FFF" + strings.Repeat("SSSF", 18) + "SSS"
	return spec.ConfigIndexTopKOverridesInput{JSON: b.String(), Freq: &freq, Pattern: &pattern}
}
