package sqlite

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// TestOpenAtOnce opens one new file from several drivers at once, as two
// processes starting together do: each opens, none meets "database is
// locked".
func TestOpenAtOnce(t *testing.T) {
	for round := range 30 {
		path := filepath.Join(t.TempDir(), FileName)
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Go(func() {
				d, err := Open(path)
				if err != nil {
					errs <- fmt.Errorf("round %d: %w", round, err)
					return
				}
				d.Close()
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
}
