"""Local stand-ins for remote services, for tests that must not touch the network."""
