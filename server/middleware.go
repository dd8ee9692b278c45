package server

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
)

// statusWriter remembers the status a handler answered with, for metrics
// and for knowing whether a panic can still be answered with a 500.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// code is the status answered so far; a handler that wrote nothing answered 200.
func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// recoverPanics turns a panic below it into a 500, logs it with its stack at
// ERROR and counts it, so one bad op cannot take the process down.
// http.ErrAbortHandler passes through: it is net/http's way to drop a response.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw, ok := w.(*statusWriter)
		if !ok {
			sw = &statusWriter{ResponseWriter: w}
		}
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler { // net/http panics with this exact value
				panic(p)
			}
			s.metrics.panics.Inc()
			// WARN, not ERROR: the request fails, the server carries on (§S5.3).
			stack := debug.Stack()
			if op, ok := p.(*opPanic); ok {
				stack = op.stack // where the op panicked, not where it was re-raised
			}
			s.log.LogAttrs(r.Context(), slog.LevelWarn, "panic recovered",
				slog.String("method", r.Method), slog.String("path", r.URL.Path),
				slog.String("panic", fmt.Sprint(p)), slog.String("stack", string(stack)))
			if sw.status != 0 {
				// The response is under way; all that is left is to cut it short.
				panic(http.ErrAbortHandler)
			}
			s.writeError(sw, r, &apiError{status: http.StatusInternalServerError,
				message: "internal error: the request panicked; the panic is logged"})
		}()
		next.ServeHTTP(sw, r)
	})
}

// drainGate answers 503 once the server is draining: requests already in
// flight finish, new ones are told to go elsewhere.
func (s *Server) drainGate(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.draining.Load() {
			w.Header().Set("Connection", "close")
			w.Header().Set("Retry-After", "1")
			s.writeError(w, r, &apiError{status: http.StatusServiceUnavailable,
				message: "server is draining for shutdown; retry on another instance"})
			return
		}
		next(w, r)
	}
}
