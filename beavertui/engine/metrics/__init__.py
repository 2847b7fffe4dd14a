"""The attempts table and every metric computed from it: rates, bootstrap intervals, swing and Kendall's tau."""
