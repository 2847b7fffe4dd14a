// reference (not runnable here)
