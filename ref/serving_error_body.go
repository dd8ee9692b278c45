package ref

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/kvtwin/kvtwin/spec"
)

// LengthMessage is the one client message of S1.1.
func LengthMessage(n, limit int64) string {
	return "The input (" + strconv.FormatInt(n, 10) + " tokens) is longer than the model's context length (" +
		strconv.FormatInt(limit, 10) + " tokens)."
}

// CheckInputLengthArgs validates S1.6 and returns max_req_len and
// max_req_input_len. The order (context_len, max_total_tokens,
// max_req_input_len, prompt_tokens) is the contract both twins keep.
func CheckInputLengthArgs(in spec.ServingValidateInputLengthInput) (int64, int64, error) {
	if in.ContextLen < 1 {
		return 0, 0, spec.Reject(spec.ErrPoolTooSmall, "context_len", in.ContextLen, ">= 1")
	}
	if in.MaxTotalTokens < 1 {
		return 0, 0, spec.Reject(spec.ErrPoolTooSmall, "max_total_tokens", in.MaxTotalTokens, ">= 1")
	}
	maxReqLen := min(in.ContextLen, in.MaxTotalTokens) - 1
	maxReqInputLen := maxReqLen - 5
	if maxReqInputLen < 1 {
		return 0, 0, spec.Reject(spec.ErrPoolTooSmall, "max_req_input_len", maxReqInputLen,
			">= 1 (memory pool too small): min(context_len, max_total_tokens) - 6")
	}
	if in.PromptTokens < 0 {
		return 0, 0, spec.Reject(spec.ErrNegative, "prompt_tokens", in.PromptTokens, ">= 0 (input token count must be >= 0)")
	}
	return maxReqLen, maxReqInputLen, nil
}

// ServingValidateInputLength applies the tokenizer pre-check and the scheduler
// check of docs/spec/admission-serving.md S1.2, in that order.
func ServingValidateInputLength(_ spec.Limits, in spec.ServingValidateInputLengthInput) (spec.ServingValidateInputLengthOutput, error) {
	maxReqLen, maxReqInputLen, err := CheckInputLengthArgs(in)
	if err != nil {
		return spec.ServingValidateInputLengthOutput{}, err
	}
	out := spec.ServingValidateInputLengthOutput{MaxReqLen: maxReqLen, MaxReqInputLen: maxReqInputLen}
	n := in.PromptTokens
	if in.AllowAutoTruncate {
		// Rule 3: the tokenizer keeps the first C tokens, then the scheduler
		// the first max_req_input_len.
		out.Accepted, out.PrefillTokens = true, min(n, in.ContextLen, maxReqInputLen)
		return out, nil
	}
	switch {
	case n >= in.ContextLen: // rule 1, the upstream N == C quirk kept
		out.Stage, out.PrefillTokens = spec.StageTokenizer, 0
		out.Message = LengthMessage(n, in.ContextLen)
	case n >= maxReqInputLen: // rule 2, reporting L_eff so the message is true
		out.Stage, out.PrefillTokens = spec.StageScheduler, 1
		out.Message = LengthMessage(n, maxReqInputLen-1)
	default:
		out.Accepted, out.PrefillTokens = true, n
		return out, nil
	}
	out.Status, out.ErrType = spec.StatusPayloadTooLarge, spec.PayloadTooLarge
	return out, nil
}

// DefaultErrType is the err_type of a status when none is given: the two
// classes S1.3 names, else the status name as streaming abort typing
// derives it (HTTPStatusName).
func DefaultErrType(status int64) string {
	switch status {
	case spec.StatusPayloadTooLarge:
		return spec.PayloadTooLarge
	case spec.StatusBadRequest:
		return spec.BadRequest
	}
	return HTTPStatusName(status)
}

// CheckErrorBody validates S1.6's status bound and the surface.
func CheckErrorBody(in spec.ServingErrorBodyInput) error {
	switch in.Surface {
	case spec.SurfaceOpenAI, spec.SurfaceOpenAIStream, spec.SurfaceGenerate:
	default:
		return spec.Reject(spec.ErrBadEnum, "surface", in.Surface, `"openai", "openai_stream" or "generate"`)
	}
	if in.Status < 400 || in.Status > 599 {
		return spec.Reject(spec.ErrBadStatus, "status", in.Status, "in [400, 599] (error status must be a 4xx or 5xx code)")
	}
	return nil
}

// ServingErrorBody renders the response of S1.3 for an error on a surface: the
// compact OpenAI error object; the in-stream data: chunk followed by
// [DONE]; or /generate's {"error":{"message"}}, which answers 400 for every
// 4xx (PayloadTooLargeError is a ValueError there) and keeps a 5xx status.
func ServingErrorBody(_ spec.Limits, in spec.ServingErrorBodyInput) (spec.ServingErrorBodyOutput, error) {
	if err := CheckErrorBody(in); err != nil {
		return spec.ServingErrorBodyOutput{}, err
	}
	errType := in.ErrType
	if errType == "" {
		errType = DefaultErrType(int64(in.Status))
	}
	code := strconv.Itoa(in.Status)
	switch in.Surface {
	case spec.SurfaceOpenAI:
		return spec.ServingErrorBodyOutput{Status: in.Status, ContentType: spec.ContentJSON, Body: openAIErrorJSON(in.Message, errType, code)}, nil
	case spec.SurfaceOpenAIStream:
		return spec.ServingErrorBodyOutput{Status: 200, ContentType: spec.ContentSSE, Body: StreamErrorSSE(in.Message, errType, code)}, nil
	}
	status := in.Status
	if status < 500 {
		status = spec.StatusBadRequest
	}
	return spec.ServingErrorBodyOutput{Status: status, ContentType: spec.ContentJSON,
		Body: `{"error":{"message":` + pyJSONString(in.Message, false) + `}}`}, nil
}

// openAIErrorJSON is the compact ErrorResponse of S1.3 (as FastAPI's
// JSONResponse writes it: separators "," and ":", UTF-8 kept). code is the
// status already rendered as an integer literal.
func openAIErrorJSON(message, errType, code string) string {
	return `{"object":"error","message":` + pyJSONString(message, false) + `,"type":` + pyJSONString(errType, false) +
		`,"param":null,"code":` + code + `}`
}

// StreamErrorSSE is the in-stream error of S1.3: one data: chunk as
// Python's json.dumps writes it (separators ", " and ": ", non-ASCII
// escaped), then data: [DONE].
func StreamErrorSSE(message, errType, code string) string {
	return `data: {"error": {"object": "error", "message": ` + pyJSONString(message, true) + `, "type": ` +
		pyJSONString(errType, true) + `, "param": null, "code": ` + code + "}}\n\ndata: [DONE]\n\n"
}

// pyJSONString encodes s as Python's json.dumps does: \" \\ \n \r \t \b \f
// short escapes, other controls as \u00XX, and with ensureASCII every rune
// above 0x7E (0x7F included) as \uXXXX (UTF-16 surrogate pairs above the
// BMP). Invalid UTF-8 is read as U+FFFD, as Python could not hold it.
func pyJSONString(s string, ensureASCII bool) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		case !ensureASCII || r < 0x7f:
			b.WriteRune(r)
		case r > 0xffff:
			r -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// HTTPStatusName is Python's HTTPStatus(code).name (CPython 3.12 names) for
// a known status, else "HTTP_<code>" (docs/spec/admission-serving.md S1.3).
func HTTPStatusName(code int64) string {
	if name, ok := pyStatusName(code); ok {
		return name
	}
	return "HTTP_" + strconv.FormatInt(code, 10)
}

// pyStatusName is CPython 3.12's HTTPStatus name table, as a switch so no
// package state exists.
func pyStatusName(code int64) (string, bool) {
	switch code {
	case 100:
		return "CONTINUE", true
	case 101:
		return "SWITCHING_PROTOCOLS", true
	case 102:
		return "PROCESSING", true
	case 103:
		return "EARLY_HINTS", true
	case 200:
		return "OK", true
	case 201:
		return "CREATED", true
	case 202:
		return "ACCEPTED", true
	case 203:
		return "NON_AUTHORITATIVE_INFORMATION", true
	case 204:
		return "NO_CONTENT", true
	case 205:
		return "RESET_CONTENT", true
	case 206:
		return "PARTIAL_CONTENT", true
	case 207:
		return "MULTI_STATUS", true
	case 208:
		return "ALREADY_REPORTED", true
	case 226:
		return "IM_USED", true
	case 300:
		return "MULTIPLE_CHOICES", true
	case 301:
		return "MOVED_PERMANENTLY", true
	case 302:
		return "FOUND", true
	case 303:
		return "SEE_OTHER", true
	case 304:
		return "NOT_MODIFIED", true
	case 305:
		return "USE_PROXY", true
	case 307:
		return "TEMPORARY_REDIRECT", true
	case 308:
		return "PERMANENT_REDIRECT", true
	case 400:
		return "BAD_REQUEST", true
	case 401:
		return "UNAUTHORIZED", true
	case 402:
		return "PAYMENT_REQUIRED", true
	case 403:
		return "FORBIDDEN", true
	case 404:
		return "NOT_FOUND", true
	case 405:
		return "METHOD_NOT_ALLOWED", true
	case 406:
		return "NOT_ACCEPTABLE", true
	case 407:
		return "PROXY_AUTHENTICATION_REQUIRED", true
	case 408:
		return "REQUEST_TIMEOUT", true
	case 409:
		return "CONFLICT", true
	case 410:
		return "GONE", true
	case 411:
		return "LENGTH_REQUIRED", true
	case 412:
		return "PRECONDITION_FAILED", true
	case 413:
		return "REQUEST_ENTITY_TOO_LARGE", true
	case 414:
		return "REQUEST_URI_TOO_LONG", true
	case 415:
		return "UNSUPPORTED_MEDIA_TYPE", true
	case 416:
		return "REQUESTED_RANGE_NOT_SATISFIABLE", true
	case 417:
		return "EXPECTATION_FAILED", true
	case 418:
		return "IM_A_TEAPOT", true
	case 421:
		return "MISDIRECTED_REQUEST", true
	case 422:
		return "UNPROCESSABLE_ENTITY", true
	case 423:
		return "LOCKED", true
	case 424:
		return "FAILED_DEPENDENCY", true
	case 425:
		return "TOO_EARLY", true
	case 426:
		return "UPGRADE_REQUIRED", true
	case 428:
		return "PRECONDITION_REQUIRED", true
	case 429:
		return "TOO_MANY_REQUESTS", true
	case 431:
		return "REQUEST_HEADER_FIELDS_TOO_LARGE", true
	case 451:
		return "UNAVAILABLE_FOR_LEGAL_REASONS", true
	case 500:
		return "INTERNAL_SERVER_ERROR", true
	case 501:
		return "NOT_IMPLEMENTED", true
	case 502:
		return "BAD_GATEWAY", true
	case 503:
		return "SERVICE_UNAVAILABLE", true
	case 504:
		return "GATEWAY_TIMEOUT", true
	case 505:
		return "HTTP_VERSION_NOT_SUPPORTED", true
	case 506:
		return "VARIANT_ALSO_NEGOTIATES", true
	case 507:
		return "INSUFFICIENT_STORAGE", true
	case 508:
		return "LOOP_DETECTED", true
	case 510:
		return "NOT_EXTENDED", true
	case 511:
		return "NETWORK_AUTHENTICATION_REQUIRED", true
	}
	return "", false
}

// StatusCodeDigits normalizes a status_code per S1.3: a JSON integer
// literal (a plain int; JSON cannot carry an IntEnum, whose value arrives
// as the int) or a string of ASCII digits. It returns the code and true,
// false for any other value (a graceful abort), or an error when an
// int-like code does not fit int64 (field "finish_reason.status_code").
func StatusCodeDigits(raw string, isString bool) (int64, bool, error) {
	digits := raw
	if !isString { // an int literal may be negative; a digit string may not
		digits = strings.TrimPrefix(digits, "-")
	}
	if digits == "" {
		return 0, false, nil
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false, nil
		}
	}
	v, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return 0, false, spec.Reject(spec.ErrOverflow, "finish_reason.status_code", raw, fmt.Sprintf("in [%d, %d]", int64(math.MinInt64), int64(math.MaxInt64)))
	}
	return v, true, nil
}

// ServingStreamErrorChunk applies streaming abort typing (docs/spec/admission-serving.md
// S1.3) and the first-chunk preflight (S2.5) to one stream item. An abort
// finish reason with an int-like status code is an error typed by its
// err_type, else by the status name; it is sent in-stream (then [DONE]),
// or, when it is the first item under preflight and its code is a 4xx or
// 5xx, as the non-streaming error with that status. Anything else is the
// normal chunk, whose bytes preflight never changes.
func ServingStreamErrorChunk(_ spec.Limits, in spec.ServingStreamErrorChunkInput) (spec.ServingStreamErrorChunkOutput, error) {
	code, isErr, err := streamAbortCode(in.FinishReason)
	if err != nil {
		return spec.ServingStreamErrorChunkOutput{}, err
	}
	if !isErr {
		out := spec.ServingStreamErrorChunkOutput{Body: "data: " + in.Chunk + "\n\n"}
		if in.First {
			out.Status, out.ContentType = 200, spec.ContentSSE
		}
		return out, nil
	}
	fr, _ := parseObject(in.FinishReason)
	errType := ""
	if et := fr.get("err_type"); jsonKind(et) == "string" {
		errType = decodeString(et)
	}
	if errType == "" {
		errType = HTTPStatusName(code)
	}
	msg := ""
	if m := fr.get("message"); jsonKind(m) == "string" {
		msg = decodeString(m)
	}
	if msg == "" {
		msg = "Generation aborted."
	}
	out := spec.ServingStreamErrorChunkOutput{Emit: true, Code: code, ErrType: errType}
	codeText := strconv.FormatInt(code, 10)
	switch {
	case in.First && in.Preflight && code >= 400 && code <= 599:
		out.Status, out.ContentType, out.Body = code, spec.ContentJSON, openAIErrorJSON(msg, errType, codeText)
	case in.First:
		out.Status, out.ContentType, out.Body = 200, spec.ContentSSE, StreamErrorSSE(msg, errType, codeText)
	default:
		out.Body = StreamErrorSSE(msg, errType, codeText)
	}
	return out, nil
}

// streamAbortCode returns the normalized status code and true when the
// finish reason is an abort with an int-like status code.
func streamAbortCode(raw json.RawMessage) (int64, bool, error) {
	fr, ok := parseObject(raw)
	if !ok || string(fr.get("type")) != `"abort"` {
		return 0, false, nil
	}
	sc := fr.get("status_code")
	switch jsonKind(sc) {
	case "string":
		return StatusCodeDigits(decodeString(sc), true)
	case "number":
		return StatusCodeDigits(string(sc), false)
	}
	return 0, false, nil
}
