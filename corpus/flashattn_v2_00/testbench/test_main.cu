// flashattn_v2_00: bf16, head_dim 128, non-causal.
#include "flashattn.cuh"

int main(int argc, char** argv) {
    fa::Config cfg;
    cfg.dtype = DType::kBFloat16;
    cfg.head_dim = 128;
    cfg.causal = false;
    return fa::run(argc, argv, cfg);
}
