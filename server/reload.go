package server

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvtwin/kvtwin/spec"
)

// This file re-reads the token file, the certificate pair and the client
// CA bundle while the server runs, so a rotated secret is served without a
// restart (docs/decisions.md, "Reloading certificates and tokens"): every
// ReloadInterval each file is read whole, under a size bound, and when the
// bytes of a unit's files differ from what was last read the unit is
// parsed again. A unit that does not parse keeps serving its previous
// contents; the failure is logged at WARN and counted once per change,
// not once per poll.

// maxAuthFileBytes bounds every file a reload reads (tokens, certificate
// chain, key, CA bundle), checked before the file is read: a chain and a
// full token file are each far smaller.
const maxAuthFileBytes = 1 << 20

// reloadUnit is files that are loaded together: a certificate and its key
// change as a pair, so they are read and parsed as one.
type reloadUnit struct {
	// name is the unit's label in kvtwin_auth_reloads_total and the logs:
	// tokens, tls_cert or tls_client_ca.
	name string
	// field is the Config field that names the files, for start-up errors.
	field string
	files []string
	// load parses the files' contents (in files' order) and, when they are
	// good, puts them in service; it leaves the previous ones when not.
	load func(contents [][]byte) error
	// seen is the digest of what was last read, good or not.
	seen [sha256.Size]byte
}

// reloader polls its units. Only its own goroutine calls poll once Serve
// runs, so units need no lock.
type reloader struct {
	units   []*reloadUnit
	every   time.Duration
	log     *slog.Logger
	reloads *prometheus.CounterVec
}

func newReloader(every time.Duration, log *slog.Logger) *reloader {
	return &reloader{every: every, log: log, reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kvtwin_auth_reloads_total",
		Help: "Re-reads of a changed token file (file=tokens), certificate pair (tls_cert) or client CA bundle (tls_client_ca), by result (ok, failed: the previous one stays in service).",
	}, []string{"file", "result"})}
}

// add registers a unit; its files are read by loadAll.
func (rl *reloader) add(name, field string, files []string, load func([][]byte) error) {
	rl.units = append(rl.units, &reloadUnit{name: name, field: field, files: files, load: load})
	rl.reloads.WithLabelValues(name, "ok")
	rl.reloads.WithLabelValues(name, "failed")
}

// loadAll reads and loads every unit once, at start-up: any failure is the
// server's configuration error.
func (rl *reloader) loadAll() error {
	for _, u := range rl.units {
		contents, digest, err := readUnit(u.files)
		if err != nil {
			return spec.Reject(ErrBadConfig, u.field, strings.Join(u.files, ", "),
				fmt.Sprintf("readable files of at most %d bytes (%v)", maxAuthFileBytes, err))
		}
		if err := u.load(contents); err != nil {
			return err
		}
		u.seen = digest
	}
	return nil
}

// poll reloads each unit whose files changed since they were last read.
func (rl *reloader) poll() {
	for _, u := range rl.units {
		contents, digest, err := readUnit(u.files)
		if digest == u.seen {
			continue
		}
		u.seen = digest
		if err == nil {
			err = u.load(contents)
		}
		if err != nil {
			rl.reloads.WithLabelValues(u.name, "failed").Inc()
			rl.log.Warn("reload failed; the previous one stays in service", "file", u.name, "paths", u.files, "err", err.Error())
			continue
		}
		rl.reloads.WithLabelValues(u.name, "ok").Inc()
		rl.log.Info("reloaded", "file", u.name, "paths", u.files)
	}
}

// start polls every interval until ctx is done; the returned function
// waits for the poller to end. Without units it starts nothing.
func (rl *reloader) start(ctx context.Context) (wait func()) {
	if len(rl.units) == 0 {
		return func() {}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(rl.every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				rl.poll()
			}
		}
	})
	return wg.Wait
}

// readUnit reads files, each under maxAuthFileBytes, and digests what it
// read: the bytes, or the error, so a file that disappears or comes back
// is a change too.
func readUnit(files []string) ([][]byte, [sha256.Size]byte, error) {
	h := sha256.New()
	contents := make([][]byte, 0, len(files))
	var firstErr error
	for _, f := range files {
		b, err := readBounded(f)
		if err != nil {
			b = []byte("error: " + err.Error())
			if firstErr == nil {
				firstErr = err
			}
		}
		_ = binary.Write(h, binary.LittleEndian, int64(len(b)))
		h.Write(b)
		contents = append(contents, b)
	}
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return contents, d, firstErr
}

// readBounded reads a whole file of at most maxAuthFileBytes, refusing a
// larger one before reading it (and one that grows while being read).
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, err
	} else if st.Size() > maxAuthFileBytes {
		return nil, fmt.Errorf("%s: %d bytes: want at most %d", path, st.Size(), maxAuthFileBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxAuthFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > maxAuthFileBytes {
		return nil, fmt.Errorf("%s: more than %d bytes", path, maxAuthFileBytes)
	}
	return b, nil
}
