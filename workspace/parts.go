package workspace

// Parts returns the parts of the session's workspace that the tools take
// their interfaces from (tools.Composite): the session itself, for its
// container's life cycle and commands, and the rooms it wires. It reads
// only the session's fields, so it works on a zero Session too (its parts
// are then typed nil pointers).
func (s *Session) Parts() []any {
	return []any{
		s,
		s.files,
		s.jobs,
		s.ports,
		s.checkpoints,
		s.folders,
		s.watcher,
		s.handoffs,
		s.forks,
		s.profileSwitch,
		s.egressPolicy,
		&s.creation,
		s.services,
		s.digests,
	}
}
