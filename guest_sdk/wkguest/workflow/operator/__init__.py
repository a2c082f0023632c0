"""An operator's moves on an instance: terminate, pause, resume, rescue, restart
(moves.py), and their SQL: the pause's row and a journal taken back (rewind.py).
"""
