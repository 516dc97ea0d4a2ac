package apart

// Do calls f on a goroutine of its own and returns what it returned, once
// it has: f's frames are on that goroutine's stack, not the caller's. A
// panic in f is not recovered.
func Do[T any](f func() (T, error)) (T, error) {
	type done struct {
		v   T
		err error
	}
	ch := make(chan done, 1)
	go func() {
		v, err := f()
		ch <- done{v, err}
	}()
	d := <-ch
	return d.v, d.err
}
