"""Context management: token estimates, compaction, trackers (SPEC §8)."""
