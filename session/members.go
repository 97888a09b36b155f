package session

// The members pi defines, by object: what ValidateWrite checks and what
// content stored apart may stand for (blob_walk.go). Read from pi 1.6.0's
// session-manager and pi-ai types; pi 0.73's are a subset.

// messageRoles are the agent message roles pi stores in message entries.
var messageRoles = map[string]bool{
	RoleUser: true, RoleAssistant: true, RoleToolResult: true, RoleCustom: true, RoleSystem: true,
	RoleCompactionSummary: true, RoleBranchSummary: true, "bashExecution": true,
}

// thinkingLevels are pi's ThinkingLevel values.
var thinkingLevels = map[string]bool{"off": true, "minimal": true, "low": true, "medium": true, "high": true, "xhigh": true}

// stopReasons are pi's StopReason values ("pending" and "deferred" since
// pi 1.6).
var stopReasons = map[string]bool{"stop": true, "length": true, "toolUse": true, "error": true, "aborted": true,
	"pending": true, "deferred": true}

// entryMembers are the members each known entry type defines (besides
// type, id, parentId and timestamp), with the kind of JSON value each
// holds ('"' string, 'b' boolean, '0' integer, 'n' any number, '{', '[', '*' any). An
// Extra field of one of these names is that member holding another kind
// of value — or its zero, which decoders keep so that an explicit ""
// or false survives a round trip.
var entryMembers = map[EntryType]map[string]byte{
	TypeMessage:             {"message": '{'},
	TypeThinkingLevelChange: {"thinkingLevel": '"'},
	TypeModelChange:         {"provider": '"', "modelId": '"'},
	TypeActiveToolsChange:   {"activeTools": '['},
	TypeCompaction: {"summary": '"', "firstKeptEntryId": '"', "tokensBefore": '0', "details": '*', "fromHook": 'b',
		"retainedTail": '[', "usage": '{', "systemMessage": '{'},
	TypeBranchSummary: {"fromId": '"', "summary": '"', "details": '*', "fromHook": 'b', "usage": '{'},
	TypeCustom:        {"customType": '"', "data": '*'},
	TypeCustomMessage: {"customType": '"', "content": '"', "display": 'b', "details": '*'},
	TypeLabel:         {"targetId": '"', "label": '"'},
	TypeSessionInfo:   {"name": '"'},
	TypeLeaf:          {},
	TypeUsage:         {"kind": '"', "provider": '"', "model": '"', "usage": '{', "note": '"'},
	TypeContextEdit:   {"targetId": '"', "replacement": '{'},
}

// messageMembers are the members the model has fields for, by message
// role; otherMessageMembers those of every role.
var (
	messageMembers = map[string]map[string]byte{
		RoleAssistant: {"role": '"', "content": '"', "timestamp": '0', "api": '"', "provider": '"', "model": '"',
			"responseId": '"', "usage": '{', "stopReason": '"', "errorMessage": '"'},
		RoleToolResult: {"role": '"', "content": '"', "timestamp": '0', "toolCallId": '"', "toolName": '"',
			"isError": 'b', "details": '*'},
		RoleCustom:            {"role": '"', "content": '"', "timestamp": '0', "customType": '"', "display": 'b', "details": '*'},
		RoleCompactionSummary: {"role": '"', "content": '"', "timestamp": '0', "summary": '"', "tokensBefore": '0'},
		RoleBranchSummary:     {"role": '"', "content": '"', "timestamp": '0', "summary": '"', "fromId": '"'},
	}
	otherMessageMembers = map[string]byte{"role": '"', "content": '"', "timestamp": '0'}
)

func messageMembersOf(role string) map[string]byte {
	if m, ok := messageMembers[role]; ok {
		return m
	}
	return otherMessageMembers
}

// MessageDefines reports whether messages of role have a member named
// key besides role: one that decoders put in the message's Content,
// Timestamp or Body rather than in Extra.
func MessageDefines(role, key string) bool {
	_, ok := messageMembersOf(role)[key]
	return ok && key != "role"
}

// Members pi defines that the model keeps verbatim in Extra, by object,
// with the kinds of JSON value each may hold ('"' string, '0' number, 'n'
// null, 't' and 'f' booleans, '{', '['): a value of another kind is
// refused on write, as a known member's would be. Members named nowhere
// are kept verbatim, unchecked: pi adds some in every release.
var (
	// messageVerbatim: bashExecution's, the assistant's and tool
	// result's additions of pi 1.6, and the system message's.
	messageVerbatim = map[string]string{
		// bashExecution
		"command": `"`, "output": `"`, "exitCode": `0n`, "cancelled": `tf`, "truncated": `tf`,
		"fullOutputPath": `"`, "excludeFromContext": `tf`,
		// assistant
		"responseModel": `"`, "providerThinkingLevel": `"`, "thinkingLevel": `"`, "diagnostics": `[`,
		"deferred": `{`, "rawStopReason": `"`, "endTurn": `tf`, "durationMs": `0`,
		// toolResult
		"nestedCalls": `{`,
		// system
		"sections": `{`, "toolsAdded": `[`, "toolsRemoved": `[`,
	}
	blockVerbatim = map[string]string{"namespace": `"`, "argumentsError": `"`}
	usageVerbatim = map[string]string{"cacheWrite1h": `0`, "reasoning": `0`}
	costVerbatim  = map[string]string{"totalFromProvider": `tf`}
)

// blockMembers are the members each known content block type defines.
var blockMembers = map[string]map[string]byte{
	BlockText:     {"type": '"', "text": '"', "textSignature": '"'},
	BlockThinking: {"type": '"', "thinking": '"', "thinkingSignature": '"', "redacted": 'b'},
	BlockImage:    {"type": '"', "data": '"', "mimeType": '"'},
	BlockToolCall: {"type": '"', "id": '"', "name": '"', "thoughtSignature": '"', "arguments": '*'},
}

// otherBlockMembers are those of a block of a type this version does not
// know: its type, and every other member kept verbatim.
var otherBlockMembers = map[string]byte{"type": '"'}

func blockMembersOf(t string) map[string]byte {
	if m, ok := blockMembers[t]; ok {
		return m
	}
	return otherBlockMembers
}

// BlockDefines reports whether content blocks of type t have a member
// named key besides type: one that decoders put in the block's Text,
// Body rather than in Extra.
func BlockDefines(t, key string) bool {
	_, ok := blockMembers[t][key]
	return ok && key != "type"
}

var usageMembers = map[string]byte{"input": '0', "output": '0', "cacheRead": '0', "cacheWrite": '0', "totalTokens": '0', "cost": '{'}

var costMembers = map[string]byte{"input": 'n', "output": 'n', "cacheRead": 'n', "cacheWrite": 'n', "total": 'n'}

// replacementMembers are the members of a context_edit's replacement.
var replacementMembers = map[string]byte{"content": '"'}

// MaxTypeLen bounds an entry type's name.
const MaxTypeLen = 64

// typeName reports whether t may name an entry type: what every backend
// can keep, a subject token among them.
func typeName(t string) bool {
	if t == "" || len(t) > MaxTypeLen {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Defines reports whether entries of type t have a member named key
// besides the envelope (type, id, parentId, timestamp): one that decoders
// put in the entry's Message or Body rather than in Extra.
func Defines(t EntryType, key string) bool {
	_, ok := entryMembers[t][key]
	return ok
}
