package texts

import (
	"fmt"

	"pool/forge"
)

// TrainEjectedBody says, once per head, that the PR left the merge train
// of base because the car holding it failed check, and what the pool does
// with it: nothing more at this head, or, flake (a car behind, which holds
// the PR too, passed), one try on its own.
func TrainEjectedBody(base, head, check string, flake bool) string {
	if check == "" {
		check = "a check"
	}
	msg := fmt.Sprintf("This PR left the merge train of %s: %s failed on its car (the PR merged onto the PRs ahead of it).", base, check)
	if flake {
		msg += "\nA car behind it, which holds this PR too, passed: the failure may be a flake. " +
			"The pool tries it once more on its own: it brings the branch up to date and merges it if its checks pass there."
	} else {
		msg += "\nThe pool does not merge it at this head: brought up to date with the base, it would be the tree its car tested. " +
			"A new push is reviewed, and rides again once approved."
	}
	return fmt.Sprintf("%s\n\n%s", msg, forge.Marker(forge.MarkTrain, map[string]string{"head": head, "reason": "ejected"}))
}

// TrainStoppedBody says that the base's tree after the PR's landing is
// not the tree its car tested: the train stopped, and forms again.
func TrainStoppedBody(base, car, tip string) string {
	return fmt.Sprintf("The merge train of %s stopped: after this PR landed, %s's tree (at %s) is not the tree of the car the checks tested (%s). The train forms again on the new base.\n\n%s",
		base, base, tip, car, forge.Marker(forge.MarkTrain, map[string]string{"head": car, "reason": "stopped"}))
}
