// Package repocheck holds tests of rules the whole source tree keeps,
// which no single package can check about itself: every package has a
// package doc. It has no code; `go test ./repocheck` runs the checks.
package repocheck
