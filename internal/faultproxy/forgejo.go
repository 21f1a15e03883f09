package faultproxy

import "net/http"

// ForgejoOptions shape the Forgejo mode.
type ForgejoOptions struct{}

type forgejoMode struct{}

func newForgejoMode(ForgejoOptions, uint64) *forgejoMode { return &forgejoMode{} }

func (m *forgejoMode) serve(w http.ResponseWriter, r *http.Request, p *Proxy) bool { return false }
