package fast

import (
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// AdmissionScript is admission.script on the fast rounds: the shared
// interpreter (ref.RunAdmissionScript) over AdmissionRound.
func AdmissionScript(lim spec.Limits, in spec.AdmissionScriptInput) (spec.AdmissionScriptOutput, error) {
	return ref.RunAdmissionScript(lim, in, AdmissionRound)
}
