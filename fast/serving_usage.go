package fast

import (
	"encoding/json"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// ServingUsage is serving.usage (S2.6); the glm merge splices reasoning_tokens
// into the existing details instead of decoding them.
func ServingUsage(lim spec.Limits, in spec.ServingUsageInput) (spec.ServingUsageOutput, error) {
	comp, reas, total, err := ref.CheckUsage(in)
	if err != nil {
		return spec.ServingUsageOutput{}, err
	}
	u := spec.ServingUsageOutput{PromptTokens: in.PromptTokens, TotalTokens: total, CompletionTokens: comp, ReasoningTokens: reas}
	if !ref.IsAbsentOrNull(in.PromptTokensDetails) {
		u.PromptTokensDetails = in.PromptTokensDetails
	}
	if !ref.IsAbsentOrNull(in.CompletionTokensDetails) {
		u.CompletionTokensDetails = in.CompletionTokensDetails
	}
	if in.Family != spec.FamilyGLM {
		return u, nil
	}
	r := strconv.FormatInt(reas, 10)
	if u.CompletionTokensDetails == nil {
		u.CompletionTokensDetails = json.RawMessage(`{"reasoning_tokens":` + r + `}`)
		return u, nil
	}
	s := bytesView(u.CompletionTokensDetails)
	d := chatDoc{b: u.CompletionTokensDetails, s: s, closing: lastBrace(s)}
	var m [1]gjson.Result
	gjson.Parse(s).ForEach(func(k, v gjson.Result) bool {
		d.members = true
		if k.Str == "reasoning_tokens" {
			m[0] = v
		}
		return true
	})
	d.setTop(m[0], "reasoning_tokens", r)
	u.CompletionTokensDetails = d.build()
	return u, nil
}

func lastBrace(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '}' {
			return i
		}
	}
	return 0
}
