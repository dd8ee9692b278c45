package ref

import (
	"errors"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/kvtwin/kvtwin/spec"
)

// ListDeepGEMMCache reads a real DG_JIT_CACHE_DIR (as an fs.FS rooted at
// it) into the listing §S3.5 decides on: the immediate children of
// "cache" when that subdirectory exists, else of the root, each with the
// sizes of its regular files. At the root the manifest and its temporary
// files are not cache entries. A missing root reads as an empty cache.
func ListDeepGEMMCache(fsys fs.FS) ([]spec.DeepGEMMCacheEntry, error) {
	root := "."
	if info, err := fs.Stat(fsys, "cache"); err == nil && info.IsDir() {
		root = "cache"
	}
	children, err := fs.ReadDir(fsys, root)
	if errors.Is(err, fs.ErrNotExist) {
		return []spec.DeepGEMMCacheEntry{}, nil
	}
	if err != nil {
		return nil, err
	}
	cache := []spec.DeepGEMMCacheEntry{}
	for _, c := range children {
		if root == "." && strings.HasPrefix(c.Name(), spec.DeepGEMMManifestFile) {
			continue
		}
		e, ok, err := statCacheEntry(fsys, path.Join(root, c.Name()))
		if err != nil {
			return nil, err
		}
		if ok {
			cache = append(cache, e)
		}
	}
	slices.SortFunc(cache, func(a, b spec.DeepGEMMCacheEntry) int { return strings.Compare(a.Name, b.Name) })
	return cache, nil
}

// statCacheEntry lists one child: a regular file with its size, or a
// directory with the sizes of every regular file below it (in walk order).
// Anything else (a device, a dangling link) is not a cache entry.
func statCacheEntry(fsys fs.FS, name string) (spec.DeepGEMMCacheEntry, bool, error) {
	info, err := fs.Stat(fsys, name)
	if err != nil {
		return spec.DeepGEMMCacheEntry{}, false, nil // vanished or dangling: not live, not listed
	}
	switch {
	case info.Mode().IsRegular():
		return spec.DeepGEMMCacheEntry{Name: path.Base(name), Sizes: []int64{info.Size()}}, true, nil
	case !info.IsDir():
		return spec.DeepGEMMCacheEntry{}, false, nil
	}
	e := spec.DeepGEMMCacheEntry{Name: path.Base(name), Dir: true, Sizes: []int64{}}
	err = fs.WalkDir(fsys, name, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			e.Sizes = append(e.Sizes, fi.Size())
		}
		return nil
	})
	return e, true, err
}

// ReadDeepGEMMManifest reads the manifest file at the root of fsys; nil
// when there is none.
func ReadDeepGEMMManifest(fsys fs.FS) (*string, error) {
	b, err := fs.ReadFile(fsys, spec.DeepGEMMManifestFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s := string(b)
	return &s, nil
}
