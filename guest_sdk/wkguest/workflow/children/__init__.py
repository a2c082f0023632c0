"""Child workflows: `wf.child`, `wf.spawn` and `wf.join` (calls.py).

The tables of an instance's family, `_wk_wf_parent` and `_wk_wf_child` (registry.py),
and what is owed once it finishes: a child's notice to its parent, a parent's cancels to
its children (notices.py).
"""
