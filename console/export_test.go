package console

// pendingIDs lists the ids of the questions waiting for an answer.
func (s *Server) pendingIDs() []string {
	s.questions.mu.Lock()
	defer s.questions.mu.Unlock()
	ids := make([]string, len(s.questions.pending))
	for i, q := range s.questions.pending {
		ids[i] = q.ID
	}
	return ids
}

// settledAs is how question id ended (nil while it is pending or unknown),
// without ending it.
func (s *Server) settledAs(id string) *Settled {
	s.questions.mu.Lock()
	defer s.questions.mu.Unlock()
	for _, st := range s.questions.settled {
		if st.ID == id {
			return &st
		}
	}
	return nil
}
