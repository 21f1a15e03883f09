package ops

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"pool/statuspage"
)

// Warnings keeps the last few warnings and errors logged, for the status
// page. Wrap a handler with it; records pass through unchanged.
type Warnings struct {
	mu   sync.Mutex // guards ring and next
	ring []statuspage.Warning
	next int
	full bool
}

// NewWarnings keeps the last n warnings.
func NewWarnings(n int) *Warnings { return &Warnings{ring: make([]statuspage.Warning, n)} }

// Wrap returns a handler that records warnings and errors and passes every
// record on to h.
func (w *Warnings) Wrap(h slog.Handler) slog.Handler { return &warnHandler{w: w, next: h} }

// List returns the kept warnings, newest first.
func (w *Warnings) List() []statuspage.Warning {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.next
	if w.full {
		n = len(w.ring)
	}
	out := make([]statuspage.Warning, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, w.ring[(w.next-i+len(w.ring))%len(w.ring)])
	}
	return out
}

func (w *Warnings) add(x statuspage.Warning) {
	if len(w.ring) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ring[w.next] = x
	w.next = (w.next + 1) % len(w.ring)
	w.full = w.full || w.next == 0
}

// warnHandler records warnings. attrs holds the attributes added with
// WithAttrs, already rendered; groups are flattened into key prefixes.
type warnHandler struct {
	w     *Warnings
	next  slog.Handler
	attrs string
	group string
}

func (h *warnHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || h.next.Enabled(ctx, l)
}

func (h *warnHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		var b strings.Builder
		b.WriteString(h.attrs)
		r.Attrs(func(a slog.Attr) bool {
			writeAttr(&b, h.group, a)
			return true
		})
		h.w.add(statuspage.Warning{Time: r.Time, Level: r.Level.String(), Message: r.Message, Attrs: strings.TrimSpace(b.String())})
	}
	if !h.next.Enabled(ctx, r.Level) {
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h *warnHandler) WithAttrs(as []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.attrs)
	for _, a := range as {
		writeAttr(&b, h.group, a)
	}
	return &warnHandler{w: h.w, next: h.next.WithAttrs(as), attrs: b.String(), group: h.group}
}

func (h *warnHandler) WithGroup(name string) slog.Handler {
	return &warnHandler{w: h.w, next: h.next.WithGroup(name), attrs: h.attrs, group: h.group + name + "."}
}

// maxAttr bounds one attribute's text: an error may quote a forge answer.
const maxAttr = 300

func writeAttr(b *strings.Builder, group string, a slog.Attr) {
	v := a.Value.Resolve().String()
	if len(v) > maxAttr {
		v = v[:maxAttr] + "..."
	}
	fmt.Fprintf(b, " %s%s=%s", group, a.Key, v)
}
