//go:build !amd64

package u32le

// useVector is false: only amd64 has a vector path.
const useVector = false

// vectorTokens is 1 where there is no vector path.
const vectorTokens = 1

// widenVector is never called without a vector path.
func widenVector(dst []int64, src []byte) { widenGeneric(dst, src) }
