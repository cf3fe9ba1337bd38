package workspace

import (
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/testwait"
)

// The idle clean-up leaves a container whose jobs run, until the oldest
// has run MaxJobAge; then the jobs and the container go, and the job's id
// is unknown to the next container.
func TestIdleCleanupSparesRunningJobsUntilTheirMaxAge(t *testing.T) {
	m, eng, _ := newTestManager(t, func(c *Config) {
		c.IdleTimeout = 100 * time.Millisecond
		c.MaxJobAge = 2 * time.Second
	})
	s, _ := m.Session("jobs")
	started, err := s.jobs.StartJob(ctx, JobRequest{Argv: []string{"sleep", "60"}})
	if err != nil || started.Job.State != "running" {
		t.Fatalf("start: %+v %v", started, err)
	}
	time.Sleep(time.Second) // many idle timeouts, within the job age
	if eng.count() != 1 {
		t.Fatal("the idle clean-up removed a container whose job runs")
	}
	testwait.For(t, "the clean-up past the job age", func() bool { return eng.count() == 0 })
	_, err = s.jobs.JobStatus(ctx, started.Job.ID)
	if err == nil || !strings.Contains(err.Error(), "recreated") {
		t.Errorf("status of a job lost with its container: %v", err)
	}
}

// Without jobs, the idle clean-up is as before; a job that ended keeps
// nothing.
func TestIdleCleanupIgnoresEndedJobs(t *testing.T) {
	m, eng, _ := newTestManager(t, func(c *Config) { c.IdleTimeout = 100 * time.Millisecond })
	s, _ := m.Session("ended")
	if _, err := s.jobs.StartJob(ctx, JobRequest{Argv: []string{"true"}, Wait: time.Second}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "idle cleanup", func() bool { return eng.count() == 0 })
}
