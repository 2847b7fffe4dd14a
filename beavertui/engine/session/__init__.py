"""Sessions: the event union, the protocol a session runs under, the session file and the one reducer over it."""
