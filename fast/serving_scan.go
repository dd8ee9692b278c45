package fast

// valSpan is a value's bytes [start, end) in the document; end == 0 means absent.
type valSpan struct{ start, end int }

func (s valSpan) exists() bool { return s.end > 0 }
