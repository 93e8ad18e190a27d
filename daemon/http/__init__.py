"""HTTP: the JSON API over published snapshots, its hardened server, health and strict JSON."""
