package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// SeparateUserName is the OS user a sandbox's agent server runs as when it
// runs as a user of its own (Options.SeparateAgent): what the README deploys
// the agent server as, an identity that is not the pool's.
const SeparateUserName = "pool-agent-e2e"

// OSUser is a user of this machine.
type OSUser struct {
	Name     string
	UID, GID uint32 // GID: its primary group, the work trees' group
}

// SeparateUser returns SeparateUserName, creating it (a system user without
// a home or a shell) when it is missing and this process is root. The error
// says why it cannot be had: then an agent server runs as this process's
// user.
func SeparateUser() (OSUser, error) {
	u, err := user.Lookup(SeparateUserName)
	if err != nil {
		if os.Geteuid() != 0 {
			return OSUser{}, fmt.Errorf("sandbox: the user %s is missing and only root may create it", SeparateUserName)
		}
		out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SeparateUserName).CombinedOutput()
		if err != nil && !strings.Contains(string(out), "already exists") {
			return OSUser{}, fmt.Errorf("sandbox: create the user %s: %v: %s", SeparateUserName, err, out)
		}
		if u, err = user.Lookup(SeparateUserName); err != nil {
			return OSUser{}, fmt.Errorf("sandbox: the user %s: %w", SeparateUserName, err)
		}
	}
	if os.Geteuid() != 0 {
		return OSUser{}, errors.New("sandbox: only root may run a process as another user")
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return OSUser{}, fmt.Errorf("sandbox: the user %s: %w", SeparateUserName, err)
	}
	return OSUser{Name: u.Username, UID: uint32(uid), GID: uint32(gid)}, nil
}

// OpenWayTo lets every user pass through (not list) the directories above
// path that lie in the temporary directory: the test's own, which Go and
// this package make 0700. Then only the modes the pool and the sandbox
// choose stand between another user and path.
func OpenWayTo(path string) error {
	tmp := filepath.Clean(os.TempDir())
	for dir := filepath.Dir(filepath.Clean(path)); strings.HasPrefix(dir, tmp+string(os.PathSeparator)); dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("sandbox: open the way to %s: %w", path, err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(dir, fi.Mode().Perm()|0o001); err != nil {
				return fmt.Errorf("sandbox: open the way to %s: %w", path, err)
			}
		}
	}
	return nil
}

// giveTo makes u the owner of path and everything under it, without
// following symbolic links.
func giveTo(u OSUser, path string) error {
	return filepath.WalkDir(path, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(u.UID), int(u.GID))
	})
}

// binaryFor returns a copy of the executable bin that u can run, in dir
// (a hard link where the file system allows one): the sandbox's install
// of opencode lives in root's home, which no other user may enter.
func binaryFor(bin, dir string) (string, error) {
	src, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return "", err
	}
	dst := filepath.Join(dir, filepath.Base(bin))
	os.Remove(dst)
	if os.Link(src, dst) == nil {
		return dst, nil
	}
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return "", err
	}
	return dst, out.Close()
}

// asUser makes cmd run as u, with umask 0007 (what the README's unit
// sets), so that the pool, in u's group, can delete what it writes in a
// work tree.
func asUser(cmd *exec.Cmd, u OSUser) {
	cmd.Args = append([]string{"/bin/sh", "-c", `umask 0007 && exec "$0" "$@"`}, cmd.Args...)
	cmd.Path = "/bin/sh"
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: []uint32{u.GID}}
}

// prepareForUser gives the agent server's directory dir to u and returns a
// copy of bin u may run, in a directory beside dir that stays this
// process's (u must not be able to change what it runs).
func prepareForUser(u OSUser, bin, dir string) (string, error) {
	if err := giveTo(u, dir); err != nil {
		return "", err
	}
	if err := OpenWayTo(dir); err != nil {
		return "", err
	}
	binDir := dir + "-bin"
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return "", err
	}
	return binaryFor(bin, binDir)
}
