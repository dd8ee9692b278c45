package adapter

// WithLineBound sets a's bound on one request line or body to n bytes
// instead of MaxLineBytes: the error-path tests send a line over the bound
// without allocating 64 MiB each time. Test builds only.
func WithLineBound(a *Adapter, n int) *Adapter {
	a.maxLineBytes = n
	return a
}
