"""Compensation: a step's `compensate=`, run newest first when the workflow fails
(compensations.py), and a cancel with compensation, with its mark `_wk_wf_saga`
(cancelling.py).
"""
