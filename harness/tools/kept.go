package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/store"
)

// Where a conversation's narrowing is kept: by its store, when the store
// narrows in one step and reads the list back (store.Narrower and
// store.Meta), else in tools.json beside its events (NarrowFile,
// ReadOnly). A store's abilities are passed in as found under the
// conversation's lease; nil where it has none.

// Narrowing is the narrowing of the conversation in folder dir, held by a
// turn, narrowed first by later when not nil: in one step by its store
// when it can (n and meta), else in tools.json.
func Narrowing(ctx context.Context, dir string, n store.Narrower, meta store.Meta, later []string) (*Only, error) {
	if n != nil && meta != nil {
		only, err := storeNarrowing(ctx, dir, n, meta, later)
		if !errors.Is(err, store.ErrUnsupported) {
			return only, err
		}
	}
	if later != nil {
		return NarrowFile(dir, later)
	}
	return ReadOnly(dir)
}

// storeNarrowing is Narrowing kept in the conversation's store.
func storeNarrowing(ctx context.Context, dir string, n store.Narrower, meta store.Meta, later []string) (*Only, error) {
	if err := moveFile(ctx, dir, n); err != nil {
		return nil, err
	}
	if later != nil {
		kept, err := n.NarrowTools(ctx, later)
		if err != nil {
			return nil, err
		}
		return &Only{Entries: kept}, nil
	}
	b, err := meta.MetaGet(ctx, store.ToolsMeta)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return metaOnly(b)
}

// moveFile narrows the store's list by a tools.json beside a conversation
// its store narrows, and removes the file once the store holds it: a list
// written there before (by a turn that did not look under its lease) is
// never lost, so nothing it took away comes back.
func moveFile(ctx context.Context, dir string, n store.Narrower) error {
	file, err := ReadOnly(dir)
	if file == nil || err != nil {
		return err
	}
	if _, err := n.NarrowTools(ctx, file.Entries); err != nil {
		return err
	}
	path, err := home.In(dir, home.ChatTools)
	if err != nil {
		return err
	}
	return os.Remove(path)
}

// NarrowingOf is the narrowing of the conversation in folder dir as it is
// kept, read only: meta's side datum (meta may be nil), else tools.json;
// nil when it never was narrowed.
func NarrowingOf(ctx context.Context, dir string, meta store.Meta) (*Only, error) {
	if meta != nil {
		b, err := meta.MetaGet(ctx, store.ToolsMeta)
		switch {
		case err == nil:
			return metaOnly(b)
		case !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrUnsupported):
			return nil, err
		}
	}
	return ReadOnly(dir)
}

// NarrowNew narrows the new conversation in folder dir to entries: by its
// store when it can (n, which may be nil), else in tools.json.
func NarrowNew(ctx context.Context, dir string, n store.Narrower, entries []string) error {
	if n != nil {
		_, err := n.NarrowTools(ctx, entries)
		if !errors.Is(err, store.ErrUnsupported) {
			return err
		}
	}
	_, err := NarrowFile(dir, entries)
	return err
}

// metaOnly is the narrowing a store keeps as its side datum b.
func metaOnly(b []byte) (*Only, error) {
	var kept []string
	if err := json.Unmarshal(b, &kept); err != nil {
		return nil, fmt.Errorf("%w: side datum %q: %v", store.ErrCorrupt, store.ToolsMeta, err)
	}
	return &Only{Entries: kept}, nil
}
