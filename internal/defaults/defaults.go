// Package defaults fills in the zero fields of option structs.
package defaults

// Positive sets *v to def unless *v is positive: options take a zero (or a
// meaningless negative) value to mean "the default".
func Positive[T ~int | ~int64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}
