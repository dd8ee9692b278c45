package spec

// ErrUnsupportedDims: an FP8 op got rows of a width other than the one its
// format fixes (docs/spec/cp-layout.md §0.5, §7.1).
var ErrUnsupportedDims = NewSentinel("unsupported_dims", "row width is not the FP8 format's")
