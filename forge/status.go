package forge

// NewestPerContext keeps the newest report (the highest id) of each status
// context of a commit's history, in the order the contexts first appear.
// The forge keeps every report; the newest per context is the one that
// counts. This is the one place that folds a history.
func NewestPerContext(history []Status) []Status {
	at := map[string]int{}
	var out []Status
	for _, s := range history {
		i, ok := at[s.Context]
		switch {
		case !ok:
			at[s.Context] = len(out)
			out = append(out, s)
		case s.ID > out[i].ID:
			out[i] = s
		}
	}
	return out
}
