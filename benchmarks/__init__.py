"""The benchmark of rollout-ledger against its peers and the floor (``make bench``)."""
