package codec

// Exported for the tests of package codec_test.
var (
	JSONToMsgpackFast   = jsonToMsgpackFast
	JSONToMsgpackTokens = jsonToMsgpackTokens
	JSONToMsgpack       = jsonToMsgpack
	MsgpackToJSON       = msgpackToJSON
	Canonical           = canonical
)

// SetMaxLineBytes bounds the lines DecodeFile decodes until restore.
func SetMaxLineBytes(n int) (restore func()) {
	old := maxLineBytes
	maxLineBytes = n
	return func() { maxLineBytes = old }
}
