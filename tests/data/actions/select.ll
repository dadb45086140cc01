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
