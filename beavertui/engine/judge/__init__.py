"""Judging an attempt from what it left behind: the eight categories, the classifier, sanitizer records, anti-cheat flags."""
