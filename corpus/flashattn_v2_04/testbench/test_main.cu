// flashattn_v2_04: fp16, head_dim 64, causal.
#include "flashattn.cuh"

int main(int argc, char** argv) {
    fa::Config cfg;
    cfg.dtype = DType::kFloat16;
    cfg.head_dim = 64;
    cfg.causal = true;
    return fa::run(argc, argv, cfg);
}
