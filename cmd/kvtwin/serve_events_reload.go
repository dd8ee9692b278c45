package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"reflect"
	"sync"
	"syscall"
	"time"

	"github.com/kvtwin/kvtwin/events/zmq"
	"github.com/kvtwin/kvtwin/server"
	"github.com/kvtwin/kvtwin/spec"
)

// This file re-reads serve's --events-file while the server runs and
// applies its sources (docs/events.md "Sources at run time"; the choices
// are in docs/decisions.md, "Event sources at run time"): on SIGHUP, and
// when its bytes change, polled every --events-file-poll.

// sourceSetter is what a reload changes: the server's ZeroMQ sources
// (server.Server's PutEventSource and DeleteEventSource).
type sourceSetter interface {
	PutEventSource(src zmq.Source) (server.SourceChange, error)
	DeleteEventSource(name string) (server.SourceChange, error)
}

// eventsFileWatch applies the changes of an --events-file to the server.
// Only its own goroutine uses it once started.
type eventsFileWatch struct {
	file string
	srv  sourceSetter
	log  *slog.Logger
	// flags are the names of the --events sources: fixed for the
	// server's life, so the file may never name them.
	flags map[string]bool
	// index is the file's index mapping at start: the bounds cannot
	// change while the index lives (§2.10 A11 fixes the engine share).
	index *spec.KVEvConfig
	// last is the file's sources as they were last applied, in file
	// order: what a reload's removals are computed against.
	last []zmq.Source
	// seen is the digest of what was last read, good or not, so that a
	// broken file is reported once per change, not once per poll.
	seen [sha256.Size]byte
}

// newEventsFileWatch watches file, whose start-up reading was doc, for
// srv; flagSources are the --events sources.
func newEventsFileWatch(file string, doc eventsFileDoc, flagSources []string, srv sourceSetter, log *slog.Logger) *eventsFileWatch {
	w := &eventsFileWatch{file: file, srv: srv, log: log, index: doc.index, last: doc.sources, seen: doc.digest, flags: map[string]bool{}}
	for _, sp := range flagSources {
		if src, err := zmq.ParseSource(sp); err == nil {
			w.flags[src.Name] = true
		}
	}
	return w
}

// start re-reads the file on SIGHUP, and every poll when poll > 0, until
// ctx ends; the returned function waits for the watcher to end.
func (w *eventsFileWatch) start(ctx context.Context, poll time.Duration) (wait func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer signal.Stop(hup)
		w.run(ctx, poll, hup)
	})
	return wg.Wait
}

// run is the watcher's loop.
func (w *eventsFileWatch) run(ctx context.Context, poll time.Duration, hup <-chan os.Signal) {
	runEvery(ctx, poll, hup, w.reload)
}

// runEvery calls step(false) every every when every > 0, and step(true)
// on each signal from hup (nil: none), until ctx ends: the loop of the
// --events-file watch and of --events-dns discovery, one step at a time
// on the caller's goroutine.
func runEvery(ctx context.Context, every time.Duration, hup <-chan os.Signal, step func(forced bool)) {
	var tick <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			step(true)
		case <-tick:
			step(false)
		}
	}
}

// reload reads the file and, when its bytes changed since the last read
// (or always, when forced: SIGHUP), applies it. A file that does not read,
// parse or validate is logged at ERROR and changes nothing.
func (w *eventsFileWatch) reload(forced bool) {
	b, err := readEventsFileBytes(w.file)
	digest := sha256.Sum256(b)
	if err != nil {
		digest = sha256.Sum256([]byte("error: " + err.Error()))
	}
	if digest == w.seen && !forced {
		return
	}
	w.seen = digest
	doc, err := w.check(b, err)
	if err != nil {
		w.log.Error("--events-file reload failed; no source changed", "file", w.file, "err", err.Error())
		return
	}
	w.apply(doc)
}

// check is the reloaded file, read as b (or readErr), checked whole:
// loadEventsFile's checks, and no source named as an --events one.
func (w *eventsFileWatch) check(b []byte, readErr error) (eventsFileDoc, error) {
	if readErr != nil {
		return eventsFileDoc{}, readErr
	}
	doc, err := loadEventsFile(w.file, b)
	if err != nil {
		return eventsFileDoc{}, err
	}
	for i, src := range doc.sources {
		if w.flags[src.Name] {
			return eventsFileDoc{}, fmt.Errorf("--events-file %s: sources[%d].name = %s: want a name no --events source has", w.file, i, src.Name)
		}
	}
	return doc, nil
}

// reloadCounts is what one reload did, for its log line.
type reloadCounts struct{ added, replaced, unchanged, removed, failed int }

// apply makes the server's sources follow doc: the sources the file gave
// last time and no longer lists are removed first (freeing their engine
// shares for the adds), then every source it lists is put (added,
// replaced when its configuration changed, kept as it is when not).
// Sources added through the API are left alone unless the file names
// them. A change the server refuses is logged at ERROR and the others go
// on; the refused source is retried at the next reload. The index bounds
// cannot change: a changed `index` mapping is logged and ignored.
func (w *eventsFileWatch) apply(doc eventsFileDoc) {
	if !reflect.DeepEqual(doc.index, w.index) {
		w.log.Warn("--events-file: the index bounds cannot change while serve runs; the change is ignored until a restart", "file", w.file)
	}
	var n reloadCounts
	listed := make(map[string]bool, len(doc.sources))
	for _, src := range doc.sources {
		listed[src.Name] = true
	}
	var kept []zmq.Source
	for _, old := range w.last {
		if listed[old.Name] {
			continue
		}
		if _, err := w.srv.DeleteEventSource(old.Name); err != nil && !errors.Is(err, zmq.ErrUnknownSource) {
			w.log.Error("--events-file: source not removed", "file", w.file, "source", old.Name, "err", err.Error())
			n.failed++
			kept = append(kept, old) // still in force: still the file's
			continue
		}
		n.removed++
	}
	for _, src := range doc.sources {
		if ok := w.put(src, &n); ok {
			kept = append(kept, src)
		} else if old, had := w.lastSource(src.Name); had {
			kept = append(kept, old) // a refused replacement restores the old one
		}
	}
	w.last = kept
	w.log.Info("--events-file reloaded", "file", w.file, "added", n.added, "replaced", n.replaced,
		"unchanged", n.unchanged, "removed", n.removed, "failed", n.failed)
}

// put puts one source the file lists, counting what it did in n; it
// reports whether src is now in force.
func (w *eventsFileWatch) put(src zmq.Source, n *reloadCounts) bool {
	ch, err := w.srv.PutEventSource(src)
	if err != nil {
		w.log.Error("--events-file: source not applied", "file", w.file, "source", src.Name, "err", err.Error())
		n.failed++
		return false
	}
	switch ch.Action {
	case server.SourceAdded:
		n.added++
	case server.SourceReplaced:
		n.replaced++
	default:
		n.unchanged++
	}
	return true
}

// lastSource is the source named name as the file gave it last time.
func (w *eventsFileWatch) lastSource(name string) (zmq.Source, bool) {
	for _, s := range w.last {
		if s.Name == name {
			return s, true
		}
	}
	return zmq.Source{}, false
}
