"""Candidate code as text: taken out of a reply, hashed without what cannot change behaviour, its static features."""
