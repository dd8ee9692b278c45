package fast

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// ServingGLMToolArgs is serving.glm_tool_args (S2.8): one forward scan of the text
// by offsets, schema types read with gjson, and ref's value contract
// (ref.ParseGLMArg) applied to each value's exact bytes.
func ServingGLMToolArgs(lim spec.Limits, in spec.ServingGLMToolArgsInput) (spec.ServingGLMToolArgsOutput, error) {
	return glmToolArgs(fault.Serving{}, in)
}

// servingGLMToolArgsWithFaults is ServingGLMToolArgs with the historic bugs f selects put
// back (StripGLMArgs), for the bug zoo only: fault.Hooks hands it to
// equiv/mutants (hooks.go). Called with the zero value it is ServingGLMToolArgs.
func servingGLMToolArgsWithFaults(_ spec.Limits, in spec.ServingGLMToolArgsInput, f fault.Serving) (spec.ServingGLMToolArgsOutput, error) {
	return glmToolArgs(f, in)
}

func glmToolArgs(f fault.Serving, in spec.ServingGLMToolArgsInput) (spec.ServingGLMToolArgsOutput, error) {
	if err := ref.CheckGLMTools(in.Tools); err != nil {
		return spec.ServingGLMToolArgsOutput{}, err
	}
	out := spec.ServingGLMToolArgsOutput{Calls: []spec.GLMToolCall{}}
	tools := gjson.ParseBytes(in.Tools)
	text := in.Text
	var normal strings.Builder
	pos := 0
	for {
		open := strings.Index(text[pos:], spec.GLMCallOpen)
		if open < 0 {
			break
		}
		bodyStart := pos + open + len(spec.GLMCallOpen)
		end := strings.Index(text[bodyStart:], spec.GLMCallClose)
		if end < 0 {
			break
		}
		normal.WriteString(text[pos : pos+open])
		out.Calls = append(out.Calls, glmCall(f, text[bodyStart:bodyStart+end], tools))
		pos = bodyStart + end + len(spec.GLMCallClose)
	}
	normal.WriteString(text[pos:])
	out.NormalText = normal.String()
	return out, nil
}

// glmArg is one argument in first-seen order with its last value.
type glmArg struct{ key, val string }

func glmCall(f fault.Serving, body string, tools gjson.Result) spec.GLMToolCall {
	nameEnd := strings.IndexByte(body, '\n')
	if nameEnd < 0 {
		nameEnd = len(body)
	}
	if k := strings.Index(body[:nameEnd], spec.GLMKeyOpen); k >= 0 {
		nameEnd = k
	}
	name := strings.TrimSpace(body[:nameEnd])
	fn := glmFunction(tools, name)
	var args []glmArg
	pos := nameEnd
	for {
		k := strings.Index(body[pos:], spec.GLMKeyOpen)
		if k < 0 {
			break
		}
		keyStart := pos + k + len(spec.GLMKeyOpen)
		kEnd := strings.Index(body[keyStart:], spec.GLMKeyClose)
		if kEnd < 0 {
			break
		}
		afterKey := keyStart + kEnd + len(spec.GLMKeyClose)
		vOpen := afterKey
		for vOpen < len(body) && strings.IndexByte(" \t\n\r\f\v", body[vOpen]) >= 0 {
			vOpen++
		}
		if !strings.HasPrefix(body[vOpen:], spec.GLMValueOpen) {
			pos = afterKey
			continue
		}
		valStart := vOpen + len(spec.GLMValueOpen)
		vEnd := strings.Index(body[valStart:], spec.GLMValueClose)
		if vEnd < 0 {
			break
		}
		key, v := strings.TrimSpace(body[keyStart:keyStart+kEnd]), body[valStart:valStart+vEnd]
		if f.StripGLMArgs {
			v = strings.TrimSpace(v)
		}
		args = setArg(args, key, ref.ParseGLMArg(v, glmType(fn, key)))
		pos = valStart + vEnd + len(spec.GLMValueClose)
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, a := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.Write(appendPyString(nil, a.key, false))
		b.WriteString(": ")
		b.WriteString(a.val)
	}
	b.WriteByte('}')
	return spec.GLMToolCall{Name: name, Arguments: b.String()}
}

func setArg(args []glmArg, key, val string) []glmArg {
	for i := range args {
		if args[i].key == key {
			args[i].val = val
			return args
		}
	}
	return append(args, glmArg{key, val})
}

// lastMember is the last member named key of obj (absent when obj is not an object).
func lastMember(obj gjson.Result, key string) gjson.Result {
	var r gjson.Result
	if obj.IsObject() {
		obj.ForEach(func(k, v gjson.Result) bool {
			if k.Str == key {
				r = v
			}
			return true
		})
	}
	return r
}

// glmFunction is the function object of the last tool named name.
func glmFunction(tools gjson.Result, name string) gjson.Result {
	var fn gjson.Result
	found := false
	if tools.IsArray() {
		tools.ForEach(func(_, t gjson.Result) bool {
			f := lastMember(lastMember(t, "function"), "name")
			if f.Type == gjson.String && f.Str == name {
				fn, found = lastMember(t, "function"), true
			}
			return true
		})
	}
	if !found {
		return gjson.Result{}
	}
	return fn
}

// glmType is key's schema type in fn's parameters ("" when none).
func glmType(fn gjson.Result, key string) string {
	t := lastMember(lastMember(lastMember(lastMember(fn, "parameters"), "properties"), key), "type")
	if t.Type != gjson.String {
		return ""
	}
	return t.Str
}
