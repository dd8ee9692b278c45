//go:build !unix

package bounded_test

import "errors"

func mkfifo(string) error { return errors.New("FIFOs are a Unix feature") }
