package images

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// TestConcurrentStartsOfAKeyRunOnce: a crowd asking for one key's build
// shares one run, and all see its result; another key runs apart.
func TestConcurrentStartsOfAKeyRunOnce(t *testing.T) {
	bs := NewBuilds()
	defer bs.Close()
	release := make(chan struct{})
	var runs atomic.Int32
	run := func(ctx context.Context, b *Build) (string, bool, error) {
		runs.Add(1)
		b.SetStatus("setting up")
		<-release
		return "img", true, nil
	}
	var wg sync.WaitGroup
	got := make([]*Build, 16)
	for i := range got {
		wg.Go(func() { got[i] = bs.Start("k", run) })
	}
	wg.Wait()
	other := bs.Start("other", func(context.Context, *Build) (string, bool, error) { return "", false, errors.New("failed") })
	for _, b := range got {
		if b != got[0] {
			t.Fatalf("two builds of one key")
		}
	}
	close(release)
	<-got[0].Done()
	if image, ran, err := got[0].Result(); image != "img" || !ran || err != nil {
		t.Errorf("result %q %v %v", image, ran, err)
	}
	if line := got[0].Report().Line; line != "setting up" {
		t.Errorf("status %q", line)
	}
	<-other.Done()
	if _, _, err := other.Result(); err == nil {
		t.Errorf("the other key's error is lost")
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("%d runs of one key, want 1", n)
	}
	// Once done, the key builds anew.
	again := bs.Start("k", func(context.Context, *Build) (string, bool, error) { return "img2", true, nil })
	<-again.Done()
	if image, _, _ := again.Result(); image != "img2" {
		t.Errorf("a finished build was handed out again: %q", image)
	}
}

// TestCloseCancelsAndWaitsForBuilds: Close cancels the builds' context
// and returns only once every run has returned.
func TestCloseCancelsAndWaitsForBuilds(t *testing.T) {
	bs := NewBuilds()
	var returned atomic.Bool
	started := make(chan struct{})
	b := bs.Start("k", func(ctx context.Context, _ *Build) (string, bool, error) {
		close(started)
		<-ctx.Done()
		returned.Store(true)
		return "", false, ctx.Err()
	})
	<-started
	bs.Close()
	if !returned.Load() {
		t.Fatalf("Close returned before the build")
	}
	<-b.Done()
	if _, _, err := b.Result(); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
}

// TestKnownKeepsTheLatestPerProfile: Set returns what it replaces.
func TestKnownKeepsTheLatestPerProfile(t *testing.T) {
	var k Known
	if _, ok := k.Get(""); ok {
		t.Fatalf("an empty Known knows an image")
	}
	if prev := k.Set("", "a"); prev != "" {
		t.Errorf("previous %q", prev)
	}
	if prev := k.Set("", "b"); prev != "a" {
		t.Errorf("previous %q, want a", prev)
	}
	k.Set("p", "c")
	if image, ok := k.Get(""); !ok || image != "b" {
		t.Errorf("got %q %v", image, ok)
	}
	if image, _ := k.Get("p"); image != "c" {
		t.Errorf("p's image %q", image)
	}
}
