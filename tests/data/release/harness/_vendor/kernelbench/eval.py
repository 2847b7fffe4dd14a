"""Correctness evaluation of a custom model against the original (fixture version)."""
from dataclasses import dataclass, field

import torch


@dataclass
class KernelExecResult:
    compiled: bool = False
    correctness: bool = False
    metadata: dict = field(default_factory=dict)
    runtime: float = -1.0


def get_torch_dtype_from_string(name):
    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[name]


def _load(src, what):
    scope = {}
    exec(compile(src, what, "exec"), scope)
    return scope


def eval_kernel_against_ref(original_model_src, custom_model_src, verbose=False, measure_performance=False,
                            timing_method="cuda_event", num_correct_trials=1, num_perf_trials=1,
                            backend="cuda", precision=torch.float32):
    ref = _load(original_model_src, "problem.py")
    try:
        custom = _load(custom_model_src, "solution.py")
    except Exception as exc:  # the candidate failed to build or import
        print(f"Failed to compile custom CUDA kernel: Record as compilation failure.\nError: {exc}")
        return KernelExecResult(compiled=False, metadata={"compilation_error": str(exc)})
    if "ModelNew" not in custom:
        return KernelExecResult(compiled=True, metadata={"other_error": "candidate defines no ModelNew"})
    init = ref["get_init_inputs"]()
    model = ref["Model"](*init).cuda()
    new = custom["ModelNew"](*init).cuda()
    for trial in range(num_correct_trials):
        torch.manual_seed(trial)
        inputs = [x.cuda().to(precision) if torch.is_tensor(x) else x for x in ref["get_inputs"]()]
        try:
            want = model(*inputs)
            got = new(*inputs)
            torch.cuda.synchronize()
        except Exception as exc:
            print(f"runtime error: {exc}")
            return KernelExecResult(compiled=True, metadata={"runtime_error": str(exc)})
        if got.shape != want.shape:
            print(f"Output shape mismatch: {tuple(got.shape)} vs {tuple(want.shape)}")
            return KernelExecResult(compiled=True, metadata={"correctness_issue": "shape"})
        if not torch.allclose(got, want, atol=1e-2, rtol=1e-2):
            diff = (got - want).abs().max().item()
            print(f"Output mismatch in trial {trial}: max_difference {diff:.6g}")
            return KernelExecResult(compiled=True, metadata={"max_difference": diff})
    return KernelExecResult(compiled=True, correctness=True, metadata={"trials": num_correct_trials})
