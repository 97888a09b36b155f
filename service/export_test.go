package service

import "github.com/agentcore/sessionlog/api"

// SetStaleReads makes s answer reads from whatever its cache holds,
// without catching up with the stream: a deliberately broken read path.
func SetStaleReads(s *Service, on bool) { s.staleReads.Store(on) }

// WaitsInFlight is the number of waits s is serving.
func WaitsInFlight(s *Service) int { return len(s.waits) }

// RefusedReplies counts requests s dropped because of their reply subject.
func RefusedReplies(s *Service) int64 { return s.refusedReplies.Load() }

// Cached is how many sessions s's cache holds and their bytes.
func Cached(s *Service) (int, int64) {
	s.cache.mu.Lock()
	defer s.cache.mu.Unlock()
	return s.cache.m.Len(), s.cache.bytes
}

// EncodeEntries is encodeEntries.
func EncodeEntries(r api.EntriesReply) []byte { return encodeEntries(r) }
