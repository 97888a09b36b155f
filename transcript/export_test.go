package transcript

// ViaJSON makes Decode make every entry by writing it as JSON and decoding
// it back, as it did before entries were made directly (pi_direct.go).
func ViaJSON() Option { return func(o *options) { o.viaJSON = true } }
