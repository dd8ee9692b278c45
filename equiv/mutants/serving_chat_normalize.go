package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/spec"
)

func chatMutant(id, section, about string, fn func(spec.Limits, spec.ServingChatNormalizeInput) (spec.ServingChatNormalizeOutput, error)) equiv.Killable {
	return &equiv.Mutant[spec.ServingChatNormalizeInput, spec.ServingChatNormalizeOutput]{Spec: equiv.ServingChatNormalize(), ID: id, Section: section, About: about,
		Fn: fn}
}

// ParaDefaultUngated is S2-B1: the Para max_tokens default was hard-coded,
// so every chat request without max_tokens got 32768. A wrapper: an unset
// --para-chat-default-max-tokens reads 32768.
func ParaDefaultUngated() equiv.Killable {
	return chatMutant("s2-b1-para-default-ungated", "admission-serving.md S2.11 S2-B1",
		"max_tokens = 32768 injected with --para-chat-default-max-tokens unset",
		func(lim spec.Limits, in spec.ServingChatNormalizeInput) (spec.ServingChatNormalizeOutput, error) {
			if in.Flags.ParaChatDefaultMaxTokens == nil {
				para := int64(32768)
				in.Flags.ParaChatDefaultMaxTokens = &para // in is a copy
			}
			return fast.ServingChatNormalize(lim, in)
		})
}

// StringImageURLRejected is S2-B3: a string image_url part was a 400.
func StringImageURLRejected() equiv.Killable {
	return chatMutant("s2-b3-string-image-url-rejected", "admission-serving.md S2.11 S2-B3",
		"a string image_url content part is rejected with 400 instead of normalized",
		switched(fault.Installed().ServingChatNormalize, fault.Serving{RejectStringImageURL: true}))
}
