package turn

import "lnk.dev/linkharness/store"

// ability returns conv as T when it has the ability T, or the conversation
// under it does: a turn holds its conversation under a lease
// (store.Leased), which appends with the lease's token and hands what else
// the store can do to the conversation it wraps (Unwrap).
func ability[T any](conv store.Conversation) (T, bool) {
	for {
		if a, ok := conv.(T); ok {
			return a, true
		}
		u, ok := conv.(interface{ Unwrap() store.Conversation })
		if !ok {
			var none T
			return none, false
		}
		conv = u.Unwrap()
	}
}
