package clone

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkAddWorkTree measures what a session waits for before it starts:
// TakeTree (no free tree: a new one) on a repository of 5,000 files (50 directories of 100 files of
// 1 KiB), the PR head one commit ahead of the default branch. The clone's
// remote is a local repository, so the fetch costs no network. It reports
// the median of its runs:
//
//	go test -run '^$' -bench AddWorkTree -benchtime 5x ./clone
func BenchmarkAddWorkTree(b *testing.B) { benchAddTree(b, "") }

// BenchmarkAddSharedWorkTree is BenchmarkAddWorkTree with a tree group
// (this process's own, so it needs no root): TakeTree then also hands every
// file of the tree to the group (ShareTree).
//
//	go test -run '^$' -bench AddSharedWorkTree -benchtime 5x ./clone
func BenchmarkAddSharedWorkTree(b *testing.B) { benchAddTree(b, strconv.Itoa(os.Getgid())) }

func benchAddTree(b *testing.B, group string) {
	ctx := context.Background()
	src := filepath.Join(b.TempDir(), "src")
	head := bigForge(b, src, 50, 100)
	c, err := Open(ctx, Options{Dir: filepath.Join(b.TempDir(), "clone"), URL: src, Branch: "main", TreeGroup: group})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Remove()
	var took []time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		dir, err := c.TakeTree(ctx, 1, head)
		took = append(took, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := c.RemoveTree(ctx, dir); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	slices.Sort(took)
	median := took[len(took)/2]
	if len(took)%2 == 0 {
		median = (took[len(took)/2-1] + took[len(took)/2]) / 2
	}
	b.ReportMetric(float64(median.Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(dirs*files), "files")
}

const dirs, files = 50, 100

// bigForge is localForge with a default branch of dirs×files files.
func bigForge(b *testing.B, dir string, dirs, files int) string {
	gitIn(b, ".", "init", "-q", "-b", "main", dir)
	body := strings.Repeat("x", 1023) + "\n"
	for d := range dirs {
		sub := filepath.Join(dir, fmt.Sprintf("pkg%02d", d))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range files {
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("file%03d.txt", f)), []byte(body), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	gitIn(b, dir, "add", ".")
	gitIn(b, dir, "commit", "-qm", "base")
	gitIn(b, dir, "checkout", "-qb", "feature")
	os.WriteFile(filepath.Join(dir, "pkg00", "file000.txt"), []byte("changed\n"), 0o644)
	gitIn(b, dir, "commit", "-qam", "feature")
	head := gitIn(b, dir, "rev-parse", "HEAD")
	gitIn(b, dir, "update-ref", "refs/pull/1/head", head)
	gitIn(b, dir, "checkout", "-q", "main")
	return head
}
