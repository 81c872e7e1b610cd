import { add, Square } from './math';

export function total(values: number[]): number {
  let sum = 0;
  for (const v of values) sum = add(sum, v);
  return sum;
}

export const area: number = new Square(3).area();
console.log(total([1, 2, 3]), area);
