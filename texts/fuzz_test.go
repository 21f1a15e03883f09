package texts

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
)

// FuzzParseResult feeds arbitrary reviewer replies to the REVIEW-RESULT
// parser. Seeds are in testdata/fuzz/FuzzParseResult.
func FuzzParseResult(f *testing.F) {
	f.Fuzz(func(t *testing.T, text, noise string, decision, status uint8) {
		got := ParseResult(text)
		if got != Unknown {
			if !decisions[got.Decision] || !mergeStatuses[got.MergeStatus] {
				t.Fatalf("ParseResult(%q) = %+v: outside the known decisions and merge statuses", text, got)
			}
			if !strings.Contains(text, "REVIEW-RESULT:") {
				t.Fatalf("ParseResult(%q) = %+v without a result line", text, got)
			}
		}
		// A line without the prefix after the text changes nothing.
		if !strings.Contains(noise, "REVIEW-RESULT:") {
			if again := ParseResult(text + "\n" + noise); again != got {
				t.Fatalf("a trailing line %q changed the result from %+v to %+v", noise, got, again)
			}
		}
		// Round trip: a well-formed last line wins, whatever came before.
		want := Result{Decision: pick(decisions, decision), MergeStatus: pick(mergeStatuses, status)}
		line, _ := json.Marshal(want)
		if again := ParseResult(text + "\nREVIEW-RESULT: " + string(line) + "\n"); again != want {
			t.Fatalf("ParseResult with a trailing %s = %+v", line, again)
		}
	})
}

// pick chooses one key of set by index, in a stable order.
func pick(set map[string]bool, i uint8) string {
	keys := slices.Sorted(maps.Keys(set))
	return keys[int(i)%len(keys)]
}
