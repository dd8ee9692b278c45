package remote

import (
	"reflect"
	"strings"
	"testing"
)

// TestOpListReadsPartialDeclarations: a listing's items are names or
// objects with a name, whose steps and options members declare part of a
// script op (an empty steps list kept apart from no steps member) and
// whose other members are ignored, as kvtwin serve's listing has them.
func TestOpListReadsPartialDeclarations(t *testing.T) {
	got, err := parseOpList([]byte(`["transfer.group_contiguous",
		{"name":"radix.script","steps":["create","insert","match","evict"],"options":{"hashed_score":false}},
		{"name":"hicache.load_script","steps":[]},
		{"name":"cp.split","spec":"cp.md §1","impls":["ref","fast"]}]`))
	want := []Listed{
		{Name: "transfer.group_contiguous"},
		{Name: "radix.script", Steps: []string{"create", "insert", "match", "evict"}, Options: map[string]bool{"hashed_score": false}},
		{Name: "hicache.load_script", Steps: []string{}},
		{Name: "cp.split"},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("parseOpList = %+v, %v; want %+v", got, err, want)
	}
}

// TestOpListRefusesMalformedDeclarations: steps that are not a list of
// strings and options that are not an object of booleans are refused,
// naming the item, the op and the member, never read as "every kind".
func TestOpListRefusesMalformedDeclarations(t *testing.T) {
	for _, c := range []struct{ list, says string }{
		{`[{"name":"radix.script","steps":"create"}]`, `op list item 0: radix.script: steps "create": want an array of step-kind strings`},
		{`[{"name":"radix.script","steps":[1,2]}]`, `op list item 0: radix.script: steps [1,2]: want an array of step-kind strings`},
		{`["x",{"name":"radix.script","steps":null}]`, `op list item 1: radix.script: steps null: want an array`},
		{`[{"name":"radix.script","options":{"hashed_score":"no"}}]`, `op list item 0: radix.script: options {"hashed_score":"no"}: want an object of booleans`},
		{`[{"name":"radix.script","options":[]}]`, `options []: want an object of booleans`},
		{`[{"steps":["create"]}]`, `op list item 0: neither a name nor an object with a name`},
	} {
		if _, err := parseOpList([]byte(c.list)); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: error %v, want one saying %q", c.list, err, c.says)
		}
	}
}
