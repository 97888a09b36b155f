package codec

// Exported for the fuzz tests of package codec_test.
var (
	JSONToMsgpackFast   = jsonToMsgpackFast
	JSONToMsgpackTokens = jsonToMsgpackTokens
)
