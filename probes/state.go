package probes

// stateDir is where the store's baselines persist and whether they can.
type stateDir struct {
	dir     string
	loadErr error
	base    *Baselines
}

func (s *Store) setState(dir string, loadErr error, base *Baselines) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state = stateDir{dir: dir, loadErr: loadErr, base: base}
}

// StateDir is the probe state directory ("" when the baselines are kept
// in memory by choice, or the store has no scheduler) and why the baselines
// cannot be persisted there: it could not be created or written at start,
// or the last save failed. A nil error means they persist.
func (s *Store) StateDir() (dir string, err error) {
	s.mu.Lock()
	st := s.state
	s.mu.Unlock()
	switch {
	case st.loadErr != nil:
		return st.dir, st.loadErr
	case st.base != nil:
		return st.dir, st.base.SaveError()
	}
	return st.dir, nil
}
