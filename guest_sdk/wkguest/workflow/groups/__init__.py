"""Groups of branches: `wf.all`, `wf.all_settled` and `wf.any` (calls.py).

What each branch is (branches.py), how an open group's branches take their turns in one
run (turns.py), and the branches' rows, `_wk_wf_branch` (rows.py).
"""
