package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
)

// ErrorBody is every error response: the OpenAI error object
// (docs/spec/admission-serving.md S1.3, fields in that order) plus, for a 400 that an
// op rejected, Detail: the canonical error object exactly as
// catalog.Entry.Run returned it (fixtures.HTTP reads it back).
type ErrorBody struct {
	// Object is always "error".
	Object string `json:"object"`
	// Message says what went wrong; for bad input it names the field, the value and the bound.
	Message string `json:"message"`
	// Type is the OpenAI error class, e.g. "BadRequestError".
	Type string `json:"type"`
	// Param is the offending input field or query parameter, or null.
	Param *string `json:"param"`
	// Code is the HTTP status.
	Code int `json:"code"`
	// Detail is the op's canonical error object; absent unless an op rejected its input.
	Detail json.RawMessage `json:"detail,omitempty"`
}

// errorType is the OpenAI error class of each status the server answers with.
func errorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "BadRequestError"
	case http.StatusUnauthorized:
		return "AuthenticationError"
	case http.StatusForbidden:
		return "PermissionDeniedError"
	case http.StatusNotFound:
		return "NotFoundError"
	case http.StatusMethodNotAllowed:
		return "MethodNotAllowedError"
	case http.StatusConflict:
		return "ConflictError"
	case http.StatusRequestTimeout:
		return "RequestTimeoutError"
	case http.StatusRequestEntityTooLarge:
		return "PayloadTooLargeError"
	case http.StatusUnsupportedMediaType:
		return "UnsupportedMediaTypeError"
	case http.StatusTooManyRequests:
		return "RateLimitError"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailableError"
	}
	return "InternalServerError"
}

// apiError is an error response before encoding.
type apiError struct {
	status  int
	message string
	param   string          // "" encodes as null
	detail  json.RawMessage // nil is omitted
	// challenge is the WWW-Authenticate header of a 401 or 403, or "".
	challenge string
}

func (e *apiError) Error() string { return e.message }

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, message: fmt.Sprintf(format, args...), param: param}
}

func (e *apiError) body() ErrorBody {
	b := ErrorBody{Object: "error", Message: e.message, Type: errorType(e.status), Code: e.status, Detail: e.detail}
	if e.param != "" {
		b.Param = &e.param
	}
	return b
}

// writeError answers e and logs it once at WARN, server faults included:
// the server recovers from every failed request, and docs/spec/admission-serving.md
// §S5.3 keeps ERROR for conditions it does not recover from.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, e *apiError) {
	s.log.LogAttrs(r.Context(), slog.LevelWarn, "request failed",
		slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", e.status),
		slog.String("message", e.message), slog.String("param", e.param))
	if e.challenge != "" {
		w.Header().Set("WWW-Authenticate", e.challenge)
	}
	b, err := encode(e.body())
	if err != nil {
		// Unreachable: every member is a string, an int or canonical JSON.
		b = []byte(`{"object":"error","message":"error body does not encode","type":"InternalServerError","param":null,"code":500}` + "\n")
		e.status = http.StatusInternalServerError
	}
	writeBody(w, e.status, b)
}

// writeBody answers status with a JSON body that already ends in a newline.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// encode is json.Marshal plus a newline, without HTML escaping so messages
// read as written. Embedded canonical JSON (json.RawMessage) is compact
// already, so it passes through byte for byte.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	s.writeError(w, r, &apiError{status: http.StatusNotFound,
		message: fmt.Sprintf("no route %s %s; GET /v1/ops lists the ops", r.Method, r.URL.Path)})
}

func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	s.writeError(w, r, &apiError{status: http.StatusMethodNotAllowed,
		message: fmt.Sprintf("method %s not allowed on %s", r.Method, r.URL.Path)})
}

// allowOnly answers every method but allowed with 405 and the Allow header.
func (s *Server) allowOnly(allowed string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allowed)
		s.writeError(w, r, &apiError{status: http.StatusMethodNotAllowed,
			message: fmt.Sprintf("method %s not allowed on %s; use %s", r.Method, r.URL.Path, allowed)})
	})
}
