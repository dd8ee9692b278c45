package spec

// ErrEstimatorParam: an estimator size (vocab, a byte constant, the
// buffer-size limit) below 1 (A2.7).
var ErrEstimatorParam = NewSentinel("estimator_param", "estimator: size must be >= 1")
