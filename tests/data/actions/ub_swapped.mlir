func.func @main() -> i32 {
  %z = arith.constant 0 : i32
  %r = func.call @check(%z) : (i32) -> i32
  return %r : i32
}
func.func @check(%a: i32) -> i32 {
  %big = arith.constant 2147483642 : i32
  %c10 = arith.constant 10 : i32
  %c0 = arith.constant 0 : i32
  %x = arith.maxsi %a, %big : i32
  %y = arith.addi %x, %c10 overflow<nsw> : i32
  %p = arith.cmpi sgt, %y, %c0 : i32
  %r = arith.extui %p : i1 to i32
  return %r : i32
}
