package workspace

import (
	"fmt"
	"sync"
	"testing"

	"github.com/wink-mcp/wink-mcp/internal/testtree"
)

// Calls reading the changes at once, while the session edits its copy,
// each see a whole copy: bringing it back is serialised.
func TestConcurrentChangesOnThePodmanHost(t *testing.T) {
	root, folder := testtree.Host(t, map[string]string{"a.txt": "one\n"})
	m, _, _ := newTestManager(t, func(c *Config) {
		c.Mounts, c.AllowedRoots, c.FilesOnEngineHost = []Mount{{HostPath: folder, Mode: MountCopy}}, []string{root}, true
	})
	s, _ := m.Session("s")
	if _, err := s.files.WriteFile(ctx, "proj/b.txt", "new\n"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			list, err := s.folders.Changes(ctx, "")
			if err == nil && len(list) != 1 {
				err = fmt.Errorf("saw %d changes, want 1: %v", len(list), list)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}
