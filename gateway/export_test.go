package gateway

// HoldAssembling takes every turn to put a reply of several pages
// together, as that many slow ones would; release gives them back.
func HoldAssembling(g *Gateway) (release func()) {
	for range cap(g.assembling) {
		g.assembling <- struct{}{}
	}
	return func() {
		for range cap(g.assembling) {
			<-g.assembling
		}
	}
}
