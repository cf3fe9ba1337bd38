package workspace

// Parts returns the parts of the session's workspace that the tools take
// their interfaces from (tools.Composite): the session itself, for its
// container's life cycle and commands, and the rooms it wires.
func (s *Session) Parts() []any {
	return []any{
		s,
		s.handoffs,
		s.profileSwitch,
	}
}
