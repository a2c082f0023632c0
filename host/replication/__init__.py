"""Cluster mode's bridge of storage and the cluster: an actor's working copy and its
fenced writes (copy.py), and the copies restored under an epoch (restore.py)."""
