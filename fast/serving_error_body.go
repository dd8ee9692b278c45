package fast

import (
	"strconv"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// ServingValidateInputLength is serving.validate_input_length (docs/spec/admission-serving.md
// S1.2), the ref contract with the messages built by one append.
func ServingValidateInputLength(lim spec.Limits, in spec.ServingValidateInputLengthInput) (spec.ServingValidateInputLengthOutput, error) {
	maxReqLen, maxIn, err := ref.CheckInputLengthArgs(in)
	if err != nil {
		return spec.ServingValidateInputLengthOutput{}, err
	}
	out := spec.ServingValidateInputLengthOutput{MaxReqLen: maxReqLen, MaxReqInputLen: maxIn}
	n, c := in.PromptTokens, in.ContextLen
	if in.AllowAutoTruncate {
		out.Accepted, out.PrefillTokens = true, min(n, c, maxIn)
		return out, nil
	}
	if n < c && n < maxIn {
		out.Accepted, out.PrefillTokens = true, n
		return out, nil
	}
	out.Status, out.ErrType = spec.StatusPayloadTooLarge, spec.PayloadTooLarge
	if n >= c {
		out.Stage, out.Message = spec.StageTokenizer, lengthMessage(n, c)
		return out, nil
	}
	out.Stage, out.PrefillTokens, out.Message = spec.StageScheduler, 1, lengthMessage(n, maxIn-1)
	return out, nil
}

func lengthMessage(n, limit int64) string {
	b := make([]byte, 0, 96)
	b = append(b, "The input ("...)
	b = strconv.AppendInt(b, n, 10)
	b = append(b, " tokens) is longer than the model's context length ("...)
	b = strconv.AppendInt(b, limit, 10)
	b = append(b, " tokens)."...)
	return string(b)
}

// ServingErrorBody is serving.error_body (S1.3).
func ServingErrorBody(lim spec.Limits, in spec.ServingErrorBodyInput) (spec.ServingErrorBodyOutput, error) {
	if err := ref.CheckErrorBody(in); err != nil {
		return spec.ServingErrorBodyOutput{}, err
	}
	status, errType := in.Status, in.ErrType
	if errType == "" {
		errType = ref.DefaultErrType(int64(status))
	}
	switch in.Surface {
	case spec.SurfaceOpenAI:
		return spec.ServingErrorBodyOutput{Status: status, ContentType: spec.ContentJSON,
			Body: string(appendOpenAIError(nil, in.Message, errType, int64(status)))}, nil
	case spec.SurfaceOpenAIStream:
		return spec.ServingErrorBodyOutput{Status: 200, ContentType: spec.ContentSSE,
			Body: string(appendStreamError(nil, in.Message, errType, int64(status)))}, nil
	}
	if status < 500 {
		status = spec.StatusBadRequest
	}
	b := make([]byte, 0, len(in.Message)+32)
	b = append(b, `{"error":{"message":`...)
	b = appendPyString(b, in.Message, false)
	b = append(b, "}}"...)
	return spec.ServingErrorBodyOutput{Status: status, ContentType: spec.ContentJSON, Body: string(b)}, nil
}

func appendOpenAIError(b []byte, msg, errType string, code int64) []byte {
	b = append(b, `{"object":"error","message":`...)
	b = appendPyString(b, msg, false)
	b = append(b, `,"type":`...)
	b = appendPyString(b, errType, false)
	b = append(b, `,"param":null,"code":`...)
	b = strconv.AppendInt(b, code, 10)
	return append(b, '}')
}

func appendStreamError(b []byte, msg, errType string, code int64) []byte {
	b = append(b, `data: {"error": {"object": "error", "message": `...)
	b = appendPyString(b, msg, true)
	b = append(b, `, "type": `...)
	b = appendPyString(b, errType, true)
	b = append(b, `, "param": null, "code": `...)
	b = strconv.AppendInt(b, code, 10)
	return append(b, "}}\n\ndata: [DONE]\n\n"...)
}

const hexDigits = "0123456789abcdef"

func appendU(b []byte, r rune) []byte {
	return append(b, '\\', 'u', hexDigits[r>>12&15], hexDigits[r>>8&15], hexDigits[r>>4&15], hexDigits[r&15])
}

// appendPyString is ref.pyJSONString appended to b, with a byte loop for
// the printable-ASCII common case.
func appendPyString(b []byte, s string, ascii bool) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f && c != '"' && c != '\\' {
			b = append(b, c)
			i++
			continue
		}
		if c < utf8.RuneSelf {
			if c == 0x7f && !ascii {
				b = append(b, c) // json.dumps escapes DEL only under ensure_ascii
			} else {
				b = appendPyASCII(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case !ascii:
			b = utf8.AppendRune(b, r)
		case r > 0xffff:
			r -= 0x10000
			b = appendU(appendU(b, 0xd800+(r>>10)), 0xdc00+(r&0x3ff))
		default:
			b = appendU(b, r)
		}
	}
	return append(b, '"')
}

// appendPyASCII escapes one ASCII byte that is not printable-plain.
func appendPyASCII(b []byte, c byte) []byte {
	switch c {
	case '"':
		return append(b, '\\', '"')
	case '\\':
		return append(b, '\\', '\\')
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	case '\b':
		return append(b, '\\', 'b')
	case '\f':
		return append(b, '\\', 'f')
	}
	return appendU(b, rune(c))
}

// lastMembers reads the last occurrence of each wanted key of a JSON
// object (Python's json.loads keeps the last), in one pass.
func lastMembers(obj gjson.Result, into []gjson.Result, keys ...string) {
	obj.ForEach(func(k, v gjson.Result) bool {
		for i, want := range keys {
			if k.Str == want {
				into[i] = v
			}
		}
		return true
	})
}

// ServingStreamErrorChunk is serving.stream_error_chunk (S1.3, S2.5), reading the
// finish reason with gjson.
func ServingStreamErrorChunk(lim spec.Limits, in spec.ServingStreamErrorChunkInput) (spec.ServingStreamErrorChunkOutput, error) {
	return servingStreamErrorChunkWithFaults(lim, in, fault.Serving{})
}

// servingStreamErrorChunkWithFaults is ServingStreamErrorChunk with the historic bugs f
// selects put back (StreamTypeFromStatus, HTTPStatusOnly), for the bug zoo
// only (fault.Hooks, hooks.go); with the zero value it is ServingStreamErrorChunk.
func servingStreamErrorChunkWithFaults(_ spec.Limits, in spec.ServingStreamErrorChunkInput, f fault.Serving) (spec.ServingStreamErrorChunkOutput, error) {
	var m [4]gjson.Result
	isErr, code := false, int64(0)
	if fr := gjson.ParseBytes(in.FinishReason); fr.IsObject() {
		lastMembers(fr, m[:], "type", "status_code", "err_type", "message")
		if m[0].Raw == `"abort"` {
			var err error
			switch sc := m[1]; sc.Type {
			case gjson.String:
				code, isErr, err = ref.StatusCodeDigits(sc.Str, true)
			case gjson.Number:
				code, isErr, err = ref.StatusCodeDigits(sc.Raw, false)
				isErr = isErr && !f.HTTPStatusOnly
			}
			if err != nil {
				return spec.ServingStreamErrorChunkOutput{}, err
			}
		}
	}
	if !isErr {
		return streamChunk(in), nil
	}
	errType := ""
	if m[2].Type == gjson.String && !f.StreamTypeFromStatus {
		errType = m[2].Str
	}
	if errType == "" {
		errType = ref.HTTPStatusName(code)
	}
	msg := "Generation aborted."
	if m[3].Type == gjson.String && m[3].Str != "" {
		msg = m[3].Str
	}
	out := spec.ServingStreamErrorChunkOutput{Emit: true, Code: code, ErrType: errType}
	switch {
	case in.First && in.Preflight && code >= 400 && code <= 599:
		out.Status, out.ContentType, out.Body = code, spec.ContentJSON, string(appendOpenAIError(nil, msg, errType, code))
	case in.First:
		out.Status, out.ContentType, out.Body = 200, spec.ContentSSE, string(appendStreamError(nil, msg, errType, code))
	default:
		out.Body = string(appendStreamError(nil, msg, errType, code))
	}
	return out, nil
}

// streamChunk is the normal chunk path.
func streamChunk(in spec.ServingStreamErrorChunkInput) spec.ServingStreamErrorChunkOutput {
	out := spec.ServingStreamErrorChunkOutput{Body: "data: " + in.Chunk + "\n\n"}
	if in.First {
		out.Status, out.ContentType = 200, spec.ContentSSE
	}
	return out
}
