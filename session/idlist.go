package session

import "fmt"

// IDList is a skeleton's ids, packed: one string holding them all and the
// end of each in it. A string per id was a string header per entry for
// the collector to scan on every open of a long session from its
// snapshot (100k ids: 1.6 MB of headers beside 0.8 MB of ids).
type IDList struct {
	all  string
	ends []uint32
}

// PackIDs makes the list of ids whose ends in all are ends (each at or
// after the one before, the last at most len(all)).
func PackIDs(all string, ends []uint32) (IDList, error) {
	var prev uint32
	for i, e := range ends {
		if e < prev || int(e) > len(all) {
			return IDList{}, fmt.Errorf("%w: id %d ends at %d, after %d, of %d bytes", ErrInvalidEntry, i, e, prev, len(all))
		}
		prev = e
	}
	return IDList{all: all, ends: ends}, nil
}

// IDListOf packs ids.
func IDListOf(ids []string) IDList {
	n := 0
	for _, id := range ids {
		n += len(id)
	}
	b := make([]byte, 0, n)
	ends := make([]uint32, len(ids))
	for i, id := range ids {
		b = append(b, id...)
		ends[i] = uint32(len(b))
	}
	return IDList{all: string(b), ends: ends}
}

// Len is the number of ids.
func (l IDList) Len() int { return len(l.ends) }

// At is id i.
func (l IDList) At(i int) string {
	var start uint32
	if i > 0 {
		start = l.ends[i-1]
	}
	return l.all[start:l.ends[i]]
}

// All is every id, end to end.
func (l IDList) All() string { return l.all }
