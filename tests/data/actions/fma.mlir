func.func @fmadd(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>) -> tensor<4xf32> {
  %m = arith.mulf %a, %b fastmath<contract> : tensor<4xf32>
  %r = arith.addf %m, %c fastmath<contract> : tensor<4xf32>
  return %r : tensor<4xf32>
}
