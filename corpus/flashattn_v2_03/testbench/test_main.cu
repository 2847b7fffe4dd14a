// flashattn_v2_03: bf16, head_dim 64, non-causal.
#include "flashattn.cuh"

int main(int argc, char** argv) {
    fa::Config cfg;
    cfg.dtype = DType::kBFloat16;
    cfg.head_dim = 64;
    cfg.causal = false;
    cfg.seqlen = 1000;  // not a multiple of the 64-row tiles
    return fa::run(argc, argv, cfg);
}
