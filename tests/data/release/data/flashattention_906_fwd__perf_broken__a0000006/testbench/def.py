# problem definition lives in the upstream repository
