// flashattn_v2_02: fp16, head_dim 128, causal.
#include "flashattn.cuh"

int main(int argc, char** argv) {
    fa::Config cfg;
    cfg.dtype = DType::kFloat16;
    cfg.head_dim = 128;
    cfg.causal = true;
    return fa::run(argc, argv, cfg);
}
