package store

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	bolt "go.etcd.io/bbolt"

	"pool/commitstatus"
	"pool/forgejo"
)

// statusesBucket holds the commit statuses the publisher wrote, by
// "<pr>/<head>", so that a relaunch neither reads nor rewrites a status
// that has not changed.
var statusesBucket = []byte("statuses")

// Written loads the commit statuses kept. An entry it cannot read is left
// out: the publisher reads the forge for it.
func (s *Store) Written() (map[commitstatus.Head]forgejo.NewStatus, error) {
	out := map[commitstatus.Head]forgejo.NewStatus{}
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(statusesBucket).ForEach(func(k, v []byte) error {
			pr, sha, ok := strings.Cut(string(k), "/")
			n, err := strconv.Atoi(pr)
			var st forgejo.NewStatus
			if !ok || err != nil || json.Unmarshal(v, &st) != nil {
				return nil
			}
			out[commitstatus.Head{PR: n, SHA: sha}] = st
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("state: load commit statuses: %w", err)
	}
	return out, nil
}

// Remember keeps the status written on a head.
func (s *Store) Remember(h commitstatus.Head, st forgejo.NewStatus) error {
	v, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("state: encode the commit status of PR %d: %w", h.PR, err)
	}
	err = s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(statusesBucket).Put(headKey(h), v) })
	if err != nil {
		return fmt.Errorf("state: keep the commit status of PR %d: %w", h.PR, err)
	}
	return nil
}

// Forget drops what was kept for a head.
func (s *Store) Forget(h commitstatus.Head) error {
	err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(statusesBucket).Delete(headKey(h)) })
	if err != nil {
		return fmt.Errorf("state: forget the commit status of PR %d: %w", h.PR, err)
	}
	return nil
}

func headKey(h commitstatus.Head) []byte { return []byte(strconv.Itoa(h.PR) + "/" + h.SHA) }
