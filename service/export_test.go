package service

// SetStaleReads makes s answer reads from whatever its cache holds,
// without catching up with the stream: a deliberately broken read path.
func SetStaleReads(s *Service, on bool) { s.staleReads.Store(on) }
