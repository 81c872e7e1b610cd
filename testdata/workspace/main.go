package main

import (
	"fmt"

	"example.com/shop/calc"
)

func main() {
	fmt.Println(calc.Add(2, 3))
	fmt.Println(calc.Scale([]int{100, 250}, 2))
}
