// Package repocheck holds tests of rules the whole source tree keeps,
// which no single package can check about itself: every package has a
// package doc, no file is over 500 lines and no type has over 40 methods.
// It has no code; `go test ./repocheck` runs the checks.
package repocheck
