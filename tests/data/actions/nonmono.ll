define i32 @pick(i1 %c) {
entry:
  br i1 %c, label %t, label %e
t:
  br label %m
e:
  br label %m
m:
  %p = phi i32 [ 1, %t ], [ 0, %e ]
  ret i32 %p
}

define i32 @checked_add(i32 %a, i32 %b) {
entry:
  %s = add nsw i32 %a, %b
  %c = icmp sgt i32 %s, %a
  %r = zext i1 %c to i32
  ret i32 %r
}

define i32 @main(i32 %argc) {
entry:
  %a = add i32 %argc, 2147483646
  %r = call i32 @checked_add(i32 %a, i32 1)
  ret i32 %r
}
