package calc

// Add returns the sum of a and b.
func Add(a, b int) int {
	return a + b
}

// Scale multiplies every price by factor.
func Scale(prices []int, factor int) []int {
	out := make([]int, len(prices))
	for i, p := range prices {
		out[i] = p * factor
	}
	return out
}
