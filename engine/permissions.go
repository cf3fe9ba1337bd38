package engine

import "context"

// PermissionReport is what an engine's service says of the calls the
// engine makes with its credentials.
type PermissionReport struct {
	// Checked is how many calls were asked about, and Scope where
	// ("in namespace wink").
	Checked int
	Scope   string
	// Missing are the calls the engine needs that the credentials may not
	// make; Optional those it does without, each saying what it then does.
	Missing, Optional []string
	// Fix says what to grant, in the service's terms (the rules to add to
	// a Role), or "" when nothing is missing.
	Fix string
}

// PermissionChecker is implemented by an engine whose service authorises
// each call on its own (a cluster's RBAC), so that doctor can name the
// calls the engine's credentials lack before a session fails on one.
type PermissionChecker interface {
	// CheckPermissions asks the service, for each call the engine makes,
	// whether its credentials may make it.
	CheckPermissions(ctx context.Context) (PermissionReport, error)
}
