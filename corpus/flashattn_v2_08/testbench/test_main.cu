// flashattn_v2_08: bf16, head_dim 64, non-causal.
#include "flashattn.cuh"

int main(int argc, char** argv) {
    fa::Config cfg;
    cfg.dtype = DType::kBFloat16;
    cfg.head_dim = 64;
    cfg.causal = false;
    return fa::run(argc, argv, cfg);
}
