package clone

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// Sharing work trees with the agent server's user. That user is in the
// group TreeGroup names (and so is the pool's). It may:
//   - pass through (not list) the directories down to the work trees and
//     to repo.git/objects;
//   - read repo.git/objects, which a work tree borrows (tree.go);
//   - read and write a work tree, its own .git included.
//
// Nothing else: repo.git's config, hooks and refs stay the pool's alone
// (0600/0700 as git and the pool make them), as do the state database and
// the token file beside them. Directories of a work tree are setgid, so
// what the agent's user makes there is the group's too, and the pool can
// delete it when the agent's user runs with umask 0007.

// LookupGroup returns the id of the group name (a name or a number); -1
// for "": no group, nothing shared.
func LookupGroup(name string) (int, error) {
	if name == "" {
		return -1, nil
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		if g, err = user.LookupGroupId(name); err != nil {
			return 0, fmt.Errorf("clone: the work trees' group %q: %w", name, err)
		}
	}
	id, err := strconv.Atoi(g.Gid)
	if err != nil {
		return 0, fmt.Errorf("clone: the work trees' group %q: %w", name, err)
	}
	return id, nil
}

// AllowTraverse lets group gid pass through each of dirs, without listing
// them: the way down to the clone (the state directory and the
// repository's directory in it). gid -1 does nothing.
func AllowTraverse(gid int, dirs ...string) error {
	if gid < 0 {
		return nil
	}
	for _, d := range dirs {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("clone: share the way to the work trees: %w", err)
		}
		if err := os.Chown(d, -1, gid); err != nil {
			return fmt.Errorf("clone: share the way to the work trees: %w", err)
		}
		if err := os.Chmod(d, fi.Mode().Perm()&^0o070|0o010); err != nil {
			return fmt.Errorf("clone: share the way to the work trees: %w", err)
		}
	}
	return nil
}

// shareClone lets the group through to the work trees and repo.git's
// objects, and read those.
func (c *Clone) shareClone() error {
	if err := AllowTraverse(c.group, c.Dir, c.treesDir(), c.repoDir()); err != nil {
		return err
	}
	return c.shareObjects() // a reused clone's fetch ran before the group was known
}

// shareObjects lets the group read repo.git/objects, as a fetch left it.
// Only the pool writes there. Callers hold mu, or own c alone.
func (c *Clone) shareObjects() error {
	if c.group < 0 {
		return nil
	}
	root := filepath.Join(c.repoDir(), "objects")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := fi.Mode().Perm()&^0o070 | 0o040
		if d.IsDir() {
			want |= 0o010
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Gid) == c.group && fi.Mode().Perm() == want {
			return nil
		}
		if err := os.Lchown(path, -1, c.group); err != nil {
			return err
		}
		return os.Chmod(path, want)
	})
	if err != nil {
		return fmt.Errorf("clone: share the objects: %w", err)
	}
	return nil
}

// ShareTree hands the work tree dir to the group: read and write on
// everything the pool owns in it, directories setgid. It never follows a
// symbolic link and acts on each file through a descriptor it opened
// without following one, so a process of the agent's user changing the
// tree meanwhile cannot point it at anything outside. With no group it
// does nothing: the tree stays the pool's alone. TakeTree calls it for a
// new tree and a reset one; so must anything that resets a work tree for
// another session.
func (c *Clone) ShareTree(dir string) error {
	if c.group < 0 {
		return nil
	}
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("clone: share work tree %s: %w", dir, err)
	}
	if err := shareAt(fd, c.group); err != nil {
		return fmt.Errorf("clone: share work tree %s: %w", dir, err)
	}
	return nil
}

// shareAt shares the open file fd (and closes it), and if it is a
// directory, everything in it.
func shareAt(fd, gid int) error {
	f := os.NewFile(uintptr(fd), "")
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return err
	}
	isDir := st.Mode&syscall.S_IFMT == syscall.S_IFDIR
	if int(st.Uid) == os.Geteuid() {
		if err := shareFile(fd, &st, isDir, gid); err != nil {
			return err
		}
	}
	if !isDir {
		return nil
	}
	names, err := f.Readdirnames(-1)
	if err != nil {
		return err
	}
	for _, name := range names {
		child, err := syscall.Openat(fd, name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENXIO) || errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.EACCES) {
			continue // a symbolic link, a socket, gone meanwhile, or the agent's user's own
		}
		if err != nil {
			return fmt.Errorf("open %s: %w", name, err)
		}
		if err := shareAt(child, gid); err != nil {
			return err
		}
	}
	return nil
}

// shareFile gives the open file fd to group gid, with the group's
// permissions the owner's (read, write, and search or execute where the
// owner has it); a directory gets setgid.
func shareFile(fd int, st *syscall.Stat_t, isDir bool, gid int) error {
	perm := st.Mode & 0o777
	want := perm&^0o070 | 0o060 | (perm&0o100)>>3
	if isDir {
		want |= 0o010 | syscall.S_ISGID
	}
	if int(st.Gid) != gid {
		if err := syscall.Fchown(fd, -1, gid); err != nil {
			return err
		}
	}
	return syscall.Fchmod(fd, want)
}
