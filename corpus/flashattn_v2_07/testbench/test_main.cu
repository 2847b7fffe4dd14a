// flashattn_v2_07: bf16, head_dim 128, causal.
#include "flashattn.cuh"

int main(int argc, char** argv) {
    fa::Config cfg;
    cfg.dtype = DType::kBFloat16;
    cfg.head_dim = 128;
    cfg.causal = true;
    cfg.batch = 4;
    cfg.heads = 8;
    return fa::run(argc, argv, cfg);
}
