package lazy

import "testing"

func TestValueIsBuiltOnceOnFirstGet(t *testing.T) {
	builds := 0
	v := Value[int]{Build: func() int { builds++; return 42 }}
	if builds != 0 {
		t.Fatal("built before the first Get")
	}
	for range 3 {
		if got := v.Get(); got != 42 {
			t.Fatalf("Get = %d, want 42", got)
		}
	}
	if builds != 1 {
		t.Fatalf("built %d times, want 1", builds)
	}
}

func TestRegexpCompilesOnFirstGet(t *testing.T) {
	r := Regexp{Expr: `^a+$`}
	if r.re != nil {
		t.Fatal("compiled before the first Get")
	}
	if !r.Get().MatchString("aaa") || r.Get().MatchString("b") {
		t.Fatal("the expression does not match as written")
	}
}
