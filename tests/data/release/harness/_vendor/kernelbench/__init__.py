"""A minimal stand-in for the release's vendored kernelbench package (test fixture).

It offers the calls the release's commands make: kernel_static_checker.validate_kernel_static,
eval.eval_kernel_against_ref, eval.get_torch_dtype_from_string and utils.set_gpu_arch.
"""
