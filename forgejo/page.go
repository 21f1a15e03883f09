package forgejo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// defaultPageSize is the forge's default max_response_items, used when
// GET /settings/api cannot be read.
const defaultPageSize = 50

// readPageSize asks the forge for its max_response_items.
func (c *Client) readPageSize(ctx context.Context) int {
	var s struct {
		MaxResponseItems int `json:"max_response_items"`
	}
	if err := c.getJSON(ctx, "read API settings", "/settings/api", &s); err != nil ||
		s.MaxResponseItems < 1 || s.MaxResponseItems > 1000 {
		return defaultPageSize
	}
	return s.MaxResponseItems
}

// listing is one list endpoint of the forge.
type listing struct {
	op   string
	path string // with its query, without limit and page
	// filtered says the forge filters this list after paging (reviews,
	// timeline, an organisation's repositories: FACTS, "Where Forgejo
	// differs"), so a page can come back short, or empty, in the middle:
	// the list ends at an empty page only once X-Total-Count (the
	// unfiltered count), where the forge gives it, is reached. Other lists
	// are paged in the database: a short page is the last, and a quiet
	// list costs one request.
	filtered bool
	// pageCount says the forge's X-Total-Count on this list counts the
	// entries of the answer alone, after filtering (the timeline, on Gitea
	// and Forgejo alike): no end of the list is read from it, and the
	// list ends at an empty page.
	pageCount bool
	// skipHuge skips an entry over the body cap alone rather than failing
	// the listing: for lists anyone may write to (comments), where a
	// stranger's one huge entry must not stop the pool reading the rest.
	skipHuge bool
	skipped  *int // counts the entries skipHuge skipped; nil: not counted
	// capped bounds a list anyone may add to that a decision reads whole
	// (reviews) as a PR's comments are bounded, by one answer's body cap:
	// its pages may hold no more than the body cap in all, and there are
	// at most maxListPages of them. A longer list is an error, not a read
	// that a flood of entries, or a forge that pages forever, makes endless.
	capped bool
}

// eachPage reads l page by page and hands each page's body to read, which
// returns how many entries the page held; page counts the pages read, from
// 1. A page over the body cap is read again as smaller pages (at one entry a
// page, an entry over the cap is an error); a page the forge has already
// sent ends the listing with an error instead of looping.
func (c *Client) eachPage(ctx context.Context, l listing, read func(page int, body []byte, hdr http.Header) (int, error)) error {
	size := c.pageSize
	seen := map[[sha256.Size]byte]int{}
	pos := 0        // entries of the list passed, in the forge's paging (filtered ones included)
	empty := 0      // empty pages in a row
	var total int64 // bytes of the pages read
	for page := 1; ; {
		if l.capped && page > maxListPages {
			return &Error{Op: l.op, Err: fmt.Errorf("the list goes on past %d pages", maxListPages)}
		}
		a, err := c.send(ctx, l.op, http.MethodGet, pagePath(l.path, pos/size+1, size), nil)
		if IsTooLarge(err) {
			if size == 1 && l.skipHuge {
				pos++
				size = alignedPage(pos, c.pageSize)
				if l.skipped != nil {
					*l.skipped++
				}
				continue
			}
			if size == 1 {
				return &Error{Op: l.op, Err: fmt.Errorf("entry %d alone: %w", pos+1, errors.Unwrap(err))}
			}
			size = smallerPage(size)
			continue
		}
		if err != nil {
			return err
		}
		if a.status != http.StatusOK {
			return newError(l.op, a.status, fmt.Errorf("%s", snippet(a.body)))
		}
		if total += int64(len(a.body)); l.capped && total > c.maxBody {
			return &Error{Op: l.op, Err: fmt.Errorf("the list's pages hold more than the %d bytes cap in all", c.maxBody)}
		}
		n, err := read(page, a.body, a.header)
		if err != nil {
			return Malformed(l.op, err)
		}
		switch {
		case !l.filtered && n < size:
			return nil
		case n == 0 && (l.pageCount || !moreListed(a.header, pos+size)):
			return nil
		case l.filtered && !l.pageCount && listedAll(a.header, pos+size):
			return nil // the forge's count of the unfiltered list ends here: no page to ask for
		case n == 0:
			if empty++; empty > maxEmptyPages {
				return &Error{Op: l.op, Err: fmt.Errorf("%d empty pages in a row before X-Total-Count %s", empty, a.header.Get("X-Total-Count"))}
			}
		default:
			empty = 0
			sum := sha256.Sum256(a.body)
			if first, ok := seen[sum]; ok {
				return &Error{Op: l.op, Err: fmt.Errorf("page %d is page %d again: the forge ignores paging", page, first)}
			}
			seen[sum] = page
		}
		page++
		pos += size
		size = alignedPage(pos, c.pageSize)
	}
}

// maxEmptyPages bounds a run of empty pages in a filtered list: 100 pages
// of 50 entries the token may not read, in a row.
const maxEmptyPages = 100

// maxListPages bounds a capped list: 100 pages of 50 reviews is more than
// any PR gathers but by a flood.
const maxListPages = 100

// moreListed reports whether the forge's X-Total-Count (the unfiltered
// count) says the list goes on past the first passed entries. Without the
// header, an empty page ends the list.
func moreListed(hdr http.Header, passed int) bool {
	total, err := strconv.Atoi(hdr.Get("X-Total-Count"))
	return err == nil && passed < total
}

// listedAll reports whether the forge's X-Total-Count (the unfiltered
// count) says no entry lies past the first passed. Without the header it
// says nothing: false.
func listedAll(hdr http.Header, passed int) bool {
	total, err := strconv.Atoi(hdr.Get("X-Total-Count"))
	return err == nil && passed >= total
}

// smallerPage is the largest page size below size that divides it, so the
// smaller pages start where the big one did.
func smallerPage(size int) int {
	for d := size / 2; d > 1; d-- {
		if size%d == 0 {
			return d
		}
	}
	return 1
}

// alignedPage is the largest page size, up to max and dividing it, at which
// pos starts a page: back to full pages as soon as paging allows.
func alignedPage(pos, max int) int {
	for d := max; d > 1; d-- {
		if max%d == 0 && pos%d == 0 {
			return d
		}
	}
	return 1
}

func pagePath(path string, page, size int) string {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return fmt.Sprintf("%s%slimit=%d&page=%d", path, sep, size, page)
}

func queryTime(t time.Time) string { return url.QueryEscape(t.UTC().Format(time.RFC3339)) }

// decodeEntries decodes a JSON array one entry at a time, so that one bad
// entry does not hide the others. check validates a decoded entry. It
// returns the good entries, why each bad one was refused, and how many
// entries the array held. A body that is neither an array nor null (an
// empty list, as some endpoints write it) is an error.
func decodeEntries[T any](body []byte, check func(*T) error) (good []*T, bad []error, n int, err error) {
	if t := bytes.TrimSpace(body); len(t) == 0 || (t[0] != '[' && !bytes.Equal(t, []byte("null"))) {
		return nil, nil, 0, fmt.Errorf("want a JSON array, got %q", snippet(body))
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(body, &raws); err != nil {
		return nil, nil, 0, err
	}
	for i, raw := range raws {
		var v *T
		if err := json.Unmarshal(raw, &v); err != nil {
			bad = append(bad, fmt.Errorf("entry %d: %w", i, err))
			continue
		}
		if v == nil {
			bad = append(bad, fmt.Errorf("entry %d is null", i))
			continue
		}
		if err := check(v); err != nil {
			bad = append(bad, fmt.Errorf("entry %d: %w", i, err))
			continue
		}
		good = append(good, v)
	}
	return good, bad, len(raws), nil
}

// strictEntries is decodeEntries for lists a decision needs whole: any bad
// entry makes the page an error.
func strictEntries[T any](body []byte, check func(*T) error) ([]*T, int, error) {
	good, bad, n, err := decodeEntries(body, check)
	if err != nil {
		return nil, 0, err
	}
	if len(bad) > 0 {
		return nil, 0, fmt.Errorf("%w (%d unreadable entries on the page)", bad[0], len(bad))
	}
	return good, n, nil
}
