package egress

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// askTimeout bounds the wait for the user's answer; the connection waits
// with it.
const askTimeout = 2 * time.Minute

// askedHosts is what the user answered for a session: the hosts and ports
// allowed, and those declined (not asked again). Connections to one host
// and port that arrive while the user is being asked wait for that one
// answer.
type askedHosts struct {
	mu      sync.Mutex
	answers map[string]*answer
}

// answer is the user's answer to one question, ready when done closes.
type answer struct {
	done  chan struct{}
	allow bool
	why   string
}

// match returns the rule the user's yes made for host and port.
func (a *askedHosts) match(host string, port int) (Rule, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	got, ok := a.answers[key(host, port)]
	if !ok {
		return Rule{}, false
	}
	select {
	case <-got.done:
		return userRule(host, port), got.allow
	default:
		return Rule{}, false
	}
}

// ask asks the user, once per host and port, and returns the rule a yes
// makes, or why not.
func (a *askedHosts) ask(ctx context.Context, ask func(context.Context, string, int) (bool, error), host string, port int) (Rule, bool, string) {
	k := key(host, port)
	a.mu.Lock()
	if a.answers == nil {
		a.answers = map[string]*answer{}
	}
	got, asking := a.answers[k]
	if !asking {
		got = &answer{done: make(chan struct{})}
		a.answers[k] = got
	}
	a.mu.Unlock()
	if !asking {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), askTimeout)
		allow, err := ask(actx, host, port)
		cancel()
		switch {
		case err != nil:
			got.why = fmt.Sprintf("no pattern allows it, and asking the user failed (%v)", err)
		case !allow:
			got.why = "no pattern allows it, and the user declined it for this session"
		}
		got.allow = err == nil && allow
		if err != nil {
			// A failed question may be asked again by a later connection.
			a.mu.Lock()
			delete(a.answers, k)
			a.mu.Unlock()
		}
		close(got.done)
	}
	select {
	case <-got.done:
	case <-ctx.Done():
		return Rule{}, false, "the connection ended while the user was being asked"
	}
	if !got.allow {
		return Rule{}, false, got.why
	}
	return userRule(host, port), true, ""
}

// userRule is the rule a user's yes makes: that host on that port, for the
// session; like any rule without an explicit port it reaches only public
// addresses.
func userRule(host string, port int) Rule {
	return Rule{Pattern: key(host, port), Host: host, Ports: []int{port}, Source: AskedSource}
}

// AskedSource is the Source of a rule the user's yes made.
const AskedSource = "the user, asked for this session (--egress-ask)"

// allowed returns the rules the user's answers made so far.
func (a *askedHosts) allowed() []Rule {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []Rule
	for k, got := range a.answers {
		select {
		case <-got.done:
		default:
			continue
		}
		if !got.allow {
			continue
		}
		host, portText, _ := net.SplitHostPort(k)
		port, _ := strconv.Atoi(portText)
		out = append(out, userRule(host, port))
	}
	slices.SortFunc(out, func(x, y Rule) int { return strings.Compare(x.Pattern, y.Pattern) })
	return out
}

func key(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }
