//go:build !flemmabench

package cycle

// benchMethods are the methods only a host built for the benchmarks has
// (go build -tags flemmabench: benchrun.go); none in the host users run.
func benchMethods(*Engine) []Method { return nil }
