// RUN: attn-opt %s -attn-cpu-distinct-destinations | FileCheck %s

// A fill merged by CSE into the destination of two writers beside it and
// read by a third op, with no writer nested below it: bufferization's
// copies (if any) stay at this level, and nothing changes.
// CHECK-LABEL: func.func @beside
// CHECK-COUNT-1: tensor.empty() : tensor<8xf32>
// CHECK-COUNT-1: linalg.fill
// CHECK-NOT:   linalg.fill
func.func @beside(%a: tensor<8x4xf32>, %b: tensor<8x4xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<8xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %m1 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<8x4xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.maximumf %acc, %x : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %m2 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%b : tensor<8x4xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.maximumf %acc, %x : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %e2 = tensor.empty() : tensor<8xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%init, %m1 : tensor<8xf32>, tensor<8xf32>) outs(%e2 : tensor<8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.subf %x, %y : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %m1, %m2, %s : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// The running max's initial value, updated in place by a guard's branch
// while the other branch yields it: the nested writer keeps it and the
// writer beside the definition gets the clone, so bufferization finds the
// branches' results in one buffer.
// CHECK-LABEL: func.func @guarded
// CHECK:       %[[E1:.*]] = tensor.empty() : tensor<8xf32>
// CHECK:       %[[E2:.*]] = tensor.empty() : tensor<8xf32>
// CHECK:       %[[F2:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E2]] : tensor<8xf32>)
// CHECK:       %[[F1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<8xf32>)
// CHECK:       linalg.generic {{.*}} outs(%[[F2]] : tensor<8xf32>)
// CHECK:       scf.if
// CHECK:         linalg.generic {{.*}} outs(%[[F1]] : tensor<8xf32>)
// CHECK:       } else {
// CHECK:         scf.yield %[[F1]] : tensor<8xf32>
// An empty tensor with one writer is left alone.
// CHECK-LABEL: func.func @single
// CHECK-COUNT-1: tensor.empty
// CHECK-NOT:   tensor.empty
func.func @guarded(%a: tensor<8x4xf32>, %c: i1) -> (tensor<8xf32>, tensor<8xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<8xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<8x4xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.maximumf %acc, %x : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %r = scf.if %c -> (tensor<8xf32>) {
    %n = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%m : tensor<8xf32>) outs(%init : tensor<8xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = arith.maximumf %o, %x : f32
      linalg.yield %y : f32
    } -> tensor<8xf32>
    scf.yield %n : tensor<8xf32>
  } else {
    scf.yield %init : tensor<8xf32>
  }
  return %m, %r : tensor<8xf32>, tensor<8xf32>
}

func.func @single(%a: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%a : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
