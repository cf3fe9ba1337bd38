package workspace

// endedMemory is how many ended session IDs a Manager remembers. A call or
// a prestart racing its session's end arrives milliseconds late, not
// thousands of sessions late.
const endedMemory = 4096

// endedSessions remembers the IDs of recently ended sessions, so that a
// request still in flight when its session ends (a notification handled
// after the client hung up, a call that raced a DELETE) gets
// ErrSessionEnded instead of making a container nobody will end. The
// oldest IDs are forgotten first. Callers hold Manager.mu.
type endedSessions struct {
	ids   map[string]struct{}
	order []string // a ring of the IDs in ids; next is the slot to reuse
	next  int
}

// add remembers id as ended.
func (e *endedSessions) add(id string) {
	if e.ids == nil {
		e.ids = make(map[string]struct{}, 64)
	}
	if _, ok := e.ids[id]; ok {
		return
	}
	if len(e.order) < endedMemory {
		e.order = append(e.order, id)
	} else {
		delete(e.ids, e.order[e.next])
		e.order[e.next] = id
		e.next = (e.next + 1) % endedMemory
	}
	e.ids[id] = struct{}{}
}

// has reports whether id ended recently.
func (e *endedSessions) has(id string) bool {
	_, ok := e.ids[id]
	return ok
}
