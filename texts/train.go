package texts

import (
	"fmt"

	"pool/forge"
	"pool/train"
)

// TrainEjectedBody says, once per head, that the PR left the merge train
// of base because the car holding it failed check, and what the pool does
// with it: nothing more at this head, or, flake (a car behind, which holds
// the PR too, passed), one try on its own. With a flake it says too
// whether the forge ran the car's failed jobs again (rerun): they failed
// again, and the PR is not merged at this head; or why they were not run
// again, the note then being the evidence.
func TrainEjectedBody(base, head, check string, flake bool, rerun train.Rerun) string {
	if check == "" {
		check = "a check"
	}
	msg := fmt.Sprintf("This PR left the merge train of %s: %s failed on its car (the PR merged onto the PRs ahead of it).", base, check)
	const notAtHead = "The pool does not merge it at this head: brought up to date with the base, it would be the tree its car tested. " +
		"A new push is reviewed, and rides again once approved."
	switch {
	case rerun == train.Reran:
		msg += "\nA car behind it, which holds this PR too, passed, so the pool had the forge run the car's failed jobs again, once: " +
			"they failed again, on the same tree.\n" + notAtHead
	case flake:
		msg += "\nA car behind it, which holds this PR too, passed: the failure may be a flake. " + notRerun(rerun) +
			" The pool tries it once more on its own: it brings the branch up to date and merges it if its checks pass there."
	default:
		msg += "\n" + notAtHead
	}
	return fmt.Sprintf("%s\n\n%s", msg, forge.Marker(forge.MarkTrain, map[string]string{"head": head, "reason": "ejected"}))
}

// notRerun says why the forge did not run a failed car's checks again.
func notRerun(r train.Rerun) string {
	switch r {
	case train.NoEndpoint:
		return "The forge has no way to run the car's checks again through its API (no rerun endpoint for Actions runs), so the pool did not."
	case train.RerunRefused:
		return "The forge did not run the car's failed jobs again when the pool asked."
	}
	return "The failing check is not from an Actions run of the forge's, so there was nothing the pool could have the forge run again."
}

// TrainStoppedBody says that the base's tree after the PR's landing is
// not the tree its car tested: the train stopped, and forms again.
func TrainStoppedBody(base, car, tip string) string {
	return fmt.Sprintf("The merge train of %s stopped: after this PR landed, %s's tree (at %s) is not the tree of the car the checks tested (%s). The train forms again on the new base.\n\n%s",
		base, base, tip, car, forge.Marker(forge.MarkTrain, map[string]string{"head": car, "reason": "stopped"}))
}
