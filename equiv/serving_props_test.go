package equiv_test

import (
	"encoding/json"
	"testing"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestServingLengthPropertiesCatchWrongVerdicts: S1.5's invariants, each
// failing on the verdict of the bug it guards against (S1.7).
func TestServingLengthPropertiesCatchWrongVerdicts(t *testing.T) {
	in := spec.ServingValidateInputLengthInput{PromptTokens: 8186, ContextLen: 8192, MaxTotalTokens: 100000}
	good, _ := ref.ServingValidateInputLength(spec.DefaultLimits(), in)
	accepted, upstream, exceeds, prefilled := good, good, good, good
	accepted.Accepted = true
	upstream.Status, upstream.ErrType, upstream.Message = 400, "BadRequestError", "Input length (8186 tokens) exceeds the maximum allowed length (8186 tokens)."
	exceeds.Message = ref.LengthMessage(8186, 8186)
	prefilled.PrefillTokens = 8186
	checkBroken(t, equiv.ServingValidateInputLength().Props, in, good, map[string]spec.ServingValidateInputLengthOutput{
		"accepted-iff-below-both-bounds":    accepted,
		"rejection-is-413-with-the-message": upstream,
		"scheduler-message-truthful":        exceeds,
		"aborted-never-prefilled":           prefilled,
	})
}

func TestServingErrorBodyPropertiesCatchWrongBodies(t *testing.T) {
	in := spec.ServingErrorBodyInput{Surface: spec.SurfaceOpenAI, Status: 413, Message: "m"}
	good, _ := ref.ServingErrorBody(spec.DefaultLimits(), in)
	spaced, as400 := good, good
	spaced.Body = `{"object": "error", "message": "m", "type": "PayloadTooLargeError", "param": null, "code": 413}`
	as400.Status, as400.Body = 400, `{"object":"error","message":"m","type":"BadRequestError","param":null,"code":400}`
	checkBroken(t, equiv.ServingErrorBody().Props[:2], in, good, map[string]spec.ServingErrorBodyOutput{
		"openai-body-round-trips": spaced,
		"openai-status-kept":      as400,
	})
	sin := spec.ServingErrorBodyInput{Surface: spec.SurfaceOpenAIStream, Status: 413, Message: "é"}
	sgood, _ := ref.ServingErrorBody(spec.DefaultLimits(), sin)
	utf8Chunk := sgood
	utf8Chunk.Body = "data: {\"error\": {\"object\": \"error\", \"message\": \"é\", \"type\": \"PayloadTooLargeError\", \"param\": null, \"code\": 413}}\n\ndata: [DONE]\n\n"
	checkBroken(t, equiv.ServingErrorBody().Props[2:], sin, sgood, map[string]spec.ServingErrorBodyOutput{"stream-chunk-then-done": utf8Chunk})
}

func TestServingStreamPropertiesCatchWrongChunks(t *testing.T) {
	in := spec.ServingStreamErrorChunkInput{FinishReason: json.RawMessage(`{"type":"abort","status_code":413,"err_type":"PayloadTooLargeError","message":"m"}`),
		Chunk: "{}", First: true, Preflight: true}
	good, _ := ref.ServingStreamErrorChunk(spec.DefaultLimits(), in)
	byName, silent, inStream := good, spec.ServingStreamErrorChunkOutput{Status: 200, ContentType: spec.ContentSSE, Body: "data: {}\n\n"}, good
	byName.ErrType = "REQUEST_ENTITY_TOO_LARGE"
	inStream.Status, inStream.ContentType = 200, spec.ContentSSE
	inStream.Body = ref.StreamErrorSSE("m", "PayloadTooLargeError", "413")
	ok := spec.ServingStreamErrorChunkInput{Chunk: "{}", First: true, Preflight: true}
	okGood, _ := ref.ServingStreamErrorChunk(spec.DefaultLimits(), ok)
	extra := okGood
	extra.Body = "data: {}\n\ndata: {}\n\n"
	props := equiv.ServingStreamErrorChunk().Props
	checkBroken(t, []equiv.Prop[spec.ServingStreamErrorChunkInput, spec.ServingStreamErrorChunkOutput]{props[0], props[1], props[3]}, in, good, map[string]spec.ServingStreamErrorChunkOutput{
		"err-type-preferred":               byName,
		"int-like-codes-emit":              silent,
		"preflight-error-is-non-streaming": inStream,
	})
	checkBroken(t, props[2:3], ok, okGood, map[string]spec.ServingStreamErrorChunkOutput{"preflight-keeps-success-bytes": extra})
}

func TestServingChatPropertiesCatchWrongRequests(t *testing.T) {
	d := int64(512)
	in := spec.ServingChatNormalizeInput{Endpoint: "chat", ContextLen: 32768, PromptTokens: new(int64(1000)),
		Request: json.RawMessage(`{"model":"m","messages":[{"role":"tool","content":[{"type":"text","text":"a"}]},{"role":"user","content":[{"type":"image_url","image_url":"u"}]}],"tools":[{"function":{"name":"f"}}],"tool_choice":"ANY"}`),
		Flags:   spec.CompatFlags{ParaChatDefaultMaxTokens: &d, NormalizeToolChoice: true, FlattenToolRoleContent: true}}
	good, _ := ref.ServingChatNormalize(spec.DefaultLimits(), in)
	with := func(req string, soft bool) spec.ServingChatNormalizeOutput {
		return spec.ServingChatNormalizeOutput{Status: 200, Request: json.RawMessage(req), SoftMaxTokens: soft}
	}
	msgs := `"messages":[{"role":"tool","content":"a"},{"role":"user","content":[{"type":"image_url","image_url":{"url":"u","detail":"auto"}}]}]`
	props := equiv.ServingChatNormalize().Props
	checkBroken(t, props[1:], in, good, map[string]spec.ServingChatNormalizeOutput{
		"other-members-untouched-in-order":     with(`{"model":"x",`+msgs+`,"tools":[{"function":{"name":"f"}}],"tool_choice":"required","max_tokens":512}`, true),
		"tool-choice-canonical-and-idempotent": with(`{"model":"m",`+msgs+`,"tools":[{"function":{"name":"f"}}],"tool_choice":"any","max_tokens":512}`, true),
		"soft-max-tokens-rule":                 with(`{"model":"m",`+msgs+`,"tools":[{"function":{"name":"f"}}],"tool_choice":"required","max_tokens":32768}`, true),
		"no-string-image-url-left":             with(`{"model":"m","messages":[{"role":"tool","content":"a"},{"role":"user","content":[{"type":"image_url","image_url":"u"}]}],"tools":[{"function":{"name":"f"}}],"tool_choice":"required","max_tokens":512}`, true),
		"tool-content-flattened":               with(`{"model":"m","messages":[{"role":"tool","content":[{"type":"text","text":"a"}]},{"role":"user","content":[{"type":"image_url","image_url":{"url":"u","detail":"auto"}}]}],"tools":[{"function":{"name":"f"}}],"tool_choice":"required","max_tokens":512}`, true),
	})
	off := spec.ServingChatNormalizeInput{Endpoint: "chat", ContextLen: 32768, Request: json.RawMessage(`{"messages":[]}`)}
	offGood, _ := ref.ServingChatNormalize(spec.DefaultLimits(), off)
	checkBroken(t, props[:1], off, offGood, map[string]spec.ServingChatNormalizeOutput{
		"flags-off-is-upstream": with(`{"messages":[],"max_tokens":32768}`, true), // S2-B1
	})
}

func TestServingUsagePropertiesCatchWrongUsage(t *testing.T) {
	in := spec.ServingUsageInput{Family: spec.FamilyGLM, PromptTokens: 12, Choices: []spec.UsageChoice{{CompletionTokens: 40, ReasoningTokens: 25}},
		CompletionTokensDetails: json.RawMessage(`{"accepted_prediction_tokens":3}`)}
	good, _ := ref.ServingUsage(spec.DefaultLimits(), in)
	added, over, noDetails := good, good, good
	added.TotalTokens = 77 // reasoning added on top
	over.ReasoningTokens = 41
	noDetails.CompletionTokensDetails = json.RawMessage(`{"accepted_prediction_tokens":3}`) // S2-B4
	props := equiv.ServingUsage().Props
	checkBroken(t, props[:3], in, good, map[string]spec.ServingUsageOutput{
		"total-is-prompt-plus-completion": added,
		"reasoning-within-completion":     over,
		"glm-details-merge":               noDetails,
	})
	nin := in
	nin.Family = spec.FamilyNone
	ngood, _ := ref.ServingUsage(spec.DefaultLimits(), nin)
	merged := ngood
	merged.CompletionTokensDetails = json.RawMessage(`{"accepted_prediction_tokens":3,"reasoning_tokens":25}`)
	checkBroken(t, props[3:], nin, ngood, map[string]spec.ServingUsageOutput{"non-glm-details-untouched": merged})
}

func TestServingGLMPropertiesCatchWrongArguments(t *testing.T) {
	sp := equiv.ServingGLMToolArgs()
	in := sp.Regressions[0].In
	good, _ := ref.ServingGLMToolArgs(spec.DefaultLimits(), in)
	notJSON := spec.ServingGLMToolArgsOutput{Calls: []spec.GLMToolCall{{Name: "run", Arguments: `{"code": def}`}}}
	stripped := spec.ServingGLMToolArgsOutput{Calls: []spec.GLMToolCall{{Name: "run", Arguments: `{"code": "def f():\n    return 1"}`}}} // S2-B2
	checkBroken(t, sp.Props, in, good, map[string]spec.ServingGLMToolArgsOutput{
		"arguments-are-json-objects":     notJSON,
		"string-values-keep-their-bytes": stripped,
	})
}
