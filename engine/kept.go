package engine

import (
	"context"
	"errors"
	"time"
)

// ErrKeptHeld means another owner holds the kept workspace asked for.
var ErrKeptHeld = errors.New("the kept workspace is held by another owner")

// KeptStore is implemented by an engine that keeps kept workspaces where
// every server using it sees them, not on one server's disk: each one's
// files on a volume of its own, its record beside the volume, and "one
// owner at a time" as a lease that its owner renews (the Kubernetes
// engine: a PersistentVolumeClaim and a coordination.k8s.io Lease).
type KeptStore interface {
	// HoldKept takes the kept workspace ask.Name for ask.Holder, making
	// its volume when missing. It fails wrapping ErrKeptHeld, naming the
	// holder, while another holder's lease is live; it takes over one
	// that has expired. The returned Held renews the lease until
	// released.
	HoldKept(ctx context.Context, ask KeptAsk) (*Held, error)
	// ListKept returns the kept workspaces, most recently used first.
	ListKept(ctx context.Context) ([]KeptRecord, error)
	// RemoveKept deletes a kept workspace's volume, files and record; it
	// refuses, wrapping ErrKeptHeld, one whose lease is live.
	RemoveKept(ctx context.Context, name string) error
}

// KeptAsk is what a server asks of a kept workspace it takes.
type KeptAsk struct {
	// Name is the kept workspace's name (workspace.CheckWorkspaceName).
	Name string
	// Holder says who takes it, for the error a second asker gets.
	Holder string
	// Principal is the digest of the client's bearer token: a workspace
	// made by one principal is refused to every other.
	Principal string
	// Image and Profile are recorded, for a person listing them.
	Image, Profile string
	// DiskBytes is the size of a volume made for it.
	DiskBytes int64
	// Gone, when set, reports whether the holder of a live lease is known
	// to have ended (a process of this host that exited): the store then
	// waits for its lease to run out rather than refusing.
	Gone func(holder string) bool
	// OnWanted, when set, makes the workspace one that any server may
	// serve in turn (a 2026-07-28 handle's kept workspace): taking it
	// while another holder's lease is live asks that holder to let it go
	// and waits, within ctx, rather than refusing at once; and OnWanted is
	// called, once, when another server asks this holder for it (the
	// holder then releases it once no call of its own runs on it).
	OnWanted func()
	// Roaming makes it a workspace that is not kept but that any server
	// may serve in turn (a 2026-07-28 handle's own workspace, on an engine
	// whose containers every server drives: ContainerAdopter). It has no
	// volume (its files are in its container, which the next holder
	// adopts), only the lease, which stays while a handle's record is on
	// it (HandleRecord.Roaming): a holder that lets go leaves it for the
	// next, and it goes with that record, or once nobody held it for
	// Idle. Name is then a RoamingName, DiskBytes unused.
	Roaming bool
	// Idle is how long a roaming workspace nobody holds waits for its
	// next holder before any server removes it (the idle timeout).
	Idle time.Duration
}

// KeptRecord describes a kept workspace of a KeptStore.
type KeptRecord struct {
	Name, Volume string
	// StoreKey is Held.StoreKey: it names the workspace's checkpoint store.
	StoreKey        string
	Created, Used   time.Time
	Image, Profile  string
	Principal       string
	Holder          string    // "" when no lease is live
	HeldUntil       time.Time // when a live lease ends unless renewed
	RequestedBytes  int64
	ProvisionStatus string // the volume's phase (Bound, Pending)
}

// Held is a kept workspace its holder owns: Volume is the name Spec.WorkspaceVolume
// takes, and Release gives it up.
type Held struct {
	Volume string
	// StoreKey names the workspace's checkpoint store in a directory
	// every server shares (--checkpoint-dir): the same for every server
	// that holds this workspace, and never that of another workspace, nor
	// of an earlier one of the same name (the Kubernetes engine: its
	// claim's UID). It is a single path element.
	StoreKey string
	// Release stops renewing the lease, records the last use and ends the
	// lease; it is safe to call more than once.
	Release func(ctx context.Context)
	// Wanted, when set, reports whether another server asked for the
	// workspace (KeptAsk.OnWanted was called): its holder then leaves its
	// container running for that server to adopt (ContainerAdopter).
	Wanted func() bool
}
