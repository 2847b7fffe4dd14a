// flashattn_v2_05: fp16, head_dim 128, non-causal.
#include "flashattn.cuh"

int main(int argc, char** argv) {
    fa::Config cfg;
    cfg.dtype = DType::kFloat16;
    cfg.head_dim = 128;
    cfg.causal = false;
    return fa::run(argc, argv, cfg);
}
