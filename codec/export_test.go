package codec

// Exported for the tests of package codec_test.
var (
	JSONToMsgpackFast   = jsonToMsgpackFast
	JSONToMsgpackTokens = jsonToMsgpackTokens
	JSONToMsgpack       = jsonToMsgpack
	MsgpackToJSON       = msgpackToJSON
	Canonical           = canonical
)
