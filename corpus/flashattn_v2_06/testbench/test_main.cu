// flashattn_v2_06: fp16, head_dim 64, causal.
#include "flashattn.cuh"

int main(int argc, char** argv) {
    fa::Config cfg;
    cfg.dtype = DType::kFloat16;
    cfg.head_dim = 64;
    cfg.causal = true;
    cfg.long_batch = 4;
    cfg.long_heads = 48;
    cfg.long_seqlen = 16384;
    return fa::run(argc, argv, cfg);
}
