package codec

// smallSet is how many names a keySet holds in a slice before it keeps a
// map: most objects have a handful of members, a hostile one may have
// a hundred thousand.
const smallSet = 16

// keySet is a set of member names that costs linear time however many
// members an object has: a slice while small, a map once large.
type keySet struct {
	list []string
	m    map[string]struct{}
}

func (s *keySet) has(k string) bool {
	if s.m != nil {
		_, ok := s.m[k]
		return ok
	}
	for _, x := range s.list {
		if x == k {
			return true
		}
	}
	return false
}

func (s *keySet) add(k string) {
	if s.m != nil {
		s.m[k] = struct{}{}
		return
	}
	s.list = append(s.list, k)
	if len(s.list) > smallSet {
		s.m = make(map[string]struct{}, 2*len(s.list))
		for _, x := range s.list {
			s.m[x] = struct{}{}
		}
		s.list = nil
	}
}
