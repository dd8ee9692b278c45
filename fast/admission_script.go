package fast

import "github.com/kvtwin/kvtwin/ref"

// AdmissionScript is admission.script on the fast rounds: the shared
// interpreter (ref.RunAdmissionScript) over AdmissionRound.
func AdmissionScript(lim ref.Limits, in ref.AdmissionScriptInput) (ref.AdmissionScriptOutput, error) {
	return ref.RunAdmissionScript(lim, in, AdmissionRound)
}
