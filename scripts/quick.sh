#!/bin/sh
# make quick: the edit loop's check, on what changed only. With uncommitted
# changes, "changed" is the work tree (untracked files included) against the
# merge-base of HEAD and $QUICK_BASE (default main); with a clean tree, it is
# HEAD's last commit. It runs gofmt on the changed Go files, then go vet and
# go test -short (no -race; cached results are reused) on the packages that
# hold a changed file (a Go file, or testdata or an embedded file under the
# package). A changed Markdown file or Makefile adds internal/repolint (spec
# references, the recipe's parser) and internal/gen/docs (the generated
# pages). make test is still the gate; this is what to run between edits.
set -eu
GO=${GO:-go}
base=${QUICK_BASE:-main}
cd "$(git rev-parse --show-toplevel)"

if [ -n "$(git status --porcelain)" ]; then
	if ! mb=$(git merge-base HEAD "$base" 2>/dev/null); then
		echo "quick: no merge-base of HEAD and $base; set QUICK_BASE to the branch you started from" >&2
		exit 2
	fi
	what="the work tree against $(git rev-parse --short "$mb") (merge-base with $base)"
	changed=$( { git diff --name-only "$mb"; git ls-files --others --exclude-standard; } | sort -u)
else
	what="HEAD's last commit ($(git rev-parse --short HEAD))"
	changed=$(git diff --name-only HEAD~1 HEAD 2>/dev/null || git show --name-only --format= HEAD)
fi

gofiles=""
pkgs=""
docs=false
for f in $changed; do
	case $f in
	*.md | Makefile) docs=true ;;
	esac
	case $f in
	*.go) [ -f "$f" ] && gofiles="$gofiles $f" ;;
	esac
	# The package a file belongs to: the nearest folder above it, itself
	# included, that holds Go files (testdata and embedded files belong to
	# their package).
	d=$(dirname "$f")
	while [ "$d" != "." ]; do
		if [ -d "$d" ] && ls "$d"/*.go >/dev/null 2>&1; then
			pkgs="$pkgs ./$d/"
			break
		fi
		d=$(dirname "$d")
	done
done
if $docs; then
	pkgs="$pkgs ./internal/repolint/ ./internal/gen/docs/"
fi
pkgs=$(printf '%s\n' $pkgs | sort -u | tr '\n' ' ')
# Only packages the default build has (fast/cuda/cudaguard is -tags cuda
# alone; make test-cuda covers it).
if [ -n "$(echo $pkgs)" ]; then
	pkgs=$($GO list -e -f '{{if or .GoFiles .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' $pkgs | tr '\n' ' ')
fi

echo "quick: $what: $(printf '%s\n' $changed | grep -c .) file(s) changed"
if [ -n "$gofiles" ]; then
	out=$(gofmt -l $gofiles)
	if [ -n "$out" ]; then
		echo "gofmt would change:"
		echo "$out"
		exit 1
	fi
fi
if [ -z "$(echo $pkgs)" ]; then
	echo "quick: no Go package changed"
	exit 0
fi
echo "$GO vet $pkgs"
$GO vet $pkgs
echo "$GO test -short $pkgs"
$GO test -short $pkgs
