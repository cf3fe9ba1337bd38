package server

import "net/http"

// healthPath answers a load balancer's or the kubelet's probe: 200 while
// the server accepts requests, with no token and whatever the Host (a
// kubelet probes a Pod's IP address). It says nothing else, so it gives an
// unauthenticated caller nothing to learn.
const healthPath = "/healthz"

// withHealth serves healthPath itself, GET and HEAD only, and passes every
// other request to next.
func withHealth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != healthPath {
			next.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed: "+healthPath+" answers GET and HEAD", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte("ok\n"))
	})
}
