"""Many machines, one gated run: `run --shard K/N` (shard.py) and `merge` (merge.py).

May import: pipeline and every stage below it.
"""
