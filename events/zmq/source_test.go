package zmq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

func TestParseSource(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	good := []struct {
		spec string
		want Source
	}{
		{"a=tcp://10.0.0.7:5557", Source{Name: "a", Endpoint: "tcp://10.0.0.7:5557"}},
		{"pod-1.dp0=tcp://vllm-0:5557,replay=tcp://vllm-0:5558,rank=3,topic=kv@",
			Source{Name: "pod-1.dp0", Endpoint: "tcp://vllm-0:5557", Replay: "tcp://vllm-0:5558", Rank: 3, Topic: "kv@"}},
		{"x:y_Z=tcp://[::1]:1,topic=,rank=0", Source{Name: "x:y_Z", Endpoint: "tcp://[::1]:1"}},
		{"a=tcp://h:65535,topic=kv@pod=1@m", Source{Name: "a", Endpoint: "tcp://h:65535", Topic: "kv@pod=1@m"}},
		{"v=tcp://vllm-0:5557,snapshot=tcp://vllm-0:5559", Source{Name: "v", Endpoint: "tcp://vllm-0:5557", Snapshot: "tcp://vllm-0:5559"}},
	}
	for _, g := range good {
		got, err := ParseSource(g.spec)
		if err != nil || got != g.want {
			t.Errorf("ParseSource(%q) = %+v, %v; want %+v", g.spec, got, err, g.want)
		}
	}
	bad := []struct{ spec, field, bound string }{
		{"tcp://h:1", "source", "NAME=tcp://HOST:PORT"},
		{"=tcp://h:1", "source.name", "1 to 128 characters"},
		{"a b=tcp://h:1", "source.name", "[A-Za-z0-9._:-]"},
		{strings.Repeat("n", 129) + "=tcp://h:1", "source.name", "1 to 128"},
		{"a=udp://h:1", "source[a].endpoint", "tcp://HOST:PORT"},
		{"a=tcp://*:5557", "source[a].endpoint", "HOST to connect to"},
		{"a=tcp://h:0", "source[a].endpoint", "[1, 65535]"},
		{"a=tcp://h:65536", "source[a].endpoint", "[1, 65535]"},
		{"a=tcp://h", "source[a].endpoint", "tcp://HOST:PORT"},
		{"a=tcp://h:1,replay=", "source[a].replay", "tcp://HOST:PORT"},
		{"a=tcp://h:1,replay=tcp://h:x", "source[a].replay", "[1, 65535]"},
		{"a=tcp://h:1,rank=-1", "source[a].rank", "[0, 65535]"},
		{"a=tcp://h:1,rank=65536", "source[a].rank", "[0, 65535]"},
		{"a=tcp://h:1,rank=x", "source[a].rank", "an integer"},
		{"a=tcp://h:1,rank=1,rank=2", "source[a].option", "each at most once"},
		{"a=tcp://h:1,hwm=3", "source[a].option", "one of replay=, snapshot=, rank=, topic="},
		{"a=tcp://h:1,snapshot=", "source[a].snapshot", "tcp://HOST:PORT"},
		{"a=tcp://h:1,snapshot=tcp://*:1", "source[a].snapshot", "HOST to connect to"},
		{"a=tcp://h:1,snapshot=tcp://h:1,snapshot=tcp://h:2", "source[a].option", "each at most once"},
		{"a=tcp://h:1,topic", "source[a].option", "one of"},
		{"a=tcp://h:1,topic=" + strings.Repeat("t", 256), "source[a].topic", "at most 255 bytes"},
	}
	for _, b := range bad {
		_, err := ParseSource(b.spec)
		ie, ok := spec.AsInputError(err)
		if !ok || !errors.Is(err, ErrBadSource) || ie.Field != b.field || !strings.Contains(ie.Bound, b.bound) {
			t.Errorf("ParseSource(%q) = %v; want %s naming %q", b.spec, err, b.field, b.bound)
		}
	}
	if _, err := ParseSources([]string{"a=tcp://h:1", "a=tcp://h:2"}); err == nil || !strings.Contains(err.Error(), "source.name = a") {
		t.Errorf("duplicate names: %v", err)
	}
}

func TestNewRejects(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	src := Source{Name: "a", Endpoint: "tcp://127.0.0.1:1"}
	ix, err := ref.NewKVEvIndex(spec.KVEvConfig{}, Streams([]Source{src}))
	if err != nil {
		t.Fatal(err)
	}
	tooMany := make([]Source, MaxSources+1)
	for i := range tooMany {
		tooMany[i] = Source{Name: fmt.Sprintf("s%d", i), Endpoint: "tcp://127.0.0.1:1"}
	}
	cases := []struct {
		name    string
		ix      spec.KVEvIndex
		sources []Source
		opts    Options
		want    string
	}{
		{"nil index", nil, []Source{src}, Options{}, "nil index"},
		// No sources is accepted: they can come at run time (AddSource).
		{"too many sources", ix, tooMany, Options{}, "sources = 1025"},
		{"unknown stream", ix, []Source{{Name: "b", Endpoint: "tcp://h:1"}}, Options{}, "the index's streams"},
		{"bad source", ix, []Source{{Name: "a", Endpoint: "tcp://h:0"}}, Options{}, "source[a].endpoint"},
		{"duplicate", ix, []Source{src, src}, Options{}, "a name no other source has"},
		{"negative duration", ix, []Source{src}, Options{ReplayTimeout: -1}, "options.ReplayTimeout"},
		{"backoff order", ix, []Source{src}, Options{ReconnectMin: 2e9, ReconnectMax: 1e9}, "options.ReconnectMax"},
		{"frames", ix, []Source{src}, Options{MaxFrames: 5000}, "options.MaxFrames"},
		{"bytes", ix, []Source{src}, Options{MaxMessageBytes: -1}, "options.MaxMessageBytes"},
	}
	for _, c := range cases {
		if _, err := New(c.ix, c.sources, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: New = %v, want an error containing %q", c.name, err, c.want)
		}
	}
	sub, err := New(ix, []Source{src}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sub.Run(ctx); err != nil {
		t.Errorf("Run on a cancelled context: %v", err)
	}
	if err := sub.Run(ctx); err == nil {
		t.Error("second Run: want an error")
	}
}
