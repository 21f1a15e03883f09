// Package docs holds no code: its test checks the README and docs/, that
// every relative link in them leads to a file and a heading that exist.
package docs
