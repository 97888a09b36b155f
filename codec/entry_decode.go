package codec

import "github.com/agentcore/sessionlog/session"

// entryMember decodes one member of an entry of a known type.
func (r *reader) entryMember(key string, e *session.Entry, f *flat, fs *fieldSet) error {
	switch key {
	case "message":
		return r.messageMember(key, &e.Message, fs)
	case "thinkingLevel":
		return r.sym(key, &f.ThinkingLevel, fs)
	case "kind":
		return r.sym(key, &f.Kind, fs)
	case "provider":
		return r.sym(key, &f.Provider, fs)
	case "modelId":
		return r.sym(key, &f.ModelID, fs)
	case "model":
		return r.sym(key, &f.Model, fs)
	case "note":
		return r.str(key, &f.Note, fs)
	case "activeTools":
		return r.strings(key, &f.ActiveTools, fs)
	case "summary":
		return r.str(key, &f.Summary, fs)
	case "firstKeptEntryId":
		return r.str(key, &f.FirstKeptEntryID, fs)
	case "tokensBefore":
		return r.integer(key, &f.TokensBefore, fs)
	case "retainedTail":
		return r.messages(key, &f.RetainedTail, fs)
	case "systemMessage":
		return r.messageMember(key, &f.SystemMessage, fs)
	case "usage":
		if r.d.PeekKind() != '{' {
			return r.keep(key, fs)
		}
		f.Usage = &session.Usage{}
		return r.usage(f.Usage)
	case "details":
		return r.raw(&f.Details)
	case "data":
		return r.raw(&f.Data)
	case "fromHook":
		return r.boolean(key, &f.FromHook, fs)
	case "fromId":
		return r.str(key, &f.FromID, fs)
	case "customType":
		return r.sym(key, &f.CustomType, fs)
	case "content":
		return r.content(key, &f.Content, fs)
	case "display":
		return r.boolean(key, &f.Display, fs)
	case "targetId":
		return r.str(key, &f.TargetID, fs)
	case "replacement":
		return r.replacement(key, &f.Edit, fs)
	case "label":
		return r.str(key, &f.Label, fs)
	case "name":
		return r.str(key, &f.Name, fs)
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
func (r *reader) replacement(key string, dst **session.Replacement, fs *fieldSet) error {
	switch r.d.PeekKind() {
	case 'n':
		*dst = &session.Replacement{Remove: true}
		_, err := r.d.ReadToken()
		return err
	case '{':
	default:
		return r.keep(key, fs)
	}
	c := &session.Replacement{}
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
