package equiv_test

import (
	"encoding/json"
	"testing"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/ref"
)

// TestServingLengthPropertiesCatchWrongVerdicts: S1.5's invariants, each
// failing on the verdict of the bug it guards against (S1.7).
func TestServingLengthPropertiesCatchWrongVerdicts(t *testing.T) {
	in := ref.ServingValidateInputLengthInput{PromptTokens: 8186, ContextLen: 8192, MaxTotalTokens: 100000}
	good, _ := ref.ServingValidateInputLength(ref.DefaultLimits(), in)
	accepted, upstream, exceeds, prefilled := good, good, good, good
	accepted.Accepted = true
	upstream.Status, upstream.ErrType, upstream.Message = 400, "BadRequestError", "Input length (8186 tokens) exceeds the maximum allowed length (8186 tokens)."
	exceeds.Message = ref.LengthMessage(8186, 8186)
	prefilled.PrefillTokens = 8186
	checkBroken(t, equiv.ServingValidateInputLength().Props, in, good, map[string]ref.ServingValidateInputLengthOutput{
		"accepted-iff-below-both-bounds":    accepted,
		"rejection-is-413-with-the-message": upstream,
		"scheduler-message-truthful":        exceeds,
		"aborted-never-prefilled":           prefilled,
	})
}

func TestServingErrorBodyPropertiesCatchWrongBodies(t *testing.T) {
	in := ref.ServingErrorBodyInput{Surface: ref.SurfaceOpenAI, Status: 413, Message: "m"}
	good, _ := ref.ServingErrorBody(ref.DefaultLimits(), in)
	spaced, as400 := good, good
	spaced.Body = `{"object": "error", "message": "m", "type": "PayloadTooLargeError", "param": null, "code": 413}`
	as400.Status, as400.Body = 400, `{"object":"error","message":"m","type":"BadRequestError","param":null,"code":400}`
	checkBroken(t, equiv.ServingErrorBody().Props[:2], in, good, map[string]ref.ServingErrorBodyOutput{
		"openai-body-round-trips": spaced,
		"openai-status-kept":      as400,
	})
	sin := ref.ServingErrorBodyInput{Surface: ref.SurfaceOpenAIStream, Status: 413, Message: "é"}
	sgood, _ := ref.ServingErrorBody(ref.DefaultLimits(), sin)
	utf8Chunk := sgood
	utf8Chunk.Body = "data: {\"error\": {\"object\": \"error\", \"message\": \"é\", \"type\": \"PayloadTooLargeError\", \"param\": null, \"code\": 413}}\n\ndata: [DONE]\n\n"
	checkBroken(t, equiv.ServingErrorBody().Props[2:], sin, sgood, map[string]ref.ServingErrorBodyOutput{"stream-chunk-then-done": utf8Chunk})
}

func TestServingStreamPropertiesCatchWrongChunks(t *testing.T) {
	in := ref.ServingStreamErrorChunkInput{FinishReason: json.RawMessage(`{"type":"abort","status_code":413,"err_type":"PayloadTooLargeError","message":"m"}`),
		Chunk: "{}", First: true, Preflight: true}
	good, _ := ref.ServingStreamErrorChunk(ref.DefaultLimits(), in)
	byName, silent, inStream := good, ref.ServingStreamErrorChunkOutput{Status: 200, ContentType: ref.ContentSSE, Body: "data: {}\n\n"}, good
	byName.ErrType = "REQUEST_ENTITY_TOO_LARGE"
	inStream.Status, inStream.ContentType = 200, ref.ContentSSE
	inStream.Body = ref.StreamErrorSSE("m", "PayloadTooLargeError", "413")
	ok := ref.ServingStreamErrorChunkInput{Chunk: "{}", First: true, Preflight: true}
	okGood, _ := ref.ServingStreamErrorChunk(ref.DefaultLimits(), ok)
	extra := okGood
	extra.Body = "data: {}\n\ndata: {}\n\n"
	props := equiv.ServingStreamErrorChunk().Props
	checkBroken(t, []equiv.Prop[ref.ServingStreamErrorChunkInput, ref.ServingStreamErrorChunkOutput]{props[0], props[1], props[3]}, in, good, map[string]ref.ServingStreamErrorChunkOutput{
		"err-type-preferred":               byName,
		"int-like-codes-emit":              silent,
		"preflight-error-is-non-streaming": inStream,
	})
	checkBroken(t, props[2:3], ok, okGood, map[string]ref.ServingStreamErrorChunkOutput{"preflight-keeps-success-bytes": extra})
}

func TestServingChatPropertiesCatchWrongRequests(t *testing.T) {
	d := int64(512)
	in := ref.ServingChatNormalizeInput{Endpoint: "chat", ContextLen: 32768, PromptTokens: new(int64(1000)),
		Request: json.RawMessage(`{"model":"m","messages":[{"role":"tool","content":[{"type":"text","text":"a"}]},{"role":"user","content":[{"type":"image_url","image_url":"u"}]}],"tools":[{"function":{"name":"f"}}],"tool_choice":"ANY"}`),
		Flags:   ref.CompatFlags{ParaChatDefaultMaxTokens: &d, NormalizeToolChoice: true, FlattenToolRoleContent: true}}
	good, _ := ref.ServingChatNormalize(ref.DefaultLimits(), in)
	with := func(req string, soft bool) ref.ServingChatNormalizeOutput {
		return ref.ServingChatNormalizeOutput{Status: 200, Request: json.RawMessage(req), SoftMaxTokens: soft}
	}
	msgs := `"messages":[{"role":"tool","content":"a"},{"role":"user","content":[{"type":"image_url","image_url":{"url":"u","detail":"auto"}}]}]`
	props := equiv.ServingChatNormalize().Props
	checkBroken(t, props[1:], in, good, map[string]ref.ServingChatNormalizeOutput{
		"other-members-untouched-in-order":     with(`{"model":"x",`+msgs+`,"tools":[{"function":{"name":"f"}}],"tool_choice":"required","max_tokens":512}`, true),
		"tool-choice-canonical-and-idempotent": with(`{"model":"m",`+msgs+`,"tools":[{"function":{"name":"f"}}],"tool_choice":"any","max_tokens":512}`, true),
		"soft-max-tokens-rule":                 with(`{"model":"m",`+msgs+`,"tools":[{"function":{"name":"f"}}],"tool_choice":"required","max_tokens":32768}`, true),
		"no-string-image-url-left":             with(`{"model":"m","messages":[{"role":"tool","content":"a"},{"role":"user","content":[{"type":"image_url","image_url":"u"}]}],"tools":[{"function":{"name":"f"}}],"tool_choice":"required","max_tokens":512}`, true),
		"tool-content-flattened":               with(`{"model":"m","messages":[{"role":"tool","content":[{"type":"text","text":"a"}]},{"role":"user","content":[{"type":"image_url","image_url":{"url":"u","detail":"auto"}}]}],"tools":[{"function":{"name":"f"}}],"tool_choice":"required","max_tokens":512}`, true),
	})
	off := ref.ServingChatNormalizeInput{Endpoint: "chat", ContextLen: 32768, Request: json.RawMessage(`{"messages":[]}`)}
	offGood, _ := ref.ServingChatNormalize(ref.DefaultLimits(), off)
	checkBroken(t, props[:1], off, offGood, map[string]ref.ServingChatNormalizeOutput{
		"flags-off-is-upstream": with(`{"messages":[],"max_tokens":32768}`, true), // S2-B1
	})
}

func TestServingUsagePropertiesCatchWrongUsage(t *testing.T) {
	in := ref.ServingUsageInput{Family: ref.FamilyGLM, PromptTokens: 12, Choices: []ref.UsageChoice{{CompletionTokens: 40, ReasoningTokens: 25}},
		CompletionTokensDetails: json.RawMessage(`{"accepted_prediction_tokens":3}`)}
	good, _ := ref.ServingUsage(ref.DefaultLimits(), in)
	added, over, noDetails := good, good, good
	added.TotalTokens = 77 // reasoning added on top
	over.ReasoningTokens = 41
	noDetails.CompletionTokensDetails = json.RawMessage(`{"accepted_prediction_tokens":3}`) // S2-B4
	props := equiv.ServingUsage().Props
	checkBroken(t, props[:3], in, good, map[string]ref.ServingUsageOutput{
		"total-is-prompt-plus-completion": added,
		"reasoning-within-completion":     over,
		"glm-details-merge":               noDetails,
	})
	nin := in
	nin.Family = ref.FamilyNone
	ngood, _ := ref.ServingUsage(ref.DefaultLimits(), nin)
	merged := ngood
	merged.CompletionTokensDetails = json.RawMessage(`{"accepted_prediction_tokens":3,"reasoning_tokens":25}`)
	checkBroken(t, props[3:], nin, ngood, map[string]ref.ServingUsageOutput{"non-glm-details-untouched": merged})
}

func TestServingGLMPropertiesCatchWrongArguments(t *testing.T) {
	spec := equiv.ServingGLMToolArgs()
	in := spec.Regressions[0].In
	good, _ := ref.ServingGLMToolArgs(ref.DefaultLimits(), in)
	notJSON := ref.ServingGLMToolArgsOutput{Calls: []ref.GLMToolCall{{Name: "run", Arguments: `{"code": def}`}}}
	stripped := ref.ServingGLMToolArgsOutput{Calls: []ref.GLMToolCall{{Name: "run", Arguments: `{"code": "def f():\n    return 1"}`}}} // S2-B2
	checkBroken(t, spec.Props, in, good, map[string]ref.ServingGLMToolArgsOutput{
		"arguments-are-json-objects":     notJSON,
		"string-values-keep-their-bytes": stripped,
	})
}
