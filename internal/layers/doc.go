// Package layers holds no code: its test checks that the packages which
// must stay small link none of the heavy ones (the config loader and
// viper, the forge SDK, go-git, the HTTP server packages).
package layers
