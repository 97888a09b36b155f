package codec

import "github.com/agentcore/sessionlog/session"

// entryMember decodes one member of an entry of a known type.
func (r *reader) entryMember(key string, e *session.Entry, fs *fieldSet) error {
	switch key {
	case "message":
		return r.messageMember(key, &e.Message, fs)
	case "thinkingLevel":
		return r.sym(key, &e.ThinkingLevel, fs)
	case "kind":
		return r.sym(key, &e.Kind, fs)
	case "provider":
		return r.sym(key, &e.Provider, fs)
	case "modelId":
		return r.sym(key, &e.ModelID, fs)
	case "model":
		return r.sym(key, &e.Model, fs)
	case "note":
		return r.str(key, &e.Note, fs)
	case "activeTools":
		return r.strings(key, &e.ActiveTools, fs)
	case "summary":
		return r.str(key, &e.Summary, fs)
	case "firstKeptEntryId":
		return r.str(key, &e.FirstKeptEntryID, fs)
	case "tokensBefore":
		return r.integer(key, &e.TokensBefore, fs)
	case "retainedTail":
		return r.messages(key, &e.RetainedTail, fs)
	case "systemMessage":
		return r.messageMember(key, &e.SystemMessage, fs)
	case "usage":
		if r.d.PeekKind() != '{' {
			return r.keep(key, fs)
		}
		e.Usage = &session.Usage{}
		return r.usage(e.Usage)
	case "details":
		return r.raw(&e.Details)
	case "data":
		return r.raw(&e.Data)
	case "fromHook":
		return r.boolean(key, &e.FromHook, fs)
	case "fromId":
		return r.str(key, &e.FromID, fs)
	case "customType":
		return r.sym(key, &e.CustomType, fs)
	case "content":
		return r.content(key, &e.Content, fs)
	case "display":
		return r.boolean(key, &e.Display, fs)
	case "targetId":
		return r.str(key, &e.TargetID, fs)
	case "replacement":
		return r.replacement(key, &e.Edit, fs)
	case "label":
		return r.str(key, &e.Label, fs)
	case "name":
		return r.str(key, &e.Name, fs)
	}
	return r.keepUnknown(key, fs)
}

// messageMember reads a member holding a message.
func (r *reader) messageMember(key string, dst **session.Message, fs *fieldSet) error {
	if r.d.PeekKind() != '{' {
		return r.keep(key, fs)
	}
	*dst = &session.Message{}
	return r.message(*dst)
}

// replacement reads a context_edit's replacement: null, or {content}.
func (r *reader) replacement(key string, dst **session.ContextEdit, fs *fieldSet) error {
	switch r.d.PeekKind() {
	case 'n':
		*dst = &session.ContextEdit{Remove: true}
		_, err := r.d.ReadToken()
		return err
	case '{':
	default:
		return r.keep(key, fs)
	}
	c := &session.ContextEdit{}
	*dst = c
	var cfs fieldSet
	return r.objectIn("replacement", &c.Layout, func() (*order, *[]session.Field) {
		c.Extra = cfs.finish(func(k string) bool { return k == "content" })
		return orders().edit, &c.Extra
	}, func(key string) error {
		if key == "content" {
			return r.content(key, &c.Content, &cfs)
		}
		return r.keepUnknown(key, &cfs)
	})
}
