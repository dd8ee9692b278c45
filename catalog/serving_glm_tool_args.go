package catalog

import (
	"encoding/json"
	"strings"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// ServingGLMToolArgs registers serving.glm_tool_args (docs/spec/admission-serving.md S2.8).
func ServingGLMToolArgs() *Op[spec.ServingGLMToolArgsInput, spec.ServingGLMToolArgsOutput] {
	tools := json.RawMessage(`[{"type":"function","function":{"name":"run","parameters":{"type":"object","properties":{"code":{"type":"string"},"n":{"type":"integer"}}}}}]`)
	text := "<tool_call>run\n<arg_key>code</arg_key>\n<arg_value>  def f():\n    return 1\n</arg_value>\n<arg_key>n</arg_key>\n<arg_value>3</arg_value>\n</tool_call>"
	return &Op[spec.ServingGLMToolArgsInput, spec.ServingGLMToolArgsOutput]{
		OpName:  "serving.glm_tool_args",
		SpecRef: "admission-serving.md S2.8",
		Summary: "GLM <tool_call> markup to calls, argument values parsed from their exact bytes (whitespace kept)",
		Ref:     ref.ServingGLMToolArgs,
		Fast:    fast.ServingGLMToolArgs,
		// ref splits the tool list one element at a time (a decoder per tool
		// and per schema object), bounded by the request. Measured with the
		// harness's limits on 1 MiB of tools: ref 697 B per request byte
		// (tools {}), 249 ([1,1,…]), 122–139 (the example's tool repeated);
		// fast 6.
		Work:   Cost{PerInputByte: 1024, PerOutputByte: 8, Fixed: 4 << 20},
		Sample: spec.ServingGLMToolArgsInput{Text: text, Tools: tools},
		Shapes: []Shape[spec.ServingGLMToolArgsInput]{
			{Name: "4-calls", Make: func() spec.ServingGLMToolArgsInput {
				return spec.ServingGLMToolArgsInput{Text: "thinking…" + strings.Repeat(text, 4), Tools: tools}
			}},
		},
	}
}
