// Command lnk-gcs is the store driver keeping conversations in a Google
// Cloud Storage bucket, an object per event, which any machine reaching
// the bucket shares. Link Harness starts it with the agent's home and
// speaks the driver protocol on its standard input and output (DESIGN.md,
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
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"cloud.google.com/go/storage"

	"lnk.dev/linkharness/store/driver"
	"lnk.dev/linkharness/store/gcs"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "lnk-gcs:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("lnk-gcs", flag.ContinueOnError)
	dir := fs.String("home", "", "the agent's home folder")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("--home is needed")
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	bucket := os.Getenv(gcs.BucketEnv)
	if bucket == "" {
		return fmt.Errorf("%s is not set", gcs.BucketEnv)
	}
	// JSON reads, as writes are: one API to reach, and emulators answer it.
	client, err := storage.NewClient(context.Background(), storage.WithJSONReads())
	if err != nil {
		return err
	}
	d, err := gcs.Open(client, bucket, os.Getenv(gcs.PrefixEnv), filepath.Base(abs), true)
	if err != nil {
		client.Close()
		return err
	}
	serr := driver.Serve(context.Background(), d, os.Stdin, os.Stdout)
	if err := d.Close(); serr == nil {
		serr = err
	}
	return serr
}
