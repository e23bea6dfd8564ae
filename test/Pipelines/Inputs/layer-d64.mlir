func.func @attn_kernel(%x: memref<1x64x128xf16>, %w_qkv: memref<256x128xf16>, %w_o: memref<128x128xf16>, %b_qkv: memref<256xf16>, %b_o: memref<128xf16>, %y: memref<1x64x128xf16>) attributes {llvm.emit_c_interface} {
  %x_t = bufferization.to_tensor %x restrict : memref<1x64x128xf16> to tensor<1x64x128xf16>
  %w_qkv_t = bufferization.to_tensor %w_qkv restrict : memref<256x128xf16> to tensor<256x128xf16>
  %w_o_t = bufferization.to_tensor %w_o restrict : memref<128x128xf16> to tensor<128x128xf16>
  %b_qkv_t = bufferization.to_tensor %b_qkv restrict : memref<256xf16> to tensor<256xf16>
  %b_o_t = bufferization.to_tensor %b_o restrict : memref<128xf16> to tensor<128xf16>
  %y_t = attn.mha %x_t wqkv(%w_qkv_t : tensor<256x128xf16>) wo(%w_o_t : tensor<128x128xf16>) bqkv(%b_qkv_t : tensor<256xf16>) bo(%b_o_t : tensor<128xf16>) heads(2, 1) head_dim(64) : tensor<1x64x128xf16> -> tensor<1x64x128xf16>
  bufferization.materialize_in_destination %y_t in restrict writable %y : (tensor<1x64x128xf16>, memref<1x64x128xf16>) -> ()
  return
}
