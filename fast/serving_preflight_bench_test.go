package fast_test

import (
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// BenchmarkPreflight32K is the target: chat_normalize of a 32 KB
// chat request with 8 tools (tool_choice "any", a string image_url, a
// tool-role list, the soft max_tokens default) — <= 20 µs on the fast path.
func BenchmarkPreflight32K(b *testing.B) {
	for _, sh := range catalog.ServingChatNormalize().Shapes {
		in := sh.Make()
		for _, tw := range []struct {
			name string
			fn   catalog.Func[spec.ServingChatNormalizeInput, spec.ServingChatNormalizeOutput]
		}{{"fast", fast.ServingChatNormalize}, {"ref", ref.ServingChatNormalize}} {
			b.Run(sh.Name+"/"+tw.name, func(b *testing.B) {
				lim := spec.DefaultLimits()
				b.SetBytes(int64(len(in.Request)))
				b.ReportAllocs()
				for b.Loop() {
					if out, err := tw.fn(lim, in); err != nil || out.Status != 200 {
						b.Fatal(err, out.Message)
					}
				}
			})
		}
	}
}
