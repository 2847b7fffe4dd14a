// Reference oracle for this CUDABench-derived task is test/compare_output.py.
