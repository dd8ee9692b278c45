package importgraph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Package is one package as `go list -json` reports it: only the fields the
// rules and the architecture page read.
type Package struct {
	ImportPath string
	// Name is the package clause's name ("main" for a command).
	Name string
	// Doc is the first sentence of the package comment (go/doc's synopsis).
	Doc string
	// Imports are the non-test imports, sorted.
	Imports []string
	// Deps are every transitive non-test dependency, sorted.
	Deps   []string
	Module *Module
	Error  *PackageError
	// Standard says the package is part of the standard library.
	Standard bool
}

// Module is the module a package belongs to.
type Module struct {
	Path string
	// Main says it is the module go list ran in.
	Main bool
}

// PackageError is why go list could not load a package.
type PackageError struct {
	Err string
}

// Build is one build configuration the graph is loaded for.
type Build struct {
	// Name is how messages and pages name the build: "default", "-tags cuda".
	Name string
	// Args are go list's build flags.
	Args []string
	// Env is added to the environment of go list.
	Env []string
}

// Builds are the configurations every rule holds on: the default build and
// the GPU build (-tags cuda, which needs cgo; go list needs no C compiler
// for it).
func Builds() []Build {
	return []Build{
		{Name: "default"},
		{Name: "-tags cuda", Args: []string{"-tags", "cuda"}, Env: []string{"CGO_ENABLED=1"}},
	}
}

// Graph is the import graph of one build of the module: its packages and
// every package they depend on.
type Graph struct {
	// Build names the configuration ("default" or "-tags cuda").
	Build string
	// Module is the module path.
	Module string
	// Packages are all packages loaded, by import path.
	Packages map[string]*Package
	// Local are the module's own import paths, sorted.
	Local []string
}

// IsLocal reports whether the import path p is a package of the module.
func (g *Graph) IsLocal(p string) bool { return p == g.Module || strings.HasPrefix(p, g.Module+"/") }

// Rel is p relative to the module ("fast/cuda"), or p itself outside it.
func (g *Graph) Rel(p string) string {
	if g.IsLocal(p) {
		return strings.TrimPrefix(strings.TrimPrefix(p, g.Module), "/")
	}
	return p
}

// Abs is the import path of the module-relative path rel.
func (g *Graph) Abs(rel string) string { return g.Module + "/" + rel }

// Chain is a shortest import chain from -> … -> to, module-relative; its
// middle is "?" when to cannot be reached.
func (g *Graph) Chain(from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == to {
			var c []string
			for ; p != ""; p = prev[p] {
				c = append(c, g.Rel(p))
			}
			slices.Reverse(c)
			return c
		}
		if info, ok := g.Packages[p]; ok {
			for _, imp := range info.Imports {
				if _, seen := prev[imp]; !seen {
					prev[imp] = p
					queue = append(queue, imp)
				}
			}
		}
	}
	return []string{g.Rel(from), "?", g.Rel(to)}
}

// LoadAll loads the graph of the module at root for each of Builds, in
// that order.
func LoadAll(root string) ([]*Graph, error) {
	var gs []*Graph
	for _, b := range Builds() {
		g, err := Load(root, b)
		if err != nil {
			return nil, err
		}
		gs = append(gs, g)
	}
	return gs, nil
}

// Load runs `go list -e -deps` over every package of the module at root in
// build b. Packages that do not load are kept, with their Error, so a rule
// check can name them.
func Load(root string, b Build) (*Graph, error) {
	list := append([]string{"list", "-e", "-deps", "-json=ImportPath,Name,Doc,Imports,Deps,Module,Error,Standard"}, b.Args...)
	out, err := Go(root, b.Env, append(list, "./...")...)
	if err != nil {
		return nil, err
	}
	g := &Graph{Build: b.Name, Packages: map[string]*Package{}}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p Package
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list (%s): %w", b.Name, err)
		}
		g.Packages[p.ImportPath] = &p
		if p.Module != nil && p.Module.Main {
			g.Module = p.Module.Path
			g.Local = append(g.Local, p.ImportPath)
		}
	}
	if g.Module == "" {
		return nil, fmt.Errorf("go list (%s) in %s: no package of the main module", b.Name, root)
	}
	slices.Sort(g.Local)
	return g, nil
}

// ModuleRoot is the folder holding the go.mod of the module the current
// directory is in.
func ModuleRoot() (string, error) {
	out, err := Go("", nil, "env", "GOMOD")
	if err != nil {
		return "", err
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("go env GOMOD: not inside a module")
	}
	return filepath.Dir(gomod), nil
}

// goTimeout bounds one go command: go list of the whole module takes
// seconds, so a minute means it hangs.
const goTimeout = time.Minute

// Go runs the go command with args in dir (the current directory when
// empty), env added to the environment, and returns its standard output; a
// failure carries the command and its standard error.
func Go(dir string, env []string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), goTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}
