define i256 @f(i256 %a, i256 %b) {
  %c = icmp ult i256 %a, %b
  %q = select i1 %c, i256 %a, i256 %b
  ret i256 %q
}
