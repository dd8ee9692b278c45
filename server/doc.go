// Package server is kvtwin's HTTP API: the catalog's ops, the prefix-index
// pools, the event-fed index and the serving preflight. Every registered op
// is runnable as POST /v1/ops/{name} on canonical JSON, on the configured
// implementation or on one named per request, and ?compare=1 runs ref next
// to it and reports whether their canonical bytes agree.
//
// The server is bounded everywhere (body size, concurrent op requests,
// read/write/idle timeouts, an output limit passed to every op), binds
// 127.0.0.1 by default, never falls back from an unavailable implementation
// to another, answers every error with an OpenAI-style JSON body, and drains
// gracefully: once Serve's context is done, /readyz and new requests answer
// 503 while requests in flight finish within Config.ShutdownTimeout.
//
// A 200 op response is exactly the canonical output bytes of catalog.Entry.Run
// followed by a newline, and a 400 for bad input carries the canonical error
// object, byte for byte, in its "detail" member, so fixtures.HTTP replays the
// golden set against a server exactly as fixtures.Local does in-process. See
// docs/api.md for the API reference and docs/design/ARCHITECTURE.md (Server) for the design.
package server
