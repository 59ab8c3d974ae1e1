"""A course's exercises synced from a git repository (issue 34): its settings and webhook
(repository.py), the fetch and the reading of its tree (fetch.py), the sync run by the workers'
supervisor (sync.py)."""
