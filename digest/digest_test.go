package digest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCheckRefusesWhatIsNotADigest(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"", "text is empty"},
		{strings.Repeat("a", MaxBytes+1), "more than a digest's 16384"},
		{"bad \xff utf8", "not valid UTF-8"},
		{"nul \x00 here", "control character U+0000"},
		{"escape \x1b[31m", "control character U+001B"},
		{"overwrite\rhidden", "control character U+000D"},
		{"csi \u009b2J", "control character U+009B"},
		{"bidi \u202eevil", "control character U+202E"},
	} {
		err := Check(tc.text)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check(%.20q) = %v, want %q", tc.text, err, tc.want)
		}
	}
	if err := Check("# Layout\n\t- cmd/ café 😀\n"); err != nil {
		t.Errorf("a plain digest refused: %v", err)
	}
}

func TestRepositoryNamesTheRemoteWithoutCredentials(t *testing.T) {
	top := t.TempDir()
	write(t, filepath.Join(top, ".git", "config"), "[core]\n\tbare = false\n[remote \"upstream\"]\n\turl = https://other.example/x\n[remote \"origin\"]\n\turl = https://user:s3cret@git.example/org/repo.git\n")
	if err := os.MkdirAll(filepath.Join(top, "sub", "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, want := Repository(top), "git https://git.example/org/repo ."; got != want {
		t.Errorf("Repository(top) = %q, want %q", got, want)
	}
	if got, want := Repository(filepath.Join(top, "sub", "dir")), "git https://git.example/org/repo sub/dir"; got != want {
		t.Errorf("Repository(sub/dir) = %q, want %q", got, want)
	}
	if strings.Contains(Repository(top), "s3cret") {
		t.Error("the remote's password is in the repository's name")
	}
}

func TestRepositoryOfAWorktreeAndAnScpRemote(t *testing.T) {
	main, wt := t.TempDir(), t.TempDir()
	write(t, filepath.Join(main, ".git", "config"), "[remote \"origin\"]\n\turl = git@git.example:org/repo.git\n")
	write(t, filepath.Join(main, ".git", "worktrees", "wt", "commondir"), "../..\n")
	write(t, filepath.Join(wt, ".git"), "gitdir: "+filepath.Join(main, ".git", "worktrees", "wt")+"\n")
	if got, want := Repository(wt), "git git.example:org/repo ."; got != want {
		t.Errorf("Repository(worktree) = %q, want %q", got, want)
	}
}

func TestRepositoryWithoutARemoteIsThePath(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, ".git", "config"), "[core]\n")
	if got, want := Repository(dir+"/"), "path "+dir; got != want {
		t.Errorf("Repository = %q, want %q", got, want)
	}
	plain := t.TempDir()
	if got, want := Repository(plain), "path "+plain; got != want {
		t.Errorf("Repository = %q, want %q", got, want)
	}
}

func TestStoreKeepsEachPrincipalsDigestApart(t *testing.T) {
	s := NewStore(filepath.Join(t.TempDir(), "digests"))
	now := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	if _, err := s.Save("alice", "path /src", "alice's digest", now); err != nil {
		t.Fatal(err)
	}
	d, ok, err := s.Load("alice", "path /src")
	if err != nil || !ok || d.Text != "alice's digest" || d.Source != FromStore || !d.Saved.Equal(now) {
		t.Fatalf("Load(alice) = %+v %v %v", d, ok, err)
	}
	if _, ok, err := s.Load("bob", "path /src"); ok || err != nil {
		t.Errorf("bob sees a digest: %v %v", ok, err)
	}
	if _, ok, err := s.Load("alice", "path /other"); ok || err != nil {
		t.Errorf("another repository has alice's digest: %v %v", ok, err)
	}
	if _, err := s.Save("alice", "path /src", "second", now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if d, _, _ := s.Load("alice", "path /src"); d.Text != "second" {
		t.Errorf("after a second save: %q", d.Text)
	}
	entries, _ := os.ReadDir(s.dir)
	if len(entries) != 1 {
		t.Errorf("the store holds %d files, want 1 (no temporary files left)", len(entries))
	}
	if fi, err := os.Stat(s.dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the store's directory: %v %v, want mode 0700", fi.Mode(), err)
	}
}

func TestStoreRefusesADamagedOrMovedRecord(t *testing.T) {
	s := NewStore(t.TempDir())
	if _, err := s.Save("alice", "path /a", "a's digest", time.Now()); err != nil {
		t.Fatal(err)
	}
	// A record copied to another repository's name is not that one's.
	if err := os.Rename(s.path("alice", "path /a"), s.path("alice", "path /b")); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Load("alice", "path /b"); ok || err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("a moved record: ok %v, err %v", ok, err)
	}
	write(t, s.path("alice", "path /c"), "{not json")
	if _, _, err := s.Load("alice", "path /c"); err == nil || !strings.Contains(err.Error(), "save a new one") {
		t.Errorf("a damaged record: %v", err)
	}
	if _, err := s.Save("alice", "path /a", strings.Repeat("x", MaxBytes+1), time.Now()); err == nil {
		t.Error("a digest past MaxBytes was saved")
	}
}

func TestPlaceholderSaysWhatTheProjectDeclares(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "Makefile"), ".PHONY: test\nbuild:\n\tgo build\ntest: build\n\tgo test\nVAR := 1\n")
	write(t, filepath.Join(dir, "package.json"), `{"scripts": {"test": "vitest", "lint": "eslint ."}}`)
	write(t, filepath.Join(dir, "go.mod"), "module example.com/m\n\ngo 1.25.0\n")
	write(t, filepath.Join(dir, "pyproject.toml"), "[project]\nname='x'\n[tool.pytest.ini_options]\n[tool.ruff]\n")
	write(t, filepath.Join(dir, "Cargo.toml"), "[package]\n")
	write(t, filepath.Join(dir, ".github", "workflows", "ci.yml"), "jobs:\n  t:\n    steps:\n      - run: make test\n")
	write(t, filepath.Join(dir, "README.md"), "# Project X\n\nIt does things.\n")
	write(t, filepath.Join(dir, "cmd", "x", "main.go"), "package main\n")
	write(t, filepath.Join(dir, "node_modules", "dep", "index.js"), "")
	text := Placeholder(dir)
	for _, want := range []string{"(generated)", "`make build` (Makefile)", "`make test` (Makefile)", "`npm run lint`: eslint .", "`npm run test`: vitest",
		"go 1.25.0", "pytest, ruff", "cargo test", "`make test` (.github/workflows/ci.yml)", "> # Project X", "> It does things.",
		"- cmd/\n  - x/\n    - main.go", "- node_modules/\n", "## Caveats"} {
		if !strings.Contains(text, want) {
			t.Errorf("the placeholder lacks %q:\n%s", want, text)
		}
	}
	for _, unwanted := range []string{"make .PHONY", "make VAR", "index.js"} {
		if strings.Contains(text, unwanted) {
			t.Errorf("the placeholder holds %q:\n%s", unwanted, text)
		}
	}
	if err := Check(text); err != nil {
		t.Errorf("the placeholder is not a digest: %v", err)
	}
}

func TestPlaceholderOfAHostileFolder(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	write(t, filepath.Join(outside, "README.md"), "SECRET outside the folder\n")
	if err := os.Symlink(filepath.Join(outside, "README.md"), filepath.Join(dir, "README.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "up")); err != nil {
		t.Fatal(err)
	}
	// A FIFO named like a file it reads would block a plain open.
	if err := syscall.Mkfifo(filepath.Join(dir, "Makefile"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		write(t, filepath.Join(dir, "many", fmt.Sprintf("f%03d\x1b[2J.txt", i)), "")
	}
	write(t, filepath.Join(dir, "package.json"), strings.Repeat(" ", maxFileRead+10)+`{"scripts":{"x":"y"}}`)
	done := make(chan string)
	go func() { done <- Placeholder(dir) }()
	var text string
	select {
	case text = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Placeholder hung on a FIFO")
	}
	if strings.Contains(text, "SECRET") {
		t.Errorf("a link led the placeholder out of the folder:\n%s", text)
	}
	if strings.Contains(text, "\x1b") {
		t.Error("a control character in a name reached the digest")
	}
	if !strings.Contains(text, "... and 475 more") {
		t.Errorf("a directory of 500 entries was not cut at %d:\n%s", maxPerDir, text)
	}
	if strings.Contains(text, "npm run x") {
		t.Error("package.json was read past its bound")
	}
	if err := Check(text); err != nil {
		t.Errorf("the placeholder is not a digest: %v", err)
	}
}

func TestPlaceholderIsBounded(t *testing.T) {
	dir := t.TempDir()
	var mk strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&mk, "target-%04d-%s:\n", i, strings.Repeat("x", 150))
	}
	write(t, filepath.Join(dir, "Makefile"), mk.String())
	write(t, filepath.Join(dir, "README.md"), strings.Repeat(strings.Repeat("y", 5000)+"\n", 20))
	text := Placeholder(dir)
	if len(text) > MaxBytes {
		t.Errorf("the placeholder is %d bytes, more than %d", len(text), MaxBytes)
	}
	if n := strings.Count(text, "`make target-"); n != maxCommands {
		t.Errorf("%d make targets listed, want %d", n, maxCommands)
	}
	if got := Placeholder(filepath.Join(dir, "missing")); !strings.Contains(got, "could not be read") {
		t.Errorf("a missing folder: %s", got)
	}
}
