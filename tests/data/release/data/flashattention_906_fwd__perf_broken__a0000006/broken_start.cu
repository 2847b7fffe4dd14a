// broken start (not runnable here)
