package images

import "sync"

// Known are the images new containers start from as this process last
// found them, by profile name ("" for sessions without one): the server's
// choice among its images, a profile's image, built or base (which the
// making of every container goes through, the pool's included), and what
// a prompt's look-up found there. They let an initialize name a session's
// image without asking the engine. Safe for concurrent use; the zero
// value is empty.
type Known struct {
	mu     sync.Mutex
	images map[string]string
}

// Set records image as profile's and returns the one recorded before.
func (k *Known) Set(profile, image string) (previous string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.images == nil {
		k.images = map[string]string{}
	}
	previous, k.images[profile] = k.images[profile], image
	return previous
}

// Get is the image recorded for profile.
func (k *Known) Get(profile string) (string, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	image, ok := k.images[profile]
	return image, ok
}
