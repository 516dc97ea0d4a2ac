// Command lnk-gcs is the store driver keeping conversations in a Google
// Cloud Storage bucket, an object per event, which any machine reaching
// the bucket shares. Link Harness starts it with the agent's home and
// speaks the driver protocol on its standard input and output (FORMATS.md,
// "Store drivers"); it ends when its input does.
//
//	LNK_GCS_BUCKET=my-bucket LNK_GCS_PREFIX=lnk/ lnk-gcs --home DIR
//
// The bucket and prefix come from the environment, and the credentials
// are the client library's own (Application Default Credentials;
// STORAGE_EMULATOR_HOST for an emulator), never the agent's config.json:
// the driver runs outside the sandbox, behind the store bridge. The agent
// is the home folder's name (homes are agents/<name>).
//
// A signal ends it at once, which loses nothing: an object is written
// whole or not at all.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"cloud.google.com/go/storage"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/driver"
	"lnk.dev/linkharness/store/gcs"
)

func main() {
	bucket, prefix := os.Getenv(gcs.BucketEnv), os.Getenv(gcs.PrefixEnv)
	driver.Main("lnk-gcs", func(dir string) (store.Driver, error) { return open(bucket, prefix, dir) })
}

// open reaches bucket (LNK_GCS_BUCKET), its objects under prefix
// (LNK_GCS_PREFIX), as the agent the home folder dir is named for.
func open(bucket, prefix, dir string) (store.Driver, error) {
	if bucket == "" {
		return nil, fmt.Errorf("%s is not set", gcs.BucketEnv)
	}
	// JSON reads, as writes are: one API to reach, and emulators answer it.
	client, err := storage.NewClient(context.Background(), storage.WithJSONReads())
	if err != nil {
		return nil, err
	}
	d, err := gcs.Open(client, bucket, prefix, filepath.Base(dir), true)
	if err != nil {
		client.Close()
		return nil, err
	}
	return d, nil
}
