package hostile

// The fuzz target's numeric mutation (catalog/fuzz_test.go): pick one
// numeric leaf of a request body and rewrite it to an extreme. The body is
// arbitrary fuzzer bytes, so unlike Variants this never parses it into a
// tree: a single lexical pass, no recursion, no allocation but the result,
// whatever the nesting.

// numberSpans calls at with the [start, end) of each numeric literal of
// body outside strings, in document order, until at returns false. A
// numeric literal starts at a '-' or a digit outside a string (JSON object
// keys are strings, so they are never leaves) and runs over the characters
// a JSON number may contain; on bytes that are not JSON it finds what a
// lexer would, which is all a fuzzer needs.
func numberSpans(body []byte, at func(start, end int) bool) {
	for i := 0; i < len(body); {
		switch c := body[i]; {
		case c == '"':
			i++
			for i < len(body) && body[i] != '"' {
				if body[i] == '\\' {
					i++ // the escaped byte cannot end the string
				}
				i++
			}
			i++ // the closing quote
		case c == '-' || c >= '0' && c <= '9':
			start := i
			for i++; i < len(body) && isNumberByte(body[i]); i++ {
			}
			if !at(start, i) {
				return
			}
		default:
			i++
		}
	}
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// NumberLeaves is the number of numeric leaves of body (see ReplaceNumber).
func NumberLeaves(body []byte) int {
	n := 0
	numberSpans(body, func(int, int) bool { n++; return true })
	return n
}

// ReplaceNumber returns a copy of body with its numeric leaf number leaf
// (0-based, in document order, strings and keys skipped) replaced by the
// literal with, e.g. one of Extremes; ok is false, and body is returned
// unchanged, when body has no such leaf. body itself is never modified.
func ReplaceNumber(body []byte, leaf int, with string) (out []byte, ok bool) {
	if leaf < 0 {
		return body, false
	}
	start, end, n := 0, 0, 0
	numberSpans(body, func(s, e int) bool {
		if n == leaf {
			start, end, ok = s, e, true
			return false
		}
		n++
		return true
	})
	if !ok {
		return body, false
	}
	out = make([]byte, 0, len(body)-(end-start)+len(with))
	out = append(append(append(out, body[:start]...), with...), body[end:]...)
	return out, true
}
