package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/spec"
)

// GLMArgsStripped is S2-B2: GLM argument values were stripped before
// parsing, losing code's indentation and trailing newline.
func GLMArgsStripped() equiv.Killable {
	return &equiv.Mutant[spec.ServingGLMToolArgsInput, spec.ServingGLMToolArgsOutput]{Spec: equiv.ServingGLMToolArgs(),
		ID: "s2-b2-glm-args-stripped", Section: "admission-serving.md S2.11 S2-B2",
		About: "GLM argument values stripped: \"  def f():\\n    return 1\\n\" loses its whitespace",
		Fn:    switched(fault.Installed().ServingGLMToolArgs, fault.Serving{StripGLMArgs: true})}
}
