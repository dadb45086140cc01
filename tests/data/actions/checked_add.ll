define i32 @checked_add(i32 %a) {
entry:
  %s = add nsw i32 %a, 1
  %c = icmp sgt i32 %s, %a
  %r = zext i1 %c to i32
  ret i32 %r
}

define i32 @main(i32 %argc) {
entry:
  %a = add i32 %argc, 2147483646
  %r = call i32 @checked_add(i32 %a)
  ret i32 %r
}
