package fast_test

import (
	"bytes"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestServingChatNormalizeFastPathAllocations: the fast twin never decodes the
// request, so normalizing a 32 KB request costs a bounded number of small
// allocations plus one output buffer, not one per member; with every flag
// off the request is returned without a copy.
func TestServingChatNormalizeFastPathAllocations(t *testing.T) {
	shapes := catalog.ServingChatNormalize().Shapes
	on, off := shapes[0].Make(), shapes[1].Make()
	// Without the string image_url part (always normalized, S2.7) nothing changes.
	off.Request = bytes.Replace(off.Request, []byte(`"image_url":"https://example.com/cat.png"`), []byte(`"image_url":{"url":"u"}`), 1)
	lim := spec.DefaultLimits()
	if a := testing.AllocsPerRun(20, func() { _, _ = fast.ServingChatNormalize(lim, on) }); a > 16 {
		t.Errorf("flags on: %.0f allocations per 32 KB request, want <= 16", a)
	}
	if a := testing.AllocsPerRun(20, func() { _, _ = fast.ServingChatNormalize(lim, off) }); a > 4 {
		t.Errorf("flags off: %.0f allocations, want <= 4 (no copy of the request)", a)
	}
	out, _ := fast.ServingChatNormalize(lim, off)
	if &out.Request[0] != &off.Request[0] {
		t.Error("flags off: the request was copied; an untouched request is returned as is")
	}
}

// TestServingChatNormalizeRejectsInvalidJSONLikeRef: the fast twin validates in
// the same single pass that locates the members, so a fault anywhere (deep
// in a message, in a tool, after the object) must give ref's exact error.
// These inputs cannot travel through the JSON-encoded equiv suite (a
// json.RawMessage must be valid), so they are checked here directly.
func TestServingChatNormalizeRejectsInvalidJSONLikeRef(t *testing.T) {
	lim := spec.DefaultLimits()
	flags := spec.CompatFlags{NormalizeToolChoice: true, FlattenToolRoleContent: true}
	for _, req := range []string{
		``, `{`, `{"messages":[}`, `{"messages":[{"role":"tool","content":[{"type":"text","text":"a"},]}]}`,
		`{"messages":[],"tools":[{"function":{"name":"f\q"}}]}`, `{"messages":[]} {}`, "{\"messages\":[{\"content\":\"a\x01\"}]}",
		`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":"u"}]}],"max_tokens":01}`,
		`{"messages":[],"tool_choice":tru}`, `[1,`, `[]`, ` "x" `,
	} {
		for _, ep := range []string{spec.EndpointChat, spec.EndpointCompletions} {
			in := spec.ServingChatNormalizeInput{Endpoint: ep, Request: []byte(req), ContextLen: 8, Flags: flags}
			_, rerr := ref.ServingChatNormalize(lim, in)
			_, ferr := fast.ServingChatNormalize(lim, in)
			if rerr == nil || ferr == nil || rerr.Error() != ferr.Error() {
				t.Errorf("%s %q: ref %v, fast %v", ep, req, rerr, ferr)
			}
		}
	}
}
