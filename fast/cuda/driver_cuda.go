//go:build cuda

package cuda

// #cgo LDFLAGS: -ldl
// #define _GNU_SOURCE
// #include <dlfcn.h>
// typedef const char *(*kvt_version_fn)(void);
// static const char *kvt_emu_version(void) {
//	kvt_version_fn f = (kvt_version_fn)dlsym(RTLD_DEFAULT, "kvtwin_emu_driver_version");
//	return f ? f() : 0;
// }
import "C"

// emulationVersion reports whether the process loaded kvtwin's host
// emulation driver, by looking up the symbol only it exports.
func emulationVersion() (string, bool) {
	v := C.kvt_emu_version()
	if v == nil {
		return "", false
	}
	return C.GoString(v), true
}
