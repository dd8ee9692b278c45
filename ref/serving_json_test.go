package ref

import "testing"

// TestServingJSONSplittersBuildNoDecoderForOtherKinds: chat messages and
// GLM tools are split one element at a time, and an element that is not an
// object (or array) is answered from its first byte — a list of a million
// one-byte numbers cost ~2.7 KB per element in decoders (serving.glm_tool_args
// on 1 MiB of "tools":[1,1,…]: 2,712 B allocated per request byte).
func TestServingJSONSplittersBuildNoDecoderForOtherKinds(t *testing.T) {
	for _, raw := range [][]byte{[]byte(`1`), []byte(`"s"`), []byte(`null`), []byte(`true`), []byte(`[1]`), nil} {
		if a := testing.AllocsPerRun(10, func() { parseObject(raw) }); a != 0 {
			t.Errorf("parseObject(%q) allocated %v times", raw, a)
		}
	}
	for _, raw := range [][]byte{[]byte(`1`), []byte(`"s"`), []byte(`{}`), nil} {
		if a := testing.AllocsPerRun(10, func() { parseArray(raw) }); a != 0 {
			t.Errorf("parseArray(%q) allocated %v times", raw, a)
		}
	}
	if o, ok := parseObject([]byte(` {"a":1}`)); !ok || len(o) != 1 {
		t.Errorf("an object after whitespace: %v, %t", o, ok)
	}
	if a, ok := parseArray([]byte(` [1,{}]`)); !ok || len(a) != 2 {
		t.Errorf("an array after whitespace: %v, %t", a, ok)
	}
}
