package equiv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// ---- serving.validate_input_length (docs/spec/admission-serving.md S1) ----

// ServingValidateInputLength is the differential spec of serving.validate_input_length (S1.2, S1.5).
func ServingValidateInputLength() *Spec[spec.ServingValidateInputLengthInput, spec.ServingValidateInputLengthOutput] {
	return &Spec[spec.ServingValidateInputLengthInput, spec.ServingValidateInputLengthOutput]{
		Op:          catalog.ServingValidateInputLength(),
		Valid:       rapid.Custom(lengthValid),
		Invalid:     rapid.Custom(lengthInvalid),
		Boundary:    lengthBoundary(),
		Regressions: lengthRegressions(),
		Props: []Prop[spec.ServingValidateInputLengthInput, spec.ServingValidateInputLengthOutput]{
			{"accepted-iff-below-both-bounds", lengthAcceptedIff},
			{"rejection-is-413-with-the-message", lengthMessageShape},
			{"scheduler-message-truthful", lengthTruthful},
			{"aborted-never-prefilled", lengthNeverPrefilled},
		},
	}
}

func lengthValid(t *rapid.T) spec.ServingValidateInputLengthInput {
	c := rapid.OneOf(rapid.Int64Range(7, 64), rapid.Int64Range(7, 1<<20), rapid.Int64Range(math.MaxInt64-64, math.MaxInt64)).Draw(t, "context_len")
	tt := rapid.OneOf(rapid.Int64Range(7, 64), rapid.Int64Range(7, 1<<20), rapid.Just(c), rapid.Int64Range(math.MaxInt64-64, math.MaxInt64)).Draw(t, "max_total_tokens")
	maxIn := min(c, tt) - 6
	n := rapid.OneOf(rapid.Int64Range(maxIn-2, maxIn+2), rapid.Int64Range(max(0, c-2), min(c, math.MaxInt64-1)+1), rapid.Int64Range(0, 1<<21)).Draw(t, "prompt_tokens")
	return spec.ServingValidateInputLengthInput{PromptTokens: max(n, 0), ContextLen: c, MaxTotalTokens: tt,
		AllowAutoTruncate: rapid.IntRange(0, 4).Draw(t, "truncate") == 0}
}

func lengthInvalid(t *rapid.T) Bad[spec.ServingValidateInputLengthInput] {
	in := lengthValid(t)
	switch rapid.IntRange(0, 3).Draw(t, "violation") {
	case 0:
		in.ContextLen = rapid.Int64Range(math.MinInt64, 0).Draw(t, "bad_context_len")
	case 1:
		in.MaxTotalTokens = rapid.Int64Range(math.MinInt64, 0).Draw(t, "bad_max_total")
	case 2:
		in.ContextLen = rapid.Int64Range(1, 6).Draw(t, "tiny_context_len")
	default:
		in.PromptTokens = rapid.Int64Range(math.MinInt64, -1).Draw(t, "negative_n")
		return Bad[spec.ServingValidateInputLengthInput]{in, spec.ErrNegative}
	}
	return Bad[spec.ServingValidateInputLengthInput]{in, spec.ErrPoolTooSmall}
}

// lengthBoundary: S1.4's table, the N == C quirk, the smallest pool.
func lengthBoundary() []Case[spec.ServingValidateInputLengthInput] {
	var cs []Case[spec.ServingValidateInputLengthInput]
	for _, n := range []int64{9000, 8192, 8191, 8190, 8187, 8186, 8185, 0} {
		cs = append(cs, Case[spec.ServingValidateInputLengthInput]{fmt.Sprintf("s1.4-n%d", n), spec.ServingValidateInputLengthInput{PromptTokens: n, ContextLen: 8192, MaxTotalTokens: 100000}})
	}
	cs = append(cs,
		Case[spec.ServingValidateInputLengthInput]{"pool-bound-t", spec.ServingValidateInputLengthInput{PromptTokens: 94, ContextLen: 8192, MaxTotalTokens: 100}},
		Case[spec.ServingValidateInputLengthInput]{"smallest-pool", spec.ServingValidateInputLengthInput{PromptTokens: 0, ContextLen: 7, MaxTotalTokens: 7}},
		Case[spec.ServingValidateInputLengthInput]{"auto-truncate-9000", spec.ServingValidateInputLengthInput{PromptTokens: 9000, ContextLen: 8192, MaxTotalTokens: 100000, AllowAutoTruncate: true}},
		Case[spec.ServingValidateInputLengthInput]{"max-int", spec.ServingValidateInputLengthInput{PromptTokens: math.MaxInt64, ContextLen: math.MaxInt64, MaxTotalTokens: math.MaxInt64}},
	)
	return cs
}

// lengthRegressions are S1.7's minimal inputs, one per bug.
func lengthRegressions() []Case[spec.ServingValidateInputLengthInput] {
	return []Case[spec.ServingValidateInputLengthInput]{
		{"s1-b1-scheduler-400-upstream-wording", spec.ServingValidateInputLengthInput{PromptTokens: 8190, ContextLen: 8192, MaxTotalTokens: 100000}},
		{"s1-b2-exceeds-itself", spec.ServingValidateInputLengthInput{PromptTokens: 8186, ContextLen: 8192, MaxTotalTokens: 100000}},
		{"s1-b3-batch-no-abort", spec.ServingValidateInputLengthInput{PromptTokens: 8188, ContextLen: 8192, MaxTotalTokens: 100000}},
	}
}

func lengthAcceptedIff(_ spec.Limits, in spec.ServingValidateInputLengthInput, out spec.ServingValidateInputLengthOutput) error {
	want := in.AllowAutoTruncate || in.PromptTokens < min(in.ContextLen, out.MaxReqInputLen)
	if out.Accepted != want {
		return fmt.Errorf("accepted = %v, want %v (N=%d, C=%d, max_req_input_len=%d)", out.Accepted, want, in.PromptTokens, in.ContextLen, out.MaxReqInputLen)
	}
	return nil
}

// LengthMessageRE is S1.5 invariant 1's message pattern.
var LengthMessageRE = regexp.MustCompile(`^The input \((\d+) tokens\) is longer than the model's context length \((\d+) tokens\)\.$`)

func lengthNumbers(msg string) (int64, int64, bool) {
	m := LengthMessageRE.FindStringSubmatch(msg)
	if m == nil {
		return 0, 0, false
	}
	a, _ := strconv.ParseInt(m[1], 10, 64)
	b, _ := strconv.ParseInt(m[2], 10, 64)
	return a, b, true
}

func lengthMessageShape(_ spec.Limits, in spec.ServingValidateInputLengthInput, out spec.ServingValidateInputLengthOutput) error {
	if out.Accepted {
		return nil
	}
	if out.Status != 413 || out.ErrType != spec.PayloadTooLarge {
		return fmt.Errorf("rejection is %d %s, want 413 PayloadTooLargeError", out.Status, out.ErrType)
	}
	n, _, ok := lengthNumbers(out.Message)
	if !ok || n != in.PromptTokens {
		return fmt.Errorf("message %q does not match S1.5's pattern with N=%d first", out.Message, in.PromptTokens)
	}
	return nil
}

func lengthTruthful(_ spec.Limits, in spec.ServingValidateInputLengthInput, out spec.ServingValidateInputLengthOutput) error {
	if out.Stage != spec.StageScheduler {
		return nil
	}
	if _, limit, ok := lengthNumbers(out.Message); !ok || limit >= in.PromptTokens {
		return fmt.Errorf("scheduler message %q: the reported limit must be < N=%d", out.Message, in.PromptTokens)
	}
	return nil
}

func lengthNeverPrefilled(_ spec.Limits, in spec.ServingValidateInputLengthInput, out spec.ServingValidateInputLengthOutput) error {
	if !out.Accepted && out.PrefillTokens > 1 {
		return fmt.Errorf("rejected request prefills %d tokens; an abort keeps one placeholder", out.PrefillTokens)
	}
	if out.Accepted && out.PrefillTokens > in.PromptTokens {
		return fmt.Errorf("prefill %d > N=%d", out.PrefillTokens, in.PromptTokens)
	}
	return nil
}

// ---- serving.error_body (S1.3) ----

// ServingErrorBody is the differential spec of serving.error_body (S1.3, S1.5 invariant 3).
func ServingErrorBody() *Spec[spec.ServingErrorBodyInput, spec.ServingErrorBodyOutput] {
	return &Spec[spec.ServingErrorBodyInput, spec.ServingErrorBodyOutput]{
		Op:      catalog.ServingErrorBody(),
		Valid:   rapid.Custom(errorBodyValid),
		Invalid: rapid.Custom(errorBodyInvalid),
		Boundary: []Case[spec.ServingErrorBodyInput]{
			{"status-400", spec.ServingErrorBodyInput{Surface: spec.SurfaceOpenAI, Status: 400, Message: "x"}},
			{"status-599-stream", spec.ServingErrorBodyInput{Surface: spec.SurfaceOpenAIStream, Status: 599, Message: "\x00\x1f\x7f\u2028😀"}},
			{"generate-503", spec.ServingErrorBodyInput{Surface: spec.SurfaceGenerate, Status: 503, Message: "busy"}},
		},
		Regressions: []Case[spec.ServingErrorBodyInput]{
			{"s1-b4-generic-valueerror-first", spec.ServingErrorBodyInput{Surface: spec.SurfaceOpenAI, Status: 413,
				Message: "The input (9000 tokens) is longer than the model's context length (8192 tokens)."}},
		},
		Props: []Prop[spec.ServingErrorBodyInput, spec.ServingErrorBodyOutput]{
			{"openai-body-round-trips", errorBodyRoundTrips},
			{"openai-status-kept", errorBodyStatusKept},
			{"stream-chunk-then-done", errorBodyStreamShape},
		},
	}
}

// servingText draws messages that exercise every escape class of both encoders.
func servingText(t *rapid.T, label string) string {
	return rapid.OneOf(
		rapid.StringMatching(`[a-z ().']{0,40}`),
		rapid.StringOf(rapid.SampledFrom([]rune("aZ \"\\/\n\r\t\b\f\x00\x1f\x7f<>&éü—\u2028😀"))),
	).Draw(t, label)
}

func errorBodyValid(t *rapid.T) spec.ServingErrorBodyInput {
	return spec.ServingErrorBodyInput{
		Surface: rapid.SampledFrom([]string{spec.SurfaceOpenAI, spec.SurfaceOpenAIStream, spec.SurfaceGenerate}).Draw(t, "surface"),
		Status:  rapid.OneOf(rapid.SampledFrom([]int{400, 413, 500, 503}), rapid.IntRange(400, 599)).Draw(t, "status"),
		ErrType: rapid.SampledFrom([]string{"", "", spec.PayloadTooLarge, spec.BadRequest, "ValueError"}).Draw(t, "err_type"),
		Message: servingText(t, "message"),
	}
}

func errorBodyInvalid(t *rapid.T) Bad[spec.ServingErrorBodyInput] {
	in := errorBodyValid(t)
	if rapid.Bool().Draw(t, "bad_surface") {
		in.Surface = rapid.SampledFrom([]string{"", "OpenAI", "sse", "raw"}).Draw(t, "surface_name")
		return Bad[spec.ServingErrorBodyInput]{in, spec.ErrBadEnum}
	}
	in.Status = rapid.OneOf(rapid.IntRange(-5, 399), rapid.IntRange(600, 1000)).Draw(t, "bad_status")
	return Bad[spec.ServingErrorBodyInput]{in, spec.ErrBadStatus}
}

// openAIErrorFields is the decoded ErrorResponse.
type openAIErrorFields struct {
	Object  string  `json:"object"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int64   `json:"code"`
}

func errorBodyRoundTrips(_ spec.Limits, in spec.ServingErrorBodyInput, out spec.ServingErrorBodyOutput) error {
	if in.Surface != spec.SurfaceOpenAI {
		return nil
	}
	var e openAIErrorFields
	if err := json.Unmarshal([]byte(out.Body), &e); err != nil {
		return fmt.Errorf("body is not JSON: %v", err)
	}
	again, _ := catalog.Marshal(e)
	if !bytes.Equal(again, []byte(out.Body)) && !strings.ContainsAny(in.Message, "\x7f\u2028\u2029") {
		return fmt.Errorf("re-encoded body %s differs from %s", again, out.Body)
	}
	if e.Code != int64(out.Status) || e.Object != "error" || e.Param != nil || e.Message != strings.ToValidUTF8(in.Message, "\uFFFD") {
		return fmt.Errorf("body %s does not carry code = status %d and the message", out.Body, out.Status)
	}
	return nil
}

func errorBodyStatusKept(_ spec.Limits, in spec.ServingErrorBodyInput, out spec.ServingErrorBodyOutput) error {
	if in.Surface != spec.SurfaceOpenAI {
		return nil
	}
	want := in.ErrType
	if want == "" {
		want = ref.DefaultErrType(int64(in.Status))
	}
	if out.Status != in.Status || !strings.Contains(out.Body, `"type":`+ref.JSONString(want)) {
		return fmt.Errorf("openai %d %q answered %d %s", in.Status, want, out.Status, out.Body)
	}
	return nil
}

func errorBodyStreamShape(_ spec.Limits, in spec.ServingErrorBodyInput, out spec.ServingErrorBodyOutput) error {
	if in.Surface != spec.SurfaceOpenAIStream {
		return nil
	}
	data, done := strings.CutSuffix(out.Body, "\n\ndata: [DONE]\n\n")
	data, ok := strings.CutPrefix(data, "data: ")
	var v struct {
		Error openAIErrorFields `json:"error"`
	}
	if out.Status != 200 || !done || !ok || json.Unmarshal([]byte(data), &v) != nil || v.Error.Code != int64(in.Status) {
		return fmt.Errorf("stream error %q is not one data: chunk with code %d then [DONE]", out.Body, in.Status)
	}
	for _, c := range []byte(data) {
		if c >= 0x7f {
			return fmt.Errorf("stream chunk %q has a non-ASCII byte; json.dumps escapes them", data)
		}
	}
	return nil
}

// ---- serving.stream_error_chunk (S1.3 streaming abort typing, S2.5) ----

// ServingStreamErrorChunk is the differential spec of serving.stream_error_chunk.
func ServingStreamErrorChunk() *Spec[spec.ServingStreamErrorChunkInput, spec.ServingStreamErrorChunkOutput] {
	ex := json.RawMessage(`{"type":"abort","status_code":413,"err_type":"PayloadTooLargeError","message":"m"}`)
	return &Spec[spec.ServingStreamErrorChunkInput, spec.ServingStreamErrorChunkOutput]{
		Op:      catalog.ServingStreamErrorChunk(),
		Valid:   rapid.Custom(streamValid),
		Invalid: rapid.Custom(streamInvalid),
		Boundary: []Case[spec.ServingStreamErrorChunkInput]{
			{"s1.4-no-err-type", spec.ServingStreamErrorChunkInput{FinishReason: json.RawMessage(`{"type":"abort","status_code":413,"message":"m"}`)}},
			{"digit-string", spec.ServingStreamErrorChunkInput{FinishReason: json.RawMessage(`{"type":"abort","status_code":"0413"}`)}},
			{"unknown-code", spec.ServingStreamErrorChunkInput{FinishReason: json.RawMessage(`{"type":"abort","status_code":-7,"err_type":""}`)}},
			{"float-code-graceful", spec.ServingStreamErrorChunkInput{FinishReason: json.RawMessage(`{"type":"abort","status_code":413.0}`)}},
			{"preflight-200-code-in-stream", spec.ServingStreamErrorChunkInput{FinishReason: json.RawMessage(`{"type":"abort","status_code":200}`), First: true, Preflight: true}},
			{"duplicate-key-last-wins", spec.ServingStreamErrorChunkInput{FinishReason: json.RawMessage(`{"type":"abort","status_code":500,"status_code":"nope"}`)}},
		},
		Regressions: []Case[spec.ServingStreamErrorChunkInput]{
			{"s1-b5-stream-type-from-status", spec.ServingStreamErrorChunkInput{FinishReason: ex}},
			{"s1-b6-http-status-only", spec.ServingStreamErrorChunkInput{FinishReason: json.RawMessage(`{"type":"abort","status_code":413,"message":"m"}`)}},
			{"s2-b5-preflight-extra-chunk", spec.ServingStreamErrorChunkInput{Chunk: `{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant"}}]}`, First: true, Preflight: true}},
		},
		Props: []Prop[spec.ServingStreamErrorChunkInput, spec.ServingStreamErrorChunkOutput]{
			{"err-type-preferred", streamErrTypePreferred},
			{"int-like-codes-emit", streamIntLikeEmits},
			{"preflight-keeps-success-bytes", streamSuccessBytes},
			{"preflight-error-is-non-streaming", streamPreflightError},
		},
	}
}

func streamValid(t *rapid.T) spec.ServingStreamErrorChunkInput {
	in := spec.ServingStreamErrorChunkInput{
		Chunk:     rapid.SampledFrom([]string{`{"id":"c","choices":[]}`, `{"id":"c","choices":[{"index":0,"delta":{"content":"é<"}}]}`}).Draw(t, "chunk"),
		First:     rapid.Bool().Draw(t, "first"),
		Preflight: rapid.Bool().Draw(t, "preflight"),
	}
	if rapid.IntRange(0, 5).Draw(t, "no_finish") == 0 {
		return in
	}
	var members []string
	members = append(members, `"type":`+rapid.SampledFrom([]string{`"abort"`, `"abort"`, `"abort"`, `"stop"`, `"length"`, `null`}).Draw(t, "type"))
	code := rapid.OneOf(
		rapid.SampledFrom([]string{"", "413", "400", "500", "503", "599", "200", "-1", `"413"`, `"0429"`, `"4x3"`, `""`, "413.0", "4.13e2", "null", "true"}),
		// every status Python's http.HTTPStatus names (S1.3's err_type), and the gaps between them
		rapid.Map(rapid.IntRange(100, 599), func(c int) string { return strconv.Itoa(c) }),
	).Draw(t, "status_code")
	if code != "" {
		members = append(members, `"status_code":`+code)
	}
	if et := rapid.SampledFrom([]string{"", `"PayloadTooLargeError"`, `""`, `"Custom<&>"`, "7"}).Draw(t, "err_type"); et != "" {
		members = append(members, `"err_type":`+et)
	}
	if rapid.Bool().Draw(t, "has_message") {
		members = append(members, `"message":`+ref.JSONString(servingText(t, "message")))
	}
	// members the spec does not name must not change the chunk
	if extra := rapid.SampledFrom([]string{"", "", "", `"matched_stop":null`, `"x_detail":{"status_code":500}`, `"length":7`}).Draw(t, "finish_extra"); extra != "" {
		members = append(members, extra)
	}
	for i := len(members) - 1; i > 0; i-- {
		j := rapid.IntRange(0, i).Draw(t, "swap")
		members[i], members[j] = members[j], members[i]
	}
	in.FinishReason = json.RawMessage("{" + strings.Join(members, ",") + "}")
	return in
}

func streamInvalid(t *rapid.T) Bad[spec.ServingStreamErrorChunkInput] {
	in := streamValid(t)
	big := rapid.SampledFrom([]string{`"99999999999999999999"`, `123456789012345678901234`, `-9223372036854775809`}).Draw(t, "huge")
	in.FinishReason = json.RawMessage(`{"type":"abort","status_code":` + big + `}`)
	return Bad[spec.ServingStreamErrorChunkInput]{in, spec.ErrOverflow}
}

// finishFields decodes a finish reason the plain way for the properties.
func finishFields(raw json.RawMessage) (typ string, code json.RawMessage, errType *string) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return "", nil, nil
	}
	_ = json.Unmarshal(m["type"], &typ)
	var et string
	if json.Unmarshal(m["err_type"], &et) == nil && m["err_type"] != nil && string(m["err_type"]) != "null" {
		errType = &et
	}
	return typ, m["status_code"], errType
}

func streamErrTypePreferred(_ spec.Limits, in spec.ServingStreamErrorChunkInput, out spec.ServingStreamErrorChunkOutput) error {
	_, _, et := finishFields(in.FinishReason)
	if out.Emit && et != nil && *et != "" && out.ErrType != *et {
		return fmt.Errorf("err_type %q given, chunk typed %q", *et, out.ErrType)
	}
	if out.Emit && (et == nil || *et == "") && out.ErrType != ref.HTTPStatusName(out.Code) {
		return fmt.Errorf("no err_type: chunk typed %q, want the status name %q", out.ErrType, ref.HTTPStatusName(out.Code))
	}
	return nil
}

var intLike = regexp.MustCompile(`^(-?[0-9]+|"[0-9]+")$`)

func streamIntLikeEmits(_ spec.Limits, in spec.ServingStreamErrorChunkInput, out spec.ServingStreamErrorChunkOutput) error {
	typ, code, _ := finishFields(in.FinishReason)
	want := typ == "abort" && intLike.Match(code)
	if out.Emit != want {
		return fmt.Errorf("finish reason %s: emit = %v, want %v", in.FinishReason, out.Emit, want)
	}
	return nil
}

func streamSuccessBytes(_ spec.Limits, in spec.ServingStreamErrorChunkInput, out spec.ServingStreamErrorChunkOutput) error {
	if out.Emit {
		return nil
	}
	if want := "data: " + in.Chunk + "\n\n"; out.Body != want {
		return fmt.Errorf("normal chunk sent as %q, want %q whatever the preflight flag", out.Body, want)
	}
	if in.First != (out.Status == 200) {
		return fmt.Errorf("first=%v but status %d", in.First, out.Status)
	}
	return nil
}

func streamPreflightError(_ spec.Limits, in spec.ServingStreamErrorChunkInput, out spec.ServingStreamErrorChunkOutput) error {
	if !out.Emit {
		return nil
	}
	if in.First && in.Preflight && out.Code >= 400 && out.Code <= 599 {
		var e openAIErrorFields
		if out.Status != out.Code || out.ContentType != spec.ContentJSON || json.Unmarshal([]byte(out.Body), &e) != nil || e.Code != out.Code {
			return fmt.Errorf("preflight first-item error answered %d %s %q, want the non-streaming error", out.Status, out.ContentType, out.Body)
		}
		return nil
	}
	if !strings.HasSuffix(out.Body, "data: [DONE]\n\n") || !strings.HasPrefix(out.Body, `data: {"error": `) {
		return fmt.Errorf("in-stream error %q is not a data: chunk then [DONE]", out.Body)
	}
	return nil
}
