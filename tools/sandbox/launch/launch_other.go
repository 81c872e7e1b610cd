//go:build !linux

package launch

// Only Linux has a first stage: elsewhere the supervisor applies its
// policy in one stage, and this package only describes the plan.
